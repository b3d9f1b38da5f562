package hook

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/agentnas/nas/record"
)

// Object events. A hook that asks for object.created or object.removed
// gets, for every commit and merge of its repository, one S3 event record
// per key the commit changed against its first parent, in the shape S3
// event notifications have (so existing consumers parse them), with a
// "nas" member naming the branch and the commit. Records go a page of
// ObjectPage at a time, in key order; a failed page is retried before the
// next.

// ObjectPage is how many records one delivery of object events holds.
const ObjectPage = 100

// notYetFor is how long after its event a commit that is not stored yet
// is waited for (the recorder writes before the branch moves); past it
// the commit never landed and has no object events.
const notYetFor = 2 * time.Minute

// ErrNotYet is a commit not (yet) stored.
var ErrNotYet = errors.New("hook: commit not stored yet")

// ObjectChange is one key a commit changed.
type ObjectChange struct {
	Key       string
	Removed   bool
	Size      int64
	ETag      string
	VersionID string
}

// Changes calls fn for what commit changed in repo against its first
// parent, in key order, for keys after after; ErrNotYet when the commit is
// not stored.
type Changes func(ctx context.Context, repo, commit, after string, fn func(ObjectChange) error) error

// S3Event is the body of an object event delivery.
type S3Event struct {
	Records []S3Record `json:"Records"`
}

// S3Record is one object's event, as S3 notifications write it.
type S3Record struct {
	EventVersion string    `json:"eventVersion"`
	EventSource  string    `json:"eventSource"`
	AWSRegion    string    `json:"awsRegion"`
	EventTime    time.Time `json:"eventTime"`
	EventName    string    `json:"eventName"` // ObjectCreated:Put or ObjectRemoved:Delete
	UserIdentity Identity  `json:"userIdentity"`
	S3           S3Entity  `json:"s3"`
	NAS          NASEntity `json:"nas"`
}

// Identity names who made the change.
type Identity struct {
	PrincipalID string `json:"principalId"`
}

// S3Entity is the bucket and object of a record.
type S3Entity struct {
	SchemaVersion   string   `json:"s3SchemaVersion"`
	ConfigurationID string   `json:"configurationId"` // the hook's ID
	Bucket          S3Bucket `json:"bucket"`
	Object          S3Object `json:"object"`
}

// S3Bucket is the repository as a bucket.
type S3Bucket struct {
	Name string `json:"name"`
	ARN  string `json:"arn"`
}

// S3Object is the changed object; Key is URL-encoded as S3 does.
type S3Object struct {
	Key       string `json:"key"`
	Size      int64  `json:"size,omitempty"`
	ETag      string `json:"eTag,omitempty"`
	VersionID string `json:"versionId,omitempty"`
	Sequencer string `json:"sequencer"`
}

// NASEntity is what S3's shape lacks: where on the repository's history.
type NASEntity struct {
	Repo   string `json:"repo"`
	Branch string `json:"branch"`
	Commit string `json:"commit"`
	Seq    uint64 `json:"seq"` // the commit's event in the flight recorder
}

// eventKey encodes key as S3 event records do (form encoding, with "/"
// kept).
func eventKey(key string) string {
	return strings.ReplaceAll(url.QueryEscape(key), "%2F", "/")
}

// errPageFull ends a listing of changes once a page is full.
var errPageFull = errors.New("page full")

// deliverObjects sends the object events of e's commit after h.After.
func (d *Dispatcher) deliverObjects(ctx context.Context, h *Hook, e record.Event, id string) (bool, error) {
	for {
		var recs []S3Record
		last := ""
		err := d.o.Changes(ctx, e.Repo, e.Subject.Commit, h.After, func(c ObjectChange) error {
			last = c.Key
			if c.Removed && !h.wants(EventObjectRemoved) || !c.Removed && !h.wants(EventObjectCreated) {
				return nil
			}
			recs = append(recs, d.objectRecord(h, e, c))
			if len(recs) == ObjectPage {
				return errPageFull
			}
			return nil
		})
		switch {
		case errors.Is(err, ErrNotYet) && time.Since(e.Time) < notYetFor:
			return false, d.update(ctx, h, func(x *Hook) { x.NextTry = time.Now().Add(d.o.Poll * 4) })
		case errors.Is(err, ErrNotYet):
			d.log.Warn("hook: a recorded commit never landed; no object events", "hook", h.ID, "commit", e.Subject.Commit)
			return true, nil
		case err != nil && !errors.Is(err, errPageFull):
			return false, fmt.Errorf("changes of commit %s: %w", e.Subject.Commit, err)
		}
		if last == "" {
			return true, nil // nothing after h.After
		}
		if len(recs) == 0 { // only keys of the kind not asked for remain
			if err := d.update(ctx, h, func(x *Hook) { x.After = last }); err != nil {
				return false, err
			}
			continue
		}
		body, err := json.Marshal(S3Event{Records: recs})
		if err != nil {
			return false, err
		}
		// The same page keeps its ID on every attempt: it starts after
		// h.After.
		sum := sha256.Sum256([]byte(h.After))
		pid := id + "-objects-" + hex.EncodeToString(sum[:6])
		ok, err := d.send(ctx, h, e.Seq, "objects", pid, body, func(x *Hook) { x.After = last })
		if !ok || err != nil {
			return false, err
		}
	}
}

// objectRecord is the S3 event record of change c of e's commit.
func (d *Dispatcher) objectRecord(h *Hook, e record.Event, c ObjectChange) S3Record {
	r := S3Record{EventVersion: "2.1", EventSource: "agentnas:s3", AWSRegion: d.o.Region, EventTime: e.Time,
		EventName: "ObjectCreated:Put", UserIdentity: Identity{PrincipalID: e.Principal}}
	if c.Removed {
		r.EventName = "ObjectRemoved:Delete"
	}
	r.S3 = S3Entity{SchemaVersion: "1.0", ConfigurationID: h.ID, Bucket: S3Bucket{Name: e.Repo, ARN: "arn:aws:s3:::" + e.Repo},
		Object: S3Object{Key: eventKey(c.Key), Size: c.Size, ETag: c.ETag, VersionID: c.VersionID, Sequencer: fmt.Sprintf("%016X", e.Seq)}}
	r.NAS = NASEntity{Repo: e.Repo, Branch: e.Branch, Commit: e.Subject.Commit, Seq: e.Seq}
	return r
}
