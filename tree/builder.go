package tree

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/agentnas/nas/chunk"
)

// Write batching: new nodes go to the store in PutNodes calls of at most
// batchNodes nodes or about batchBytes bytes. Each call is one synced kv
// batch, so a commit or merge that rewrites 1,000 leaves should take one
// or two of them, not five (256 nodes a batch cost a merge of 1,000 spread
// changes a tenth of its time in extra fsyncs).
const (
	batchNodes = 2048
	batchBytes = 8 << 20
)

// pendingLevel is the open node of one level: its items, already encoded.
type pendingLevel struct {
	buf      []byte     // encoded items; reused from node to node
	n        int        // items in buf
	count    uint64     // entries under the items
	last     []byte     // key of the last item (owned copy)
	lastLvl  int        // level of last
	lastHash chunk.Hash // child hash of the last item (levels > 0)
	// sealed is set once an item whose key level is above this level was
	// added: the node is complete and is closed when the next item arrives
	// (or by finish). Closing lazily means no node is ever written above the
	// final root.
	sealed bool
}

// builder turns a sorted stream of entries, and of references to old
// subtrees that can be kept whole, into the nodes of a canonical tree. Each
// level keeps one open node; a node is closed after an item whose key level
// is above the node's level, and its reference is added to the level above.
// Memory is one open node per level plus one write batch.
type builder struct {
	t      *Tree
	levels []pendingLevel
	closed []int        // nodes closed at each level
	reused []int        // old subtrees kept whole, by their level
	rhash  []chunk.Hash // last subtree kept whole, by its level
	many   []bool       // level known to hold at least two nodes
	// lastLvl is the level of the last key added (a leaf entry or a kept
	// subtree's last key); emitted says whether anything was added.
	lastLvl int
	emitted bool

	skip    map[chunk.Hash]struct{} // nodes known to be stored already
	batch   []Node
	bytes   int
	scratch []byte
}

// newBuilder returns a builder from t's pool; release returns it.
func newBuilder(t *Tree) *builder {
	if b, ok := t.builders.Get().(*builder); ok {
		return b
	}
	nl := t.maxLevel + 2
	return &builder{
		t:      t,
		levels: make([]pendingLevel, nl),
		closed: make([]int, nl),
		reused: make([]int, nl),
		rhash:  make([]chunk.Hash, nl),
		many:   make([]bool, nl),
	}
}

// maxPooledBuf bounds the level buffers a pooled builder keeps.
const maxPooledBuf = 1 << 20

// release resets b and puts it back in its Tree's pool, keeping the level
// buffers so that the next Apply does not grow them again.
func (b *builder) release() {
	for i := range b.levels {
		lv := &b.levels[i]
		buf, last := lv.buf[:0], lv.last[:0]
		if cap(buf) > maxPooledBuf {
			buf = nil
		}
		*lv = pendingLevel{buf: buf, last: last}
	}
	clear(b.closed)
	clear(b.reused)
	clear(b.rhash)
	clear(b.many)
	b.lastLvl, b.emitted = 0, false
	b.skip, b.batch, b.bytes = nil, nil, 0
	b.t.builders.Put(b)
}

// canKeep reports whether an old, complete subtree at level l can be added
// whole: the last key added ended every open node up to level l.
func (b *builder) canKeep(l int) bool {
	return !b.emitted || b.lastLvl > l
}

// addEntry adds a leaf entry; lvl is level(key).
func (b *builder) addEntry(ctx context.Context, key, val []byte, lvl int) error {
	if err := b.open(ctx, 0, key, lvl); err != nil {
		return err
	}
	lv := &b.levels[0]
	lv.buf = binary.AppendUvarint(lv.buf, uint64(len(val)))
	lv.buf = append(lv.buf, val...)
	lv.count++
	b.lastLvl, b.emitted = lvl, true
	return nil
}

// keep adds an old subtree at level l (a node of that level) whole. The
// caller has checked canKeep(l) and that no edit falls in its range.
func (b *builder) keep(ctx context.Context, l int, key []byte, lvl int, h chunk.Hash, count uint64) error {
	for i := 0; i <= l; i++ {
		if b.levels[i].n > 0 {
			if err := b.close(ctx, i); err != nil {
				return err
			}
		}
	}
	if err := b.addRef(ctx, l+1, key, lvl, h, count); err != nil {
		return err
	}
	b.reused[l]++
	b.rhash[l] = h
	for i := 0; i < l; i++ {
		b.many[i] = true
	}
	b.lastLvl, b.emitted = lvl, true
	return nil
}

// open closes level l if it is sealed and appends key as its next item.
func (b *builder) open(ctx context.Context, l int, key []byte, lvl int) error {
	if l >= len(b.levels) {
		return fmt.Errorf("level %d above maximum: %w", l, ErrCorrupt)
	}
	if b.levels[l].sealed {
		if err := b.close(ctx, l); err != nil {
			return err
		}
	}
	lv := &b.levels[l]
	lv.buf = appendKey(lv.buf, lv.last, key, lv.n == 0)
	lv.last = append(lv.last[:0], key...)
	lv.lastLvl = lvl
	lv.n++
	if lvl > l {
		lv.sealed = true
	}
	return nil
}

func (b *builder) addRef(ctx context.Context, l int, key []byte, lvl int, h chunk.Hash, count uint64) error {
	if err := b.open(ctx, l, key, lvl); err != nil {
		return err
	}
	lv := &b.levels[l]
	lv.buf = append(lv.buf, h[:]...)
	lv.buf = binary.AppendUvarint(lv.buf, count)
	lv.count += count
	lv.lastHash = h
	return nil
}

// seal encodes the open node of level l, queues it for writing and empties
// the level.
func (b *builder) seal(ctx context.Context, l int) (chunk.Hash, error) {
	lv := &b.levels[l]
	var head [2 + binary.MaxVarintLen64]byte
	hn := copy(head[:], []byte{nodeVersion, byte(l)})
	hn += binary.PutUvarint(head[hn:], uint64(lv.n))
	data := make([]byte, 0, hn+len(lv.buf))
	data = append(append(data, head[:hn]...), lv.buf...)
	h := chunk.Sum(data)
	lv.buf = lv.buf[:0]
	lv.n, lv.sealed = 0, false
	if _, ok := b.skip[h]; ok {
		return h, nil
	}
	b.batch = append(b.batch, Node{Hash: h, Data: data})
	b.bytes += len(data)
	if len(b.batch) >= batchNodes || b.bytes >= batchBytes {
		return h, b.flush(ctx)
	}
	return h, nil
}

// close seals level l and adds a reference to it to level l+1.
func (b *builder) close(ctx context.Context, l int) error {
	lv := &b.levels[l]
	count := lv.count
	lv.count = 0
	h, err := b.seal(ctx, l)
	if err != nil {
		return err
	}
	b.closed[l]++
	return b.addRef(ctx, l+1, lv.last, lv.lastLvl, h, count)
}

func (b *builder) flush(ctx context.Context) error {
	if len(b.batch) == 0 {
		return nil
	}
	batch := b.batch
	b.batch, b.bytes = nil, 0
	if err := b.t.store.PutNodes(ctx, batch); err != nil {
		return fmt.Errorf("put %d nodes: %w", len(batch), err)
	}
	return nil
}

// finish closes the open nodes up to the root, writes everything and returns
// the root: the only node of the lowest level that has exactly one node.
func (b *builder) finish(ctx context.Context) (chunk.Hash, error) {
	for l := range b.levels {
		lv := &b.levels[l]
		total := b.closed[l] + b.reused[l]
		if lv.n > 0 {
			total++
		}
		if b.many[l] {
			total += 2
		}
		if total == 0 {
			continue
		}
		if total > 1 {
			if lv.n > 0 {
				if err := b.close(ctx, l); err != nil {
					return chunk.Hash{}, err
				}
			}
			continue
		}
		var root chunk.Hash
		switch {
		case lv.n > 1 || (lv.n == 1 && l == 0):
			h, err := b.seal(ctx, l)
			if err == nil {
				err = b.flush(ctx)
			}
			if err != nil {
				return chunk.Hash{}, err
			}
			return h, nil
		case lv.n == 1:
			root = lv.lastHash // a lone reference: its child is the top
		default:
			// A lone old subtree, or (never in practice) a lone closed node.
			root = b.rhash[l]
			if b.closed[l] == 1 {
				return chunk.Hash{}, fmt.Errorf("builder lost a lone closed node at level %d", l)
			}
		}
		if err := b.flush(ctx); err != nil {
			return chunk.Hash{}, err
		}
		return b.collapse(ctx, root)
	}
	return chunk.Hash{}, b.flush(ctx)
}

// collapse descends from a top candidate while it has a single child, so the
// root is the lowest level with one node even when that node was kept whole
// from the old tree without being read.
func (b *builder) collapse(ctx context.Context, h chunk.Hash) (chunk.Hash, error) {
	for {
		n, err := b.t.load(ctx, h)
		if err != nil {
			return chunk.Hash{}, err
		}
		if n.level == 0 || len(n.keys) > 1 {
			return h, nil
		}
		h = n.kids[0]
	}
}
