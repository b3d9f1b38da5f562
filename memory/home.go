package memory

import (
	"fmt"
	"strings"

	"github.com/agentnas/nas/lease"
)

// The layout of a Home.
const (
	// HomesDir holds every Home: agents/ROLE.
	HomesDir = "agents/"
	// NotesDir and QuarantineDir are under HOME/.
	NotesDir      = "memory/notes/"
	QuarantineDir = "memory/quarantine/"
	// MemoryDir holds both, and the rest of a Home's memory.
	MemoryDir = "memory/"
	// RecallTestsFile is a Home's golden recall tests, under HOME/.
	RecallTestsFile = "recall-tests.yaml"
	// noteExt ends every note's name.
	noteExt = ".md"
	// quarantineSegment marks a quarantined key anywhere in a tree, as
	// search's rule says.
	quarantineSegment = "/" + QuarantineDir
)

// Home is the Home of role: agents/ROLE.
func Home(role string) string { return HomesDir + role }

// CheckHome checks that home is a Home: agents/ and a valid role name,
// no more (no trailing "/", no deeper path, no "..").
func CheckHome(home string) error {
	role, ok := strings.CutPrefix(home, HomesDir)
	if !ok {
		return fmt.Errorf("%w: home %q is not agents/ROLE", ErrInvalid, clip(home))
	}
	if err := lease.ValidRoleName(role); err != nil {
		return fmt.Errorf("%w: home %q is not agents/ROLE: %v", ErrInvalid, clip(home), err)
	}
	return nil
}

// NotePath is where note id of home lives; QuarantinePath where it lives
// when quarantined.
func NotePath(home, id string) string { return home + "/" + NotesDir + id + noteExt }

// QuarantinePath is where a quarantined note id of home lives.
func QuarantinePath(home, id string) string { return home + "/" + QuarantineDir + id + noteExt }

// ParsePath reads a key of home as a note's: its ID and whether it is
// quarantined; ok is false for any other key (the journal, MEMORY.md, a
// file in a deeper directory, a name that is not an ID).
func ParsePath(home, key string) (id string, quarantined, ok bool) {
	rest, found := strings.CutPrefix(key, home+"/")
	if !found {
		return "", false, false
	}
	if r, q := strings.CutPrefix(rest, QuarantineDir); q {
		rest, quarantined = r, true
	} else if rest, found = strings.CutPrefix(rest, NotesDir); !found {
		return "", false, false
	}
	id, found = strings.CutSuffix(rest, noteExt)
	if !found || ValidID(id) != nil {
		return "", false, false
	}
	return id, quarantined, true
}

// InQuarantine reports whether key lies in any quarantine directory: a
// key with a /memory/quarantine/ segment.
func InQuarantine(key string) bool {
	return strings.Contains("/"+key, quarantineSegment)
}
