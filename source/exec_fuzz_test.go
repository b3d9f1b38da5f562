package source

import (
	"context"
	"errors"
	"io"
	"os"
	"testing"
	"time"
	"unicode/utf8"
)

// pipeProc is a proc without a program: what the fuzzer writes to out is
// what the "adapter" answers.
func pipeProc(t *testing.T, answer []byte) *proc {
	t.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() { io.Copy(io.Discard, inR); inR.Close() }()
	go func() { outW.Write(answer); outW.Close() }()
	p := &proc{stdin: inW, stdout: outR, exited: make(chan struct{})}
	close(p.exited)
	p.out = newProcReader(outR)
	return p
}

// FuzzExecAnswers feeds arbitrary adapter output to a listing, a stat
// and a read: each must end in an error of this package or in objects
// that keep the rules (keys in order and valid, sizes within 5 TiB), and
// a read never returns more bytes than asked.
func FuzzExecAnswers(f *testing.F) {
	f.Add([]byte(`{"objects":[{"key":"a","size":1,"version":"v"},{"key":"b","size":2,"version":"w","sha256":"` +
		"00000000000000000000000000000000000000000000000000000000000000ff" + `"}],"more":false}` + "\n"))
	f.Add([]byte(`{"objects":[{"key":"b","size":1,"version":"v"},{"key":"a","size":1,"version":"v"}]}` + "\n"))
	f.Add([]byte(`{"objects":[],"more":true}` + "\n"))
	f.Add([]byte(`{"object":{"key":"k","size":-1,"version":"v"}}` + "\n"))
	f.Add([]byte(`{"length":3,"version":"v"}` + "\nabc"))
	f.Add([]byte(`{"length":4,"version":"v"}` + "\nabcd"))
	f.Add([]byte(`{"error":{"code":"changed","message":"x"}}` + "\n"))
	f.Add([]byte("not json\n"))
	f.Fuzz(func(t *testing.T, answer []byte) {
		ctx := context.Background()
		e, err := OpenExec(ExecConfig{Path: "/fuzz", Timeout: time.Second, Procs: 1})
		if err != nil {
			t.Fatal(err)
		}
		// The fuzzed proc holds the only slot; a second one would start
		// the missing program /fuzz, which fails as unavailable.
		serve := func() { <-e.slots; e.idle <- pipeProc(t, answer) }
		check := func(err error) {
			if err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnavailable) && !errors.Is(err, ErrChanged) {
				t.Fatalf("error outside the categories: %v", err)
			}
		}
		serve()
		prev := ""
		err = e.List(ctx, "", func(o Object) error {
			if o.Key <= prev || !utf8.ValidString(o.Key) || o.Size < 0 || o.Size > 5<<40 || o.VersionID == "" {
				t.Fatalf("accepted %+v after %q", o, prev)
			}
			prev = o.Key
			return nil
		})
		check(err)
		drain(e)
		serve()
		_, err = e.Stat(ctx, "k")
		check(err)
		drain(e)
		serve()
		rc, err := e.ReadRange(ctx, Pin{Key: "k", Size: 3, ETag: "e", VersionID: "v"}, 0, 3)
		check(err)
		if err == nil {
			b, err := io.ReadAll(io.LimitReader(rc, 10))
			check(err)
			if len(b) > 3 {
				t.Fatalf("read %d bytes of 3", len(b))
			}
			rc.Close()
		}
		drain(e)
	})
}

// drain kills what the fuzzed procs left idle, freeing their slots.
func drain(e *Exec) {
	for {
		select {
		case p := <-e.idle:
			p.kill()
			e.slots <- struct{}{}
		default:
			return
		}
	}
}
