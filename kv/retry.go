package kv

import (
	"context"
	"math/rand/v2"
	"time"
)

// The retry budget of a conflicting Update, the same for every engine: at
// least MinRetries attempts and at least RetryFor. Under heavy contention
// (many writers on one key, a loaded machine) a count alone can be spent
// in well under a second by a writer that keeps losing, while a time
// budget gives it turns.
const (
	MinRetries = 64
	RetryFor   = 10 * time.Second
)

// Backoff pauses before the retry after conflict number i: not at first,
// then a random while growing to 20 ms, so writers contending for one key
// take turns instead of one of them losing every race.
func Backoff(ctx context.Context, i int) error {
	if i < 2 {
		return nil
	}
	limit := min(time.Duration(1)<<min(i, 20)*50*time.Microsecond, 20*time.Millisecond)
	t := time.NewTimer(time.Duration(rand.Int64N(int64(limit))))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
