package branch

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"

	"github.com/agentnas/nas/keyspace"
	"github.com/agentnas/nas/manifest"
)

// repoRecord is stored as JSON under R/<name>.
type repoRecord struct {
	Name          string `json:"name"`
	ID            uint64 `json:"id"`
	DefaultBranch string `json:"default_branch"`
	Created       int64  `json:"created"`
	// Salt keys the tree shape (see tree.Config); random per repository.
	Salt []byte `json:"salt"`
}

// lineageItem says that versions written on Branch with a sequence up to
// MaxSeq are part of a branch's history.
type lineageItem struct {
	Branch uint64 `json:"branch"`
	MaxSeq uint64 `json:"max_seq"`
}

// branchRecord is stored as JSON under B/<repo>/<name>; about 300 bytes.
type branchRecord struct {
	Name      string            `json:"name"`
	ID        uint64            `json:"id"`
	Head      manifest.CommitID `json:"-"`
	HeadHex   string            `json:"head"`
	Base      string            `json:"base,omitempty"` // fork point commit
	Gen       uint64            `json:"gen"`
	SealedGen uint64            `json:"sealed_gen,omitempty"`
	Protected bool              `json:"protected,omitempty"`
	Created   int64             `json:"created"`
	Lineage   []lineageItem     `json:"lineage"`
	CommitSeq uint64            `json:"commit_seq,omitempty"` // highest sequence folded by a commit
	// Limits (see Limits); zero means none.
	ExpiresAt    int64 `json:"expires_at,omitempty"` // unix nanoseconds
	QuotaBytes   int64 `json:"quota_bytes,omitempty"`
	QuotaObjects int64 `json:"quota_objects,omitempty"`
}

func (b *branchRecord) encode() []byte {
	b.HeadHex = b.Head.String()
	out, _ := json.Marshal(b)
	return out
}

func decodeBranch(v []byte) (*branchRecord, error) {
	var b branchRecord
	if err := json.Unmarshal(v, &b); err != nil {
		return nil, fmt.Errorf("decode branch record: %w", err)
	}
	h, err := manifest.ParseCommitID(b.HeadHex)
	if err != nil {
		return nil, fmt.Errorf("decode branch record: %w", err)
	}
	b.Head = h
	return &b, nil
}

// sees reports whether a version written on branch at seq is in the
// lineage.
func sees(lin []lineageItem, branch, seq uint64) bool {
	for _, l := range lin {
		if l.Branch == branch && seq <= l.MaxSeq {
			return true
		}
	}
	return false
}

// commitInfo is stored as JSON under C/<repo><commit>; it lets a fork from
// any commit compute its lineage.
type commitInfo struct {
	Branch  uint64        `json:"branch"`
	Seq     uint64        `json:"seq"`
	Lineage []lineageItem `json:"lineage"`
}

// lineageAt returns the lineage of a branch forked from a commit.
func (ci *commitInfo) lineageAt() []lineageItem {
	out := make([]lineageItem, 0, len(ci.Lineage)+1)
	for _, l := range ci.Lineage {
		if l.Branch == ci.Branch {
			l.MaxSeq = min(l.MaxSeq, ci.Seq)
		}
		out = append(out, l)
	}
	return out
}

// Key construction. IDs are fixed-width big-endian so prefixes nest.

// repoSpaces are the key spaces that hold a repository's data under its ID;
// deleting the repository empties each of them.
var repoSpaces = []string{keyspace.Branch, keyspace.Stage, keyspace.StageWriter, keyspace.Version, keyspace.KeyVersion,
	keyspace.CommitInfo, keyspace.Upload, keyspace.Part, keyspace.Checkpoint, keyspace.Trash, keyspace.TrashJournal,
	keyspace.RepoConfig, keyspace.DeletedBranch}

func u64(b []byte, v uint64) []byte { return binary.BigEndian.AppendUint64(b, v) }

func repoKey(name string) []byte { return append([]byte(keyspace.Repo), name...) }

func branchPrefix(repo uint64) []byte { return u64([]byte(keyspace.Branch), repo) }

func branchKey(repo uint64, name string) []byte {
	return append(branchPrefix(repo), name...)
}

func stagePrefix(repo, branch, gen uint64) []byte {
	return u64(u64(u64([]byte(keyspace.Stage), repo), branch), gen)
}

func stageKey(repo, branch, gen uint64, key string) []byte {
	return append(stagePrefix(repo, branch, gen), key...)
}

// writerPrefix is where a staging generation's writers are listed: one
// key per lease whose writes it holds, valued with the lease's run.
func writerPrefix(repo, branch, gen uint64) []byte {
	return u64(u64(u64([]byte(keyspace.StageWriter), repo), branch), gen)
}

func branchWriterPrefix(repo, branch uint64) []byte {
	return u64(u64([]byte(keyspace.StageWriter), repo), branch)
}

func branchStagePrefix(repo, branch uint64) []byte {
	return u64(u64([]byte(keyspace.Stage), repo), branch)
}

func versionKey(repo uint64, vid string) []byte {
	return append(u64([]byte(keyspace.Version), repo), vid...)
}

func keyVersionsPrefix(repo uint64) []byte { return u64([]byte(keyspace.KeyVersion), repo) }

// escKey escapes key so that 0x00 0x01 terminates it and ordering is kept:
// 0x00 becomes 0x00 0xff.
func escKey(b []byte, key string) []byte {
	for i := 0; i < len(key); i++ {
		if key[i] == 0 {
			b = append(b, 0, 0xff)
		} else {
			b = append(b, key[i])
		}
	}
	return append(b, 0, 1)
}

// unescKey reverses escKey on b (which starts with an escaped key) and
// returns the key and the rest.
func unescKey(b []byte) (string, []byte, bool) {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != 0 {
			out = append(out, b[i])
			continue
		}
		if i+1 >= len(b) {
			return "", nil, false
		}
		switch b[i+1] {
		case 0xff:
			out = append(out, 0)
			i++
		case 1:
			return string(out), b[i+2:], true
		default:
			return "", nil, false
		}
	}
	return "", nil, false
}

func keyVersionKey(repo uint64, key string, seq uint64) []byte {
	return u64(escKey(keyVersionsPrefix(repo), key), math.MaxUint64-seq)
}

func commitInfoKey(repo uint64, id manifest.CommitID) []byte {
	return append(u64([]byte(keyspace.CommitInfo), repo), id[:]...)
}

func uploadsPrefix(repo uint64) []byte { return u64([]byte(keyspace.Upload), repo) }

func uploadKey(repo uint64, key, uploadID string) []byte {
	return append(escKey(uploadsPrefix(repo), key), uploadID...)
}

func partPrefix(repo uint64, uploadID string) []byte {
	return append(u64([]byte(keyspace.Part), repo), uploadID...)
}

func partKey(repo uint64, uploadID string, n int) []byte {
	return binary.BigEndian.AppendUint32(partPrefix(repo, uploadID), uint32(n))
}

// staged is a staging value: kind byte (stagePut or stageDelete), uvarint
// seq, then the version ID's length-prefixed bytes and, for a put, the
// encoded entry.
type staged struct {
	del   bool
	seq   uint64
	vid   string
	entry []byte
	by    Writer // who wrote it (not encoded: stage records it apart)
}

const (
	stagePut    = 1
	stageDelete = 2
)

func (s staged) encode() []byte {
	b := make([]byte, 0, 1+2*binary.MaxVarintLen64+len(s.vid)+len(s.entry))
	if s.del {
		b = append(b, stageDelete)
	} else {
		b = append(b, stagePut)
	}
	b = binary.AppendUvarint(b, s.seq)
	b = binary.AppendUvarint(b, uint64(len(s.vid)))
	b = append(b, s.vid...)
	return append(b, s.entry...)
}

func decodeStaged(v []byte) (staged, error) {
	del, seq, vid, entry, err := parseStaged(v)
	if err != nil {
		return staged{}, err
	}
	return staged{del: del, seq: seq, vid: string(vid), entry: append([]byte(nil), entry...)}, nil
}

// parseStaged splits a staging value without copying: vid and entry are
// subslices of v (entry is empty for a tombstone).
func parseStaged(v []byte) (del bool, seq uint64, vid, entry []byte, err error) {
	if len(v) < 3 || (v[0] != stagePut && v[0] != stageDelete) {
		return false, 0, nil, nil, fmt.Errorf("staged record: %w", manifest.ErrCorrupt)
	}
	seq, n := binary.Uvarint(v[1:])
	if n <= 0 {
		return false, 0, nil, nil, fmt.Errorf("staged record: %w", manifest.ErrCorrupt)
	}
	rest := v[1+n:]
	l, m := binary.Uvarint(rest)
	if m <= 0 || l > uint64(len(rest)-m) {
		return false, 0, nil, nil, fmt.Errorf("staged record: %w", manifest.ErrCorrupt)
	}
	return v[0] == stageDelete, seq, rest[m : m+int(l)], rest[m+int(l):], nil
}

// versionRecord is stored under V/<repo><vid>: the key, the branch and
// sequence it was written at, and the staged value (entry or tombstone).
type versionRecord struct {
	key    string
	branch uint64
	staged
}

func (r versionRecord) encode() []byte {
	b := binary.AppendUvarint(nil, uint64(len(r.key)))
	b = append(b, r.key...)
	b = binary.AppendUvarint(b, r.branch)
	return append(b, r.staged.encode()...)
}

func decodeVersion(v []byte) (versionRecord, error) {
	var r versionRecord
	l, n := binary.Uvarint(v)
	if n <= 0 || l > uint64(len(v)-n) {
		return r, fmt.Errorf("version record: %w", manifest.ErrCorrupt)
	}
	r.key = string(v[n : n+int(l)])
	rest := v[n+int(l):]
	br, m := binary.Uvarint(rest)
	if m <= 0 {
		return r, fmt.Errorf("version record: %w", manifest.ErrCorrupt)
	}
	r.branch = br
	st, err := decodeStaged(rest[m:])
	r.staged = st
	return r, err
}

// Version IDs are 24 hex characters: the 8-byte sequence then 4 random
// bytes, so they sort by time; commit IDs (64 hex characters) are told apart
// by length.
func newVersionID(seq uint64, rnd uint32) string {
	var b [12]byte
	binary.BigEndian.PutUint64(b[:8], seq)
	binary.BigEndian.PutUint32(b[8:], rnd)
	return hex.EncodeToString(b[:])
}

// versionSeq extracts the sequence of a version ID, or false if vid is not
// one.
func versionSeq(vid string) (uint64, bool) {
	if len(vid) != 24 {
		return 0, false
	}
	b, err := hex.DecodeString(vid)
	if err != nil {
		return 0, false
	}
	return binary.BigEndian.Uint64(b[:8]), true
}
