package checksum

import (
	"crypto/md5"
	"hash"
	"sync"
	"sync/atomic"

	md5simd "github.com/minio/md5-simd"
)

// The MD5 of a large body is computed by crypto/md5 unless many large
// bodies are being hashed, and then in a lane of a shared md5-simd server:
// that server hashes up to 16 bodies at once on one core (AVX-512; 8 with
// AVX2), about four times the bytes per second of crypto/md5 when every
// lane has a block ready at the same moment, but a pass of its kernel costs
// the same however few lanes are filled, and it fills only the lanes whose
// blocks have arrived. Bodies arriving over the network rarely line up:
// with lanes from the third large body, 8 concurrent 64 MiB PUTs ran
// 1.07-1.23x faster with crypto/md5 for all (bench/RESULTS.md, "MD5 lanes
// only past eight bodies"), and 32 concurrent 1 MiB PUTs up to 1.08x faster
// with lanes.
const (
	// laneMinWrite is the first write from which a body counts as large: a
	// chunk (cas.ChunkMin is 256 KiB); small bodies arrive in one shorter
	// write.
	laneMinWrite = 64 << 10
	// laneFrom is how many large bodies must be hashed at once (this one
	// included) before a new one takes a lane: the first eight keep
	// crypto/md5.
	laneFrom = 9
	// maxLanes bounds the hashers made. A closed md5-simd hasher stays
	// registered with its server for good (v1.1.2), so hashers are reset
	// and reused rather than closed; a body finding every lane taken uses
	// crypto/md5.
	maxLanes = 32
)

// lanes is the shared md5-simd server and its reusable hashers. The server
// goroutine starts with the first lane handed out and lives as long as the
// process.
var lanes struct {
	once sync.Once
	srv  md5simd.Server

	large atomic.Int32 // large bodies being hashed

	mu   sync.Mutex // guards free and made
	free []md5simd.Hasher
	made int
}

// bodyMD5 is the MD5 of one body. It picks its implementation at the first
// Write, from that write's length and how many large bodies are being
// hashed then.
type bodyMD5 struct {
	h     hash.Hash // nil until the first Write
	lane  md5simd.Hasher
	large bool // counted in lanes.large
}

func (m *bodyMD5) Write(p []byte) (int, error) {
	if m.h == nil {
		m.h = m.pick(len(p))
	}
	return m.h.Write(p)
}

func (m *bodyMD5) pick(first int) hash.Hash {
	if first < laneMinWrite {
		return md5.New()
	}
	m.large = true
	if lanes.large.Add(1) < laneFrom {
		return md5.New()
	}
	lanes.once.Do(func() { lanes.srv = md5simd.NewServer() })
	lanes.mu.Lock()
	defer lanes.mu.Unlock()
	switch {
	case len(lanes.free) > 0:
		m.lane = lanes.free[len(lanes.free)-1]
		lanes.free = lanes.free[:len(lanes.free)-1]
	case lanes.made < maxLanes:
		m.lane = lanes.srv.NewHash()
		lanes.made++
	default:
		return md5.New()
	}
	return m.lane
}

// Sum returns the MD5 of everything written so far.
func (m *bodyMD5) Sum() []byte {
	if m.h == nil {
		m.h = md5.New()
	}
	return m.h.Sum(nil)
}

// release gives the lane back and stops counting the body as large. The
// MD5 is not used afterwards.
func (m *bodyMD5) release() {
	if m.large {
		lanes.large.Add(-1)
		m.large = false
	}
	if m.lane != nil {
		m.lane.Reset()
		lanes.mu.Lock()
		lanes.free = append(lanes.free, m.lane)
		lanes.mu.Unlock()
		m.lane = nil
	}
	m.h = nil
}
