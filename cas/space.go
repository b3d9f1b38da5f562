package cas

import (
	"fmt"
	"sync/atomic"
	"time"
)

// The free-space floor. Writes stop before the disk does: an upload that
// would leave less than the floor free fails with ErrStorageFull, so the
// metadata store, whose own writes (commits, deletes, the flight recorder,
// compactions) are not checked, always finds room in the reserve, and a
// delete followed by `nas gc` can free space again.
const (
	// minFreeCap and minFreeShare make the default floor: the smaller of
	// 1 GiB and a twentieth (5%) of the file system.
	minFreeCap   = 1 << 30
	minFreeShare = 20
	// spaceSlack and spaceTrust spare most checks their statfs: a check
	// that found more than spaceSlack above the floor is trusted for
	// spaceTrust (writes that fast eat into the reserve, never past it).
	spaceSlack = 64 << 20
	spaceTrust = 50 * time.Millisecond
)

// space watches the free space of a set of directories' file systems.
type space struct {
	dirs    []string
	min     atomic.Int64 // the floor; 0: the default; negative: off
	okUntil atomic.Int64 // unix nanoseconds until which a check passes
}

// check returns ErrStorageFull, naming the directory, when a watched file
// system has less than its floor free.
func (sp *space) check() error {
	floorSet := sp.min.Load()
	if floorSet < 0 {
		return nil
	}
	now := time.Now().UnixNano()
	if now < sp.okUntil.Load() {
		return nil
	}
	roomy := true
	for _, d := range sp.dirs {
		free, size, err := diskSpace(d)
		if err != nil {
			return nil // no statfs here: the write's own errors decide
		}
		floor := floorSet
		if floor == 0 {
			floor = min(int64(minFreeCap), size/minFreeShare)
		}
		if free < floor {
			return fmt.Errorf("%w: %d bytes free under %s, below the floor of %d (nas serve --min-free)", ErrStorageFull, free, d, floor)
		}
		roomy = roomy && free-floor > spaceSlack
	}
	if roomy {
		sp.okUntil.Store(now + int64(spaceTrust))
	}
	return nil
}

// newSpace watches dirs with the floor min (Options.MinFree).
func newSpace(dirs []string, min int64) *space {
	sp := &space{dirs: dirs}
	sp.min.Store(min)
	return sp
}
