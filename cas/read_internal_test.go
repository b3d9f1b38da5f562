package cas

import (
	"reflect"
	"testing"

	"github.com/agentnas/nas/chunk"
)

// TestPieces checks how a range is cut into per-chunk pieces; a range
// inside one chunk is one piece, so ReadRefs reads nothing ahead for it.
func TestPieces(t *testing.T) {
	a, b, c := chunk.Ref{Hash: chunk.Hash{1}, Size: 100}, chunk.Ref{Hash: chunk.Hash{2}, Size: 50}, chunk.Ref{Hash: chunk.Hash{3}, Size: 200}
	refs := []chunk.Ref{a, b, c}
	for _, tc := range []struct {
		name   string
		off, n int64
		want   []piece
	}{
		{"empty", 0, 0, nil},
		{"empty at a boundary", 100, 0, nil},
		{"whole", 0, 350, []piece{{a, 0, 100}, {b, 0, 50}, {c, 0, 200}}},
		{"inside one chunk", 110, 30, []piece{{b, 10, 30}}},
		{"one whole chunk", 100, 50, []piece{{b, 0, 50}}},
		{"up to a boundary", 90, 10, []piece{{a, 90, 10}}},
		{"from a boundary", 150, 1, []piece{{c, 0, 1}}},
		{"across two", 99, 2, []piece{{a, 99, 1}, {b, 0, 1}}},
		{"across three", 1, 348, []piece{{a, 1, 99}, {b, 0, 50}, {c, 0, 199}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := pieces(refs, tc.off, tc.n); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestChunkBufClasses(t *testing.T) {
	for _, tc := range []struct{ n, cap int }{{1, 1 << 20}, {1 << 20, 1 << 20}, {1<<20 + 1, 2 << 20}, {ChunkMax, ChunkMax}, {ChunkMax + 1, ChunkMax + 1}} {
		b := getChunkBuf(tc.n)
		if len(*b) < tc.n || cap(*b) != tc.cap {
			t.Fatalf("getChunkBuf(%d): len %d cap %d, want cap %d", tc.n, len(*b), cap(*b), tc.cap)
		}
		putChunkBuf(b)
	}
}
