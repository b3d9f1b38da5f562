package s3api

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentnas/nas/cas"
)

func TestAdmissionQueuesPastTheCeiling(t *testing.T) {
	a := newAdmission(2)
	ctx := context.Background()
	var releases []func()
	for range 2 {
		r, err := a.acquire(ctx, cas.ChunkMin+1)
		if err != nil {
			t.Fatal(err)
		}
		releases = append(releases, r)
	}
	got := make(chan func(), 1)
	go func() {
		r, err := a.acquire(ctx, -1) // unknown size counts as large
		if err != nil {
			t.Error(err)
		}
		got <- r
	}()
	select {
	case <-got:
		t.Fatal("a third large body was admitted past a ceiling of 2")
	case <-time.After(50 * time.Millisecond):
	}
	releases[0]()
	select {
	case r := <-got:
		r()
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting body was not admitted after a release")
	}
	releases[1]()
}

func TestAdmissionSmallBodiesPass(t *testing.T) {
	a := newAdmission(1)
	r, err := a.acquire(context.Background(), 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	defer r()
	for _, size := range []int64{0, 4 << 10, cas.ChunkMin} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		small, err := a.acquire(ctx, size)
		cancel()
		if err != nil {
			t.Fatalf("body of %d bytes waited behind the ceiling: %v", size, err)
		}
		small()
	}
}

func TestAdmissionCancelledWhileWaiting(t *testing.T) {
	a := newAdmission(1)
	r, err := a.acquire(context.Background(), -1)
	if err != nil {
		t.Fatal(err)
	}
	defer r()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := a.acquire(ctx, -1)
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("acquire after cancel: %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a cancelled request kept waiting for admission")
	}
	if len(a.slots) != 1 {
		t.Fatalf("%d slots taken after the cancelled wait, want 1", len(a.slots))
	}
}
