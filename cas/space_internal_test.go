package cas

import (
	"context"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"testing"
)

// TestStorageFloorMidUpload: the floor is checked again as a segment
// grows, so a large upload that began with room fails once the disk
// reaches the floor, within spaceStep bytes, without reading the rest of
// its body.
func TestStorageFloorMidUpload(t *testing.T) {
	s, _ := testStore(t, Options{MinFree: -1})
	const reach = 12 << 20
	body := &floorAt{r: rand.New(rand.NewPCG(1, 2)), left: 1 << 30, at: reach, trip: func() {
		s.space.min.Store(math.MaxInt64)
	}}
	u := s.NewUpload()
	defer u.Close()
	_, n, err := u.Ingest(context.Background(), body)
	if !errors.Is(err, ErrStorageFull) {
		t.Fatalf("ingest past the floor: %v after %d bytes, want ErrStorageFull", err, n)
	}
	if read := int64(1<<30) - body.left; read > reach+spaceStep+8*ChunkMax {
		t.Fatalf("read %d bytes of the body, the floor was reached at %d", read, reach)
	}
}

// floorAt is a body of random bytes that calls trip once at bytes have
// been read.
type floorAt struct {
	r        *rand.Rand
	left, at int64
	trip     func()
}

func (f *floorAt) Read(p []byte) (int, error) {
	if f.left == 0 {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), f.left)]
	for i := range p {
		p[i] = byte(f.r.Uint32())
	}
	before := int64(1<<30) - f.left
	f.left -= int64(len(p))
	if before < f.at && before+int64(len(p)) >= f.at {
		f.trip()
	}
	return len(p), nil
}
