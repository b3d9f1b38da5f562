package s3api

import (
	"bytes"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/label"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/secret"
)

// Trust labels over S3 look like user metadata: x-amz-meta-nas-origin,
// x-amz-meta-nas-sensitivity and x-amz-meta-nas-reviewed, so every S3
// client shows them (head-object's Metadata) and can ask for them on a
// write (aws s3 cp --metadata nas-origin=external). They are never stored
// as metadata: a write's names become the version's label (the owner sets
// it; a lease may only raise it, never mark reviewed), and GET and HEAD
// answer the effective labels, the stored ones raised by the
// repository's label rules.

// The metadata names of the labels.
const (
	metaOrigin      = "nas-origin"
	metaSensitivity = "nas-sensitivity"
	metaReviewed    = "nas-reviewed"
)

// takeLabelMeta removes the label names from e's metadata and returns
// the label they ask for (nil when none is named).
func takeLabelMeta(e *manifest.Entry) (*label.Label, error) {
	taken := takeMeta(e, metaOrigin, metaSensitivity, metaReviewed)
	if len(taken) == 0 {
		return nil, nil
	}
	asked := &label.Label{}
	for _, p := range taken {
		switch p.Name {
		case metaOrigin:
			asked.Origin = p.Value
		case metaSensitivity:
			asked.Sensitivity = p.Value
		default:
			r, err := strconv.ParseBool(p.Value)
			if err != nil {
				return nil, errInvalidArgument("x-amz-meta-nas-reviewed must be true or false")
			}
			asked.Reviewed = r
		}
	}
	if err := asked.Validate(); err != nil {
		return nil, errInvalidArgument(err.Error())
	}
	return asked, nil
}

// takeMeta removes the pairs named names from e's metadata and returns
// them, in order.
func takeMeta(e *manifest.Entry, names ...string) []manifest.Pair {
	keep, taken := e.Meta[:0:0], []manifest.Pair(nil)
	for _, p := range e.Meta {
		if slices.Contains(names, p.Name) {
			taken = append(taken, p)
		} else {
			keep = append(keep, p)
		}
	}
	e.Meta = keep
	return taken
}

// labelWrite sets the label of a new version e written by the request:
// the one its metadata asks for, within what the writer may set, and
// secret when the scanner found credentials in the body.
func (s *Server) labelWrite(req *request, e *manifest.Entry, secret bool) error {
	asked, err := takeLabelMeta(e)
	if err != nil {
		return err
	}
	e.Label, err = s.auth.WriteLabel(req.ctx(), req.p, asked, secret)
	return err
}

// labelCopy sets the label of a copy: the source's effective labels
// joined with the writer's, or, with a REPLACE directive naming labels,
// those for the owner and their join for a lease.
func (s *Server) labelCopy(req *request, dst *manifest.Entry, from copySrc, src *manifest.Entry, replace bool) error {
	var asked *label.Label
	if replace {
		var err error
		if asked, err = takeLabelMeta(dst); err != nil {
			return err
		}
	}
	if asked != nil && req.p.IsOwner() {
		dst.Label = asked
		return nil
	}
	l, err := s.auth.CopyLabel(req.ctx(), req.p, auth.Target{Repo: from.repo, Branch: from.branch, Key: from.key}, src)
	if err != nil {
		return err
	}
	if asked != nil {
		j := label.Raise(label.Of(l), asked.Origin, asked.Sensitivity)
		l = &j
	}
	dst.Label = l
	return nil
}

// labelHeaders answers e's effective labels as metadata headers, when
// they are not the default (owner, private, not reviewed): clients that
// compare metadata see only their own on ordinary objects.
func (s *Server) labelHeaders(req *request, h http.Header, e *manifest.Entry) {
	l, err := s.auth.Effective(req.ctx(), req.p, req.repo, req.key, e)
	if err != nil || l == (label.Label{}).Norm() {
		return // the default, owner and private, is not spelled out
	}
	h.Set("X-Amz-Meta-"+metaOrigin, l.Origin)
	h.Set("X-Amz-Meta-"+metaSensitivity, l.Sensitivity)
	h.Set("X-Amz-Meta-"+metaReviewed, strconv.FormatBool(l.Reviewed))
}

// secretScanLimit bounds the bytes of one body the secret scanner reads:
// credentials past the first 64 MiB of an object are not looked for (a
// documented limit), so a large upload pays for the scan once.
const secretScanLimit = 64 << 20

// secretScan is the secret scanner over the first secretScanLimit bytes
// of a body.
type secretScan struct {
	sc   *secret.Scanner
	seen int64
}

func newSecretScan() *secretScan { return &secretScan{sc: secret.New()} }

// Write scans p, up to the limit; it never fails.
func (s *secretScan) Write(p []byte) (int, error) {
	if room := secretScanLimit - s.seen; room > 0 {
		s.sc.Write(p[:min(int64(len(p)), room)])
		s.seen += int64(len(p))
	}
	return len(p), nil
}

// found reports whether the scanner found credentials.
func (s *secretScan) found() bool { return s.sc.Found() }

// partLabels are the stored labels of parts (nil for a part without).
func partLabels(parts []branch.PartInfo) []*label.Label {
	out := make([]*label.Label, 0, len(parts))
	for _, p := range parts {
		if p.Entry != nil {
			out = append(out, p.Entry.Label)
		}
	}
	return out
}

// labelParts sets the label of the object completed from parts: the
// write's (asked for at creation, secret when a credential crosses a
// joint) joined with every part's.
func (s *Server) labelParts(req *request, e *manifest.Entry, parts []branch.PartInfo) error {
	if err := s.labelWrite(req, e, jointSecret(parts)); err != nil {
		return err
	}
	e.Label = auth.PartsLabel(e.Label, partLabels(parts)...)
	return nil
}

// labelPartCopy sets the label of a part copied from src: the source's
// effective labels joined with the writer's (as a copy's), secret when
// the scanner found credentials in the range.
func (s *Server) labelPartCopy(req *request, part *manifest.Entry, from copySrc, src *manifest.Entry, secret bool) error {
	l, err := s.auth.CopyLabel(req.ctx(), req.p, auth.Target{Repo: from.repo, Branch: from.branch, Key: from.key}, src)
	if err != nil {
		return fmt.Errorf("label of the part copied from %s: %w", from.key, err)
	}
	if secret {
		j := label.Raise(label.Of(l), "", label.Secret)
		l = &j
	}
	part.Label = l
	return nil
}

// handoff holds a lease's write under a handoff glob to the owner's JSON
// Schema: one that validates is labelled reviewed (declassified), one
// that does not is refused.
func (s *Server) handoff(req *request, e *manifest.Entry, in *ingested) error {
	if in.captured == nil {
		return nil // no handoff glob matched when the body arrived
	}
	if err := auth.HandoffCheck(in.captured.h, in.size, in.captured.Bytes()); err != nil {
		return err
	}
	l := label.Of(e.Label)
	l.Reviewed = true
	e.Label = &l
	return nil
}

// capture keeps the first max bytes written to it, for handoff h.
type capture struct {
	bytes.Buffer
	max int
	h   *auth.Handoff
}

// Write keeps what fits; it never fails.
func (c *capture) Write(p []byte) (int, error) {
	if room := c.max - c.Len(); room > 0 {
		c.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// newCapture is a capture of a lease's body under a handoff glob (the
// document is validated once stored), or nil.
func (s *Server) newCapture(req *request) (*capture, error) {
	h, err := s.auth.HandoffFor(req.ctx(), req.p, auth.Target{Repo: req.repo, Branch: req.branch, Key: req.key})
	if err != nil || h == nil {
		return nil, err
	}
	return &capture{max: auth.MaxHandoffDoc + 1, h: h}, nil
}

// edgeCapture keeps the ends of a part's body for the joint scan at
// completion: the first 2*secret.Edge bytes and the last secret.Edge, so
// a part stores at most 2*secret.Edge (1152) bytes of them, and an
// upload of 10000 parts about 11.5 MB, read once at completion.
type edgeCapture struct {
	head []byte // up to 2*secret.Edge first bytes
	tail []byte // the last up to secret.Edge bytes
	n    int64
}

func newEdgeCapture() *edgeCapture {
	return &edgeCapture{head: make([]byte, 0, 2*secret.Edge), tail: make([]byte, 0, secret.Edge)}
}

// Write keeps p's bytes that fall in the two ends; it never fails.
func (c *edgeCapture) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	c.head = append(c.head, p[:min(len(p), cap(c.head)-len(c.head))]...)
	if len(p) >= secret.Edge {
		c.tail = append(c.tail[:0], p[len(p)-secret.Edge:]...)
	} else {
		drop := max(len(c.tail)+len(p)-secret.Edge, 0)
		c.tail = append(c.tail[:copy(c.tail, c.tail[drop:])], p...)
	}
	return len(p), nil
}

// edges are the ends to store: the whole body when it is short.
func (c *edgeCapture) edges() *manifest.Edges {
	if c.n <= 2*secret.Edge {
		return &manifest.Edges{Head: c.head}
	}
	return &manifest.Edges{Head: c.head[:secret.Edge], Tail: c.tail}
}

// jointSecret reports whether a credential crosses a joint between the
// parts, in their final order, scanning only their stored edges (a part
// stored without them is a gap).
func jointSecret(parts []branch.PartInfo) bool {
	sc := secret.New()
	for _, p := range parts {
		x := p.Entry.Edges
		switch {
		case x == nil:
			sc.Gap()
		case len(x.Tail) == 0:
			sc.Write(x.Head)
		default:
			sc.Write(x.Head)
			sc.Gap()
			sc.Write(x.Tail)
		}
	}
	return sc.Found()
}
