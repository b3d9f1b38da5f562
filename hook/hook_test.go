package hook_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/agentnas/nas/hook"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/record"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// receiver is a webhook endpoint that checks signatures, fails its first
// fail answers with 500 and keeps what it accepted.
type receiver struct {
	mu       sync.Mutex
	secret   string
	fail     int
	got      []hook.Payload
	bad      int
	attempts map[string]int
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if err := hook.Verify(rc.secret, r.Header.Get(hook.SignatureHeader), body, time.Now(), 5*time.Minute); err != nil {
		rc.bad++
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	var p hook.Payload
	if err := json.Unmarshal(body, &p); err != nil || r.Header.Get("x-nas-delivery") != p.ID || r.Header.Get("x-nas-event") != p.Event {
		rc.bad++
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	rc.attempts[p.ID]++
	if rc.fail > 0 {
		rc.fail--
		http.Error(w, "not now", http.StatusInternalServerError)
		return
	}
	rc.got = append(rc.got, p)
}

func (rc *receiver) payloads() []hook.Payload {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]hook.Payload(nil), rc.got...)
}

func open(t *testing.T) (kv.DB, *record.Recorder) {
	db, err := kv.OpenBadger(t.TempDir(), kv.BadgerOptions{})
	must(t, err)
	t.Cleanup(func() { db.Close() })
	return db, record.New(db, record.Options{})
}

// TestDeliveries: a hook gets its repository's events of its kinds, in
// order, signed; a failing first delivery is retried (and logged) before
// anything later is sent; events before the hook, of other kinds or other
// repositories are not sent; a removed hook gets nothing more.
func TestDeliveries(t *testing.T) {
	ctx := context.Background()
	db, rec := open(t)
	_, err := rec.Append(ctx, record.Event{Kind: record.KindCommit, Repo: "data", Branch: "main", Subject: record.Subject{Commit: "before"}})
	must(t, err)
	st := hook.NewStore(db, rec)
	rc := &receiver{fail: 1, attempts: map[string]int{}}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	h, err := st.Add(ctx, "data", srv.URL+"/hook", []string{"merge", "commit", "commit"})
	must(t, err)
	rc.mu.Lock()
	rc.secret = h.Secret
	rc.mu.Unlock()
	if len(h.Events) != 2 || len(h.Secret) != 64 {
		t.Fatalf("hook: %+v", h)
	}
	for _, e := range []record.Event{
		{Kind: record.KindCommit, Repo: "data", Branch: "run", Subject: record.Subject{Commit: "c1"}},
		{Kind: record.KindLeaseIssued, Repo: "data"},
		{Kind: record.KindCommit, Repo: "other", Branch: "run", Subject: record.Subject{Commit: "elsewhere"}},
		{Kind: record.KindCommit, Repo: "data", Branch: "run", Subject: record.Subject{Commit: "c2"}},
		{Kind: record.KindMerge, Repo: "data", Branch: "main", Subject: record.Subject{Commit: "m1"}},
	} {
		_, err := rec.Append(ctx, e)
		must(t, err)
	}
	stop := runUntilEnd(t, hook.NewDispatcher(st, hook.Options{Poll: 5 * time.Millisecond, Backoff: 20 * time.Millisecond}))
	deadline := time.Now().Add(10 * time.Second)
	for len(rc.payloads()) < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	got := rc.payloads()
	var seen []string
	for _, p := range got {
		seen = append(seen, p.Event+" "+p.Subject.Commit)
	}
	if len(got) != 3 || seen[0] != "commit c1" || seen[1] != "commit c2" || seen[2] != "merge m1" || got[0].Seq >= got[1].Seq {
		t.Fatalf("delivered %v", seen)
	}
	rc.mu.Lock()
	if rc.attempts[got[0].ID] != 2 || rc.bad != 0 {
		t.Errorf("attempts %v, bad %d", rc.attempts, rc.bad)
	}
	rc.mu.Unlock()
	// The last attempt is logged just after its answer: wait for it.
	var log []hook.Delivery
	for time.Now().Before(deadline) {
		log, err = st.Deliveries(ctx, "data", h.ID)
		must(t, err)
		if len(log) >= 4 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(log) != 4 || log[len(log)-1].Status != 500 || log[len(log)-1].Attempt != 1 || log[len(log)-2].Attempt != 2 || log[0].Status != 200 {
		t.Errorf("delivery log: %+v", log)
	}

	must(t, st.Remove(ctx, "data", h.ID))
	_, err = rec.Append(ctx, record.Event{Kind: record.KindCommit, Repo: "data", Subject: record.Subject{Commit: "after"}})
	must(t, err)
	time.Sleep(100 * time.Millisecond)
	stop()
	if n := len(rc.payloads()); n != 3 {
		t.Errorf("a removed hook got %d deliveries", n)
	}
	if _, err := st.Deliveries(ctx, "data", h.ID); !errors.Is(err, hook.ErrNotFound) {
		t.Errorf("deliveries of a removed hook: %v", err)
	}
}

func TestAddRefuses(t *testing.T) {
	ctx := context.Background()
	db, rec := open(t)
	st := hook.NewStore(db, rec)
	for _, c := range []struct {
		url    string
		events []string
	}{
		{"ftp://example.org/x", []string{"commit"}},
		{"https://user:pw@example.org/x", []string{"commit"}},
		{"https:///x", []string{"commit"}},
		{"https://example.org/x", nil},
		{"https://example.org/x", []string{"commit", "object.read"}},
	} {
		if _, err := st.Add(ctx, "data", c.url, c.events); !errors.Is(err, hook.ErrInvalid) {
			t.Errorf("Add(%q, %v): %v", c.url, c.events, err)
		}
	}
	for range hook.MaxHooks {
		_, err := st.Add(ctx, "data", "https://example.org/x", []string{"commit"})
		must(t, err)
	}
	if _, err := st.Add(ctx, "data", "https://example.org/x", []string{"commit"}); !errors.Is(err, hook.ErrInvalid) {
		t.Errorf("hook past the limit: %v", err)
	}
}

func TestVerify(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"event":"commit"}`)
	sig := hook.Sign("s3cret", now, body)
	if err := hook.Verify("s3cret", sig, body, now.Add(time.Minute), 5*time.Minute); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"other secret": hook.Verify("other", sig, body, now, 5*time.Minute),
		"other body":   hook.Verify("s3cret", sig, []byte(`{"event":"merge"}`), now, 5*time.Minute),
		"replayed":     hook.Verify("s3cret", sig, body, now.Add(time.Hour), 5*time.Minute),
		"malformed":    hook.Verify("s3cret", "v1=00", body, now, 5*time.Minute),
	} {
		if !errors.Is(err, hook.ErrSignature) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func FuzzVerify(f *testing.F) {
	f.Add("t=1800000000,v1=abcd", []byte("{}"))
	f.Add("t=-1,v1=", []byte(""))
	f.Add("v1=1,t=99999999999999999999", []byte("x"))
	f.Fuzz(func(t *testing.T, header string, body []byte) {
		now := time.Unix(1_800_000_000, 0)
		if hook.Verify("k", header, body, now, time.Minute) == nil && header != hook.Sign("k", now, body) {
			// Only a signature made with the key verifies; any other
			// header that passes must at least carry the right MAC.
			if hook.Verify("other key", header, body, now, time.Minute) == nil {
				t.Fatalf("%q verifies under two keys", header)
			}
		}
	})
}

// TestObjectEventPages: a commit's changes go a page at a time, in key
// order; a page that failed is sent again (with the same delivery ID)
// and then the rest, each record once; keys are URL-encoded as S3's.
func TestObjectEventPages(t *testing.T) {
	ctx := context.Background()
	db, rec := open(t)
	st := hook.NewStore(db, rec)
	var changes []hook.ObjectChange
	for i := range 250 {
		changes = append(changes, hook.ObjectChange{Key: fmt.Sprintf("d/k %03d", i), Removed: i%50 == 0, Size: int64(i)})
	}
	list := func(_ context.Context, repo, commit, after string, fn func(hook.ObjectChange) error) error {
		if commit != "c1" {
			return hook.ErrNotYet
		}
		for _, c := range changes {
			if c.Key > after {
				if err := fn(c); err != nil {
					return err
				}
			}
		}
		return nil
	}
	var mu sync.Mutex
	var got []hook.S3Record
	ids := map[string]int{}
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		ids[r.Header.Get("x-nas-delivery")]++
		if calls == 2 { // the second page fails once
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		var ev hook.S3Event
		must(t, json.NewDecoder(r.Body).Decode(&ev))
		got = append(got, ev.Records...)
	}))
	defer srv.Close()
	h, err := st.Add(ctx, "data", srv.URL, []string{hook.EventObjectCreated, hook.EventObjectRemoved})
	must(t, err)
	_, err = rec.Append(ctx, record.Event{Kind: record.KindCommit, Repo: "data", Branch: "run", Subject: record.Subject{Commit: "c1"}})
	must(t, err)
	runUntilEnd(t, hook.NewDispatcher(st, hook.Options{Poll: 5 * time.Millisecond, Backoff: 10 * time.Millisecond, Changes: list, Region: "eu-1"}))
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n >= 250 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 250 || calls != 4 {
		t.Fatalf("%d records in %d calls", len(got), calls)
	}
	for i, r := range got {
		wantName := "ObjectCreated:Put"
		if i%50 == 0 {
			wantName = "ObjectRemoved:Delete"
		}
		if r.S3.Object.Key != fmt.Sprintf("d/k+%03d", i) || r.EventName != wantName || r.NAS.Commit != "c1" || r.NAS.Branch != "run" ||
			r.AWSRegion != "eu-1" || r.S3.ConfigurationID != h.ID {
			t.Fatalf("record %d: %+v", i, r)
		}
	}
	retried := 0
	for _, n := range ids {
		if n == 2 {
			retried++
		}
	}
	if len(ids) != 3 || retried != 1 {
		t.Errorf("delivery IDs %v", ids)
	}
}

// TestSlowReceiverAlone: a receiver that does not answer holds back only
// its own hook.
func TestSlowReceiverAlone(t *testing.T) {
	ctx := context.Background()
	db, rec := open(t)
	st := hook.NewStore(db, rec)
	block := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-block }))
	defer slow.Close()
	defer close(block)
	got := make(chan struct{}, 1)
	fast := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case got <- struct{}{}:
		default:
		}
	}))
	defer fast.Close()
	_, err := st.Add(ctx, "data", slow.URL, []string{"commit"})
	must(t, err)
	_, err = st.Add(ctx, "data", fast.URL, []string{"commit"})
	must(t, err)
	_, err = rec.Append(ctx, record.Event{Kind: record.KindCommit, Repo: "data", Subject: record.Subject{Commit: "c"}})
	must(t, err)
	runUntilEnd(t, hook.NewDispatcher(st, hook.Options{Poll: 5 * time.Millisecond, Timeout: time.Minute}))
	select {
	case <-got:
	case <-time.After(20 * time.Second):
		t.Fatal("the fast receiver waited for the slow one")
	}
}

// runUntilEnd runs d until the test ends, or until the stop it returns is
// called, and waits for it to stop before the store it reads closes (a
// round after that panics in Badger), a failing test included.
func runUntilEnd(t *testing.T, d *hook.Dispatcher) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.Run(ctx)
	}()
	stop = func() {
		cancel()
		<-done
	}
	t.Cleanup(stop)
	return stop
}
