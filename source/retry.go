package source

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// Retry bounds the retries of a remote operation. Only ErrUnavailable
// (and ErrThrottled) is retried; drift, denial, a 4xx refusal and
// corruption are final.
type Retry struct {
	// Attempts is the number of tries in all (0 means 4).
	Attempts int
	// Base is the first backoff (0 means 100 ms); it doubles up to Max
	// (0 means 2 s), with jitter.
	Base, Max time.Duration
}

func (r Retry) withDefaults() Retry {
	if r.Attempts <= 0 {
		r.Attempts = 4
	}
	if r.Base <= 0 {
		r.Base = 100 * time.Millisecond
	}
	if r.Max <= 0 {
		r.Max = 2 * time.Second
	}
	return r
}

// retryable reports whether err may pass on a later try.
func retryable(err error) bool {
	return errors.Is(err, ErrUnavailable) && !errors.Is(err, ErrDenied) && !errors.Is(err, errRejected)
}

// backoff sleeps before try number attempt (1 is the first retry); it
// returns false when ctx ended first.
func (r Retry) backoff(ctx context.Context, attempt int) bool {
	d := r.Base << (attempt - 1)
	if d > r.Max || d <= 0 {
		d = r.Max
	}
	d = d/2 + rand.N(d/2+1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// do runs fn until it succeeds, fails for good, or the tries run out.
func (r Retry) do(ctx context.Context, fn func() error) error {
	r = r.withDefaults()
	var err error
	for attempt := 0; attempt < r.Attempts; attempt++ {
		if attempt > 0 && !r.backoff(ctx, attempt) {
			return ctx.Err()
		}
		if err = fn(); err == nil || !retryable(err) || ctx.Err() != nil {
			return err
		}
	}
	return err
}
