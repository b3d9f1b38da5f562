package record

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Kind names what an event records. The set is open: the constants are the
// kinds the gateway writes today, and any non-empty string is accepted.
type Kind string

// Kinds of events.
const (
	KindLeaseIssued       Kind = "lease.issued"
	KindLeaseNarrowed     Kind = "lease.narrowed"
	KindLeaseRevoked      Kind = "lease.revoked"
	KindSessionIssued     Kind = "session.issued"
	KindShareGranted      Kind = "share.granted"
	KindShareUsed         Kind = "share.used"
	KindShareRevoked      Kind = "share.revoked"
	KindCommit            Kind = "commit"
	KindMerge             Kind = "merge"
	KindBranchCreated     Kind = "branch.created"
	KindBranchDeleted     Kind = "branch.deleted"
	KindBranchProtected   Kind = "branch.protected"
	KindBranchUnprotected Kind = "branch.unprotected"
	KindBranchLimits      Kind = "branch.limits"
	KindBranchExpired     Kind = "branch.expired"
	KindScratchExpired    Kind = "scratch.expired" // the sweep deleted an expired scratch file
	KindDelete            Kind = "delete"
	KindDenied            Kind = "denied"
	KindGateRequested     Kind = "gate.requested"
	KindGateDecided       Kind = "gate.decided"
	KindCheckpoint        Kind = "checkpoint"
	KindSessionTainted    Kind = "session.tainted"
	KindHoldSet           Kind = "hold.set"
	KindHoldLifted        Kind = "hold.lifted"
	KindForget            Kind = "forget"
	KindSourcePush        Kind = "source.push" // changes written back to an attached source
	KindCheck             Kind = "check"       // a pre-merge check's final result on a proposal
)

// Effect is the outcome of the authorization decision an event records.
type Effect string

// Effects of a decision.
const (
	EffectAllow      Effect = "allow"
	EffectDeny       Effect = "deny"
	EffectNotFound   Effect = "not_found"
	EffectOverBudget Effect = "over_budget"
	EffectExpired    Effect = "expired"
)

// Subject is what an event acted on.
type Subject struct {
	Path      string `json:"path,omitempty"`
	Commit    string `json:"commit,omitempty"`
	VersionID string `json:"version_id,omitempty"`
}

// Decision is the authorization decision behind an event: its effect, the
// rule that matched and a human-readable reason.
type Decision struct {
	Effect Effect `json:"effect,omitempty"`
	Rule   string `json:"rule,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// Event is one record of the hash-chained log. Seq, Time, PrevHash and Hash
// are assigned by Append and AppendTxn; whatever the caller puts there is
// overwritten. Details is encoded with sorted keys.
//
// Details keys starting with "read_manifest_" are reserved: when ReadManifest
// is set, AppendTxn binds the manifest's state into the record under
// DetailManifestPages and DetailManifestHash.
type Event struct {
	Seq          uint64            `json:"seq"`
	Time         time.Time         `json:"time"`
	Kind         Kind              `json:"kind"`
	Run          string            `json:"run,omitempty"`
	Principal    string            `json:"principal,omitempty"`
	OnBehalfOf   string            `json:"on_behalf_of,omitempty"`
	Lease        string            `json:"lease,omitempty"`
	Purpose      string            `json:"purpose,omitempty"`
	Repo         string            `json:"repo,omitempty"`
	Branch       string            `json:"branch,omitempty"`
	Subject      Subject           `json:"subject,omitzero"`
	Decision     Decision          `json:"decision,omitzero"`
	ReadManifest string            `json:"read_manifest,omitempty"`
	Details      map[string]string `json:"details,omitempty"`
	PrevHash     Hash              `json:"prev_hash"`
	Hash         Hash              `json:"hash"`
}

// Reserved Details keys written by AppendTxn for an event with ReadManifest:
// the number of manifest pages flushed when the event was appended, and the
// manifest's chain hash over those pages (see doc.go).
const (
	DetailManifestPages = "read_manifest_pages"
	DetailManifestHash  = "read_manifest_hash"
)

// Limits on what one event may hold; Append refuses larger events with
// ErrInvalid so that a record always fits a kv value comfortably.
const (
	MaxFieldSize  = 16 << 10 // bytes in any one string field, key or value
	MaxDetails    = 64       // entries in Details
	MaxRecordSize = 64 << 10 // bytes of a record's canonical encoding
)

// Hash is a SHA-256 digest in the chain. Its text form is "sha256:" and 64
// lowercase hex digits; the zero Hash is the genesis value that the first
// record's PrevHash holds.
type Hash [sha256.Size]byte

const hashPrefix = "sha256:"

// String returns the text form of h.
func (h Hash) String() string { return hashPrefix + hex.EncodeToString(h[:]) }

// IsZero reports whether h is the genesis value.
func (h Hash) IsZero() bool { return h == Hash{} }

// MarshalText implements encoding.TextMarshaler.
func (h Hash) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (h *Hash) UnmarshalText(b []byte) error {
	p, err := ParseHash(string(b))
	if err != nil {
		return err
	}
	*h = p
	return nil
}

// ParseHash parses the text form of a Hash.
func ParseHash(s string) (Hash, error) {
	var h Hash
	hx, ok := strings.CutPrefix(s, hashPrefix)
	if !ok || len(hx) != 2*len(h) {
		return h, fmt.Errorf("hash %q: %w", s, ErrInvalid)
	}
	if _, err := hex.Decode(h[:], []byte(hx)); err != nil {
		return h, fmt.Errorf("hash %q: %w", s, ErrInvalid)
	}
	return h, nil
}

// fields returns pointers to the event's string fields in canonical order,
// shared by the codec and validation so the two cannot disagree.
func (e *Event) fields() [15]*string {
	return [15]*string{
		(*string)(&e.Kind), &e.Run, &e.Principal, &e.OnBehalfOf, &e.Lease,
		&e.Purpose, &e.Repo, &e.Branch,
		&e.Subject.Path, &e.Subject.Commit, &e.Subject.VersionID,
		(*string)(&e.Decision.Effect), &e.Decision.Rule, &e.Decision.Reason,
		&e.ReadManifest,
	}
}

// validate checks what the caller controls.
func (e *Event) validate() error {
	if e.Kind == "" {
		return fmt.Errorf("event: empty kind: %w", ErrInvalid)
	}
	for _, f := range e.fields() {
		if err := checkString(*f); err != nil {
			return fmt.Errorf("event %s: %w", e.Kind, err)
		}
	}
	if len(e.Details) > MaxDetails {
		return fmt.Errorf("event %s: %d details, limit %d: %w", e.Kind, len(e.Details), MaxDetails, ErrInvalid)
	}
	for k, v := range e.Details {
		if k == "" {
			return fmt.Errorf("event %s: empty details key: %w", e.Kind, ErrInvalid)
		}
		if err := checkString(k); err != nil {
			return fmt.Errorf("event %s: details key: %w", e.Kind, err)
		}
		if err := checkString(v); err != nil {
			return fmt.Errorf("event %s: details[%q]: %w", e.Kind, k, err)
		}
	}
	n := encodedSize(e)
	if e.ReadManifest != "" {
		n += bindingSize
	}
	if n > MaxRecordSize {
		return fmt.Errorf("event %s: %d bytes, limit %d: %w", e.Kind, n, MaxRecordSize, ErrInvalid)
	}
	return nil
}

// bindingSize bounds what the manifest binding adds to a record: two keys,
// a decimal page count and a hash in text form, with length prefixes.
const bindingSize = 2*(1+len(DetailManifestHash)) + (1 + 20) + (1 + len(hashPrefix) + 64)

func checkString(s string) error {
	if len(s) > MaxFieldSize {
		return fmt.Errorf("field of %d bytes, limit %d: %w", len(s), MaxFieldSize, ErrInvalid)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("field is not valid UTF-8: %w", ErrInvalid)
	}
	return nil
}
