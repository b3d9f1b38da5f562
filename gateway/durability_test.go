package gateway_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/gateway"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/kv/kvtest"
)

// trace is an ordered log of sync, commit and acknowledgement events.
type trace struct {
	mu     sync.Mutex // guards the fields below
	seq    int
	synced map[string]int // path -> sequence of its first fsync
	chunk  map[string]int // segment path -> first commit of a record naming it
	acks   map[string]int // key -> sequence at which the client got 200
	staged map[string]int // key -> sequence of the commit that staged it
}

func (t *trace) next() int { t.seq++; return t.seq }

// TestDurabilityOrder traces the fsyncs of the chunk store, the kv commits
// and the clients' acknowledgements while objects large and small are
// uploaded concurrently, and checks DESIGN's order: a segment file and its
// directory are fsynced before any committed index record names the
// segment, and an entry is committed (durably: the kv runs with synchronous
// writes) before the client gets 200.
func TestDurabilityOrder(t *testing.T) {
	tr := &trace{synced: map[string]int{}, chunk: map[string]int{}, acks: map[string]int{}, staged: map[string]int{}}
	var g *gateway.Gateway
	var err error
	g, err = gateway.Open(gateway.Config{
		DataDir: t.TempDir(),
		Owner:   auth.Owner{AccessKey: crashAK, SecretKey: crashSK},
		OnSync: func(path string) {
			tr.mu.Lock()
			defer tr.mu.Unlock()
			if _, ok := tr.synced[path]; !ok {
				tr.synced[path] = tr.next()
			}
		},
		WrapDB: func(db kv.DB) kv.DB {
			return kvtest.Observe(db, func(writes []kvtest.Write) {
				tr.mu.Lock()
				defer tr.mu.Unlock()
				seq := tr.next()
				for _, w := range writes {
					if g == nil {
						break // still opening
					}
					if p, ok := g.Chunks.SegmentOf(w.Key, w.Value); ok {
						if _, seen := tr.chunk[p]; !seen {
							tr.chunk[p] = seq
						}
					}
					// S/<repo 8><branch 8><gen 8><key>
					if k := string(w.Key); strings.HasPrefix(k, "S/") && len(k) > 26 {
						tr.staged[k[26:]] = seq
					}
				}
			})
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan net.Addr, 1)
	go gateway.Serve(ctx, g.Handler(), gateway.ServeOptions{Addr: "127.0.0.1:0", Ready: func(a net.Addr) { ready <- a }}, discard())
	addr := <-ready
	cl := s3.New(s3.Options{BaseEndpoint: aws.String("http://" + addr.String()), Region: "us-east-1", UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(crashAK, crashSK, "")})
	if _, err := cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("dur")}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 8; i++ {
				n := w*8 + i
				key := fmt.Sprintf("obj-%03d", n)
				_, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("dur"), Key: aws.String(key), Body: bytes.NewReader(payload(n))})
				if err != nil {
					t.Error(err)
					return
				}
				tr.mu.Lock()
				tr.acks[key] = tr.next()
				tr.mu.Unlock()
			}
		}()
	}
	wg.Wait()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.chunk) == 0 {
		t.Fatal("no segment chunks were written; the test exercises nothing")
	}
	for seg, committed := range tr.chunk {
		fsynced, ok := tr.synced[seg]
		if !ok || fsynced > committed {
			t.Errorf("segment %s: index committed at %d before the file was fsynced (%v at %d)", seg, committed, ok, fsynced)
		}
		dir, ok := tr.synced[filepath.Dir(seg)]
		if !ok || dir > committed {
			t.Errorf("segment %s: index committed at %d before its directory was fsynced", seg, committed)
		}
	}
	for key, acked := range tr.acks {
		staged, ok := tr.staged[key]
		if !ok || staged > acked {
			t.Errorf("%s acknowledged at %d before its entry was committed (%v at %d)", key, acked, ok, staged)
		}
	}
}
