package branch

import (
	"sync/atomic"
	"time"
)

// clock hands out strictly increasing sequence numbers close to the wall
// clock in nanoseconds; they order versions of a key and bound lineage.
type clock struct{ last atomic.Uint64 }

func (c *clock) next() uint64 {
	for {
		prev := c.last.Load()
		n := uint64(time.Now().UnixNano())
		if n <= prev {
			n = prev + 1
		}
		if c.last.CompareAndSwap(prev, n) {
			return n
		}
	}
}

// observe moves the clock past seq (after a restart, for example).
func (c *clock) observe(seq uint64) {
	for {
		prev := c.last.Load()
		if seq <= prev || c.last.CompareAndSwap(prev, seq) {
			return
		}
	}
}
