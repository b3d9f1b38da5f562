package cas

import (
	"bytes"
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"testing"

	chunkers "github.com/PlakarKorp/go-cdc-chunkers"

	"github.com/agentnas/nas/chunk"
	"github.com/agentnas/nas/kv"
)

// Microbenchmarks of the chunk store's hot paths, comparable with
// benchstat:
//
//	go test -run '^$' -bench . -count 10 ./cas > new.txt
//	benchstat old.txt new.txt

func benchBytes(seed uint64, n int) []byte {
	b := make([]byte, n)
	_, _ = rand.NewChaCha8([32]byte{byte(seed)}).Read(b)
	return b
}

// BenchmarkChunker splits 64 MiB with the store's content-defined chunking
// parameters and nothing else (no hashing, no copying out), in read-ahead
// windows of two, three and four times ChunkMax (the smaller the window,
// the more bytes the chunker moves when it runs out). It reports the
// average chunk and the average buffer the ingest hands it over in
// (getChunkBuf's size class).
func BenchmarkChunker(b *testing.B) {
	data := benchBytes(1, 64<<20)
	for _, w := range []int{2, 3, 4} {
		b.Run(fmt.Sprintf("window=%dx", w), func(b *testing.B) {
			scan := make([]byte, w*ChunkMax)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			chunks, bufs := 0, 0
			for b.Loop() {
				n, m := chunkAll(b, data, scan)
				chunks, bufs = chunks+n, bufs+m
			}
			b.ReportMetric(float64(len(data))/(float64(chunks)/float64(b.N))/(1<<10), "KiB/chunk")
			b.ReportMetric(float64(bufs)/float64(chunks)/(1<<20), "MiB/buffer")
		})
	}
}

// chunkAll splits data in window scan and returns the number of chunks
// and the bytes of the size-classed buffers they would be handed over in.
func chunkAll(b *testing.B, data, scan []byte) (chunks, bufs int) {
	ch, err := chunkers.NewChunkerBuffer(cdcAlgo, bytes.NewReader(data), &chunkers.ChunkerOpts{
		MinSize: ChunkMin, NormalSize: ChunkNormal, MaxSize: ChunkMax}, scan)
	if err != nil {
		b.Fatal(err)
	}
	for {
		c, err := ch.Next()
		if len(c) > 0 {
			chunks++
			bufs += (chunkClass(len(c)) + 1) << 20
		}
		if errors.Is(err, io.EOF) {
			return chunks, bufs
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSum hashes one chunk with BLAKE3 (the chunk name).
func BenchmarkSum(b *testing.B) {
	for _, n := range []int{4 << 10, 64 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("size=%d", n), func(b *testing.B) {
			data := benchBytes(2, n)
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				_ = chunk.Sum(data)
			}
		})
	}
}

func benchStore(b *testing.B) (*Store, kv.DB) { return testStore(b, Options{}) }

// BenchmarkIngest chunks, hashes and stores 16 MiB: new data (written to a
// segment in the page cache; Sync is left out, so the disk is not
// measured), and data the store already holds (hashing and index lookups
// only).
func BenchmarkIngest(b *testing.B) {
	ctx := context.Background()
	for _, dup := range []bool{false, true} {
		name := "new"
		if dup {
			name = "duplicate"
		}
		b.Run(name, func(b *testing.B) {
			s, db := benchStore(b)
			data := benchBytes(3, 16<<20)
			if dup {
				u := s.NewUpload()
				if _, _, err := u.Ingest(ctx, bytes.NewReader(data)); err != nil {
					b.Fatal(err)
				}
				if err := u.Sync(ctx); err != nil {
					b.Fatal(err)
				}
				if err := db.Update(ctx, u.Record); err != nil {
					b.Fatal(err)
				}
				u.Close()
			}
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if !dup {
					// New content every time: change a byte in every 64 KiB.
					for off := 0; off < len(data); off += 64 << 10 {
						data[off] = byte(i)
						data[off+1] = byte(i >> 8)
					}
					i++
				}
				u := s.NewUpload()
				if _, _, err := u.Ingest(ctx, bytes.NewReader(data)); err != nil {
					b.Fatal(err)
				}
				u.Close() // unrecorded: the segment is removed again
			}
		})
	}
}

// BenchmarkRead reads a stored 4 MiB chunk whole (verifying its hash) and
// a 64 KiB range of it (no verification), from the page cache.
func BenchmarkRead(b *testing.B) {
	ctx := context.Background()
	s, db := benchStore(b)
	u := s.NewUpload()
	data := benchBytes(4, ChunkMax)
	ref, err := u.Put(ctx, data)
	if err != nil {
		b.Fatal(err)
	}
	finishUpload(b, db, u)
	for _, tc := range []struct {
		name   string
		off, n int64
	}{{"whole", 0, int64(ref.Size)}, {"range-64KiB", 1 << 20, 64 << 10}} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(tc.n)
			b.ReportAllocs()
			for b.Loop() {
				if err := s.Read(ctx, io.Discard, ref.Hash, tc.off, tc.n); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkIngestMD5 is BenchmarkIngest/new with the whole-body MD5 a
// single PUT computes for its ETag, fed as the S3 layer feeds it (through
// IngestTee, beside chunking; with an io.TeeReader, in series with it, it
// ran at 390 MB/s against 900 for BenchmarkIngest/new).
func BenchmarkIngestMD5(b *testing.B) {
	ctx := context.Background()
	s, _ := benchStore(b)
	data := benchBytes(3, 16<<20)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		for off := 0; off < len(data); off += 64 << 10 {
			data[off] = byte(i)
			data[off+1] = byte(i >> 8)
		}
		i++
		u := s.NewUpload()
		h := md5.New()
		if _, _, err := u.IngestTee(ctx, bytes.NewReader(data), h); err != nil {
			b.Fatal(err)
		}
		_ = h.Sum(nil)
		u.Close()
	}
}

// BenchmarkReadRefs reads a stored 64 MiB object (about 64 chunks) whole
// into a loopback TCP connection that another goroutine drains, as a GET
// does: chunk by chunk with Read ("serial", hashing in line with the
// writes) and with ReadRefs ("pipelined", the next chunk read and verified
// on a second goroutine), from the page cache.
func BenchmarkReadRefs(b *testing.B) {
	ctx := context.Background()
	s, db := benchStore(b)
	data := benchBytes(5, 64<<20)
	u := s.NewUpload()
	refs, _, err := u.Ingest(ctx, bytes.NewReader(data))
	if err != nil {
		b.Fatal(err)
	}
	finishUpload(b, db, u)
	conn := loopback(b)
	for _, tc := range []struct {
		name string
		read func() error
	}{
		{"serial", func() error {
			for _, r := range refs {
				if err := s.Read(ctx, conn, r.Hash, 0, int64(r.Size)); err != nil {
					return err
				}
			}
			return nil
		}},
		{"pipelined", func() error { return s.ReadRefs(ctx, conn, refs, 0, int64(len(data))) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if err := tc.read(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// loopback returns the writing end of a TCP connection on 127.0.0.1 whose
// other end a goroutine reads to io.Discard.
func loopback(b *testing.B) net.Conn {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 256<<10)
		_, _ = io.CopyBuffer(io.Discard, onlyReader{c}, buf)
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close(); <-done })
	return conn
}

// onlyReader hides a WriterTo so io.CopyBuffer reads as a client does.
type onlyReader struct{ io.Reader }

// finishUpload makes u's chunks durable, records them and closes u.
func finishUpload(b *testing.B, db kv.DB, u *Upload) {
	b.Helper()
	ctx := context.Background()
	if err := u.Sync(ctx); err != nil {
		b.Fatal(err)
	}
	if err := db.Update(ctx, u.Record); err != nil {
		b.Fatal(err)
	}
	u.Close()
}
