package s3api

import (
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/manifest"
)

// S3's limits on tag sets.
const (
	maxObjectTags  = 10
	maxBucketTags  = 50
	maxTagKeyLen   = 128 // Unicode characters
	maxTagValueLen = 256
	taggingDoc     = "tagging" // the repository configuration document of bucket tags
)

// tagging is the Tagging document of the tagging subresource, for
// objects and buckets alike.
type tagging struct {
	XMLName xml.Name `xml:"Tagging"`
	Xmlns   string   `xml:"xmlns,attr,omitempty"`
	TagSet  []tag    `xml:"TagSet>Tag"`
}

// tag is one Tag of a TagSet.
type tag struct {
	Key   string `xml:"Key"`
	Value string `xml:"Value"`
}

func errInvalidTag(msg string) *Error { return s3err(http.StatusBadRequest, "InvalidTag", msg) }

func errNoSuchTagSet() *Error {
	return s3err(http.StatusNotFound, "NoSuchTagSet", "The TagSet does not exist")
}

// tagLimit is how many tags a set may hold, and S3's message for more.
type tagLimit struct {
	max     int
	tooMany string
}

var (
	objectTagLimit = tagLimit{maxObjectTags, "Object tags cannot be greater than 10"}
	bucketTagLimit = tagLimit{maxBucketTags, "Bucket tag count cannot be greater than 50"}
)

// validTags checks a tag set against S3's limits (at most lim.max tags,
// keys of 1 to 128 characters not starting with "aws:", values of up to
// 256, no key twice) and returns it as entry pairs sorted by key.
func validTags(tags []tag, lim tagLimit) ([]manifest.Pair, error) {
	if len(tags) > lim.max {
		return nil, errInvalidTag(lim.tooMany)
	}
	out := make([]manifest.Pair, 0, len(tags))
	for _, t := range tags {
		if err := validTag(t); err != nil {
			return nil, err
		}
		out = append(out, manifest.Pair{Name: t.Key, Value: t.Value})
	}
	slices.SortFunc(out, func(a, b manifest.Pair) int { return strings.Compare(a.Name, b.Name) })
	for i := 1; i < len(out); i++ {
		if out[i].Name == out[i-1].Name {
			return nil, errInvalidTag("Cannot provide multiple Tags with the same key")
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// validTag checks one tag's key and value.
func validTag(t tag) error {
	if t.Key == "" || !utf8.ValidString(t.Key) || utf8.RuneCountInString(t.Key) > maxTagKeyLen {
		return errInvalidTag("The TagKey you have provided is invalid")
	}
	if !utf8.ValidString(t.Value) || utf8.RuneCountInString(t.Value) > maxTagValueLen {
		return errInvalidTag("The TagValue you have provided is invalid")
	}
	if strings.HasPrefix(strings.ToLower(t.Key), "aws:") {
		return errInvalidTag("Your TagKey cannot be prefixed with aws:")
	}
	return nil
}

// parseTaggingHeader reads the x-amz-tagging header: a URL-query-encoded
// tag set ("k1=v1&k2=v2"). No header gives no tags.
func parseTaggingHeader(h http.Header) ([]manifest.Pair, error) {
	v := h.Get("x-amz-tagging")
	if v == "" {
		return nil, nil
	}
	q, err := url.ParseQuery(v)
	if err != nil {
		return nil, errInvalidArgument("The header 'x-amz-tagging' shall be encoded as UTF-8 then URLEncoded URL query parameters without tag name duplicates.")
	}
	tags := make([]tag, 0, len(q))
	for k, vs := range q {
		if len(vs) != 1 {
			return nil, errInvalidArgument("The header 'x-amz-tagging' shall be encoded as UTF-8 then URLEncoded URL query parameters without tag name duplicates.")
		}
		tags = append(tags, tag{Key: k, Value: vs[0]})
	}
	return validTags(tags, objectTagLimit)
}

// readTagging reads and checks a Tagging request body.
func readTagging(req *request, lim tagLimit) ([]manifest.Pair, error) {
	var doc tagging
	if err := readBodyChecked(req, 64<<10, &doc); err != nil {
		return nil, err
	}
	return validTags(doc.TagSet, lim)
}

// taggingOf is the Tagging document of pairs.
func taggingOf(pairs []manifest.Pair) tagging {
	doc := tagging{Xmlns: s3ns, TagSet: []tag{}}
	for _, p := range pairs {
		doc.TagSet = append(doc.TagSet, tag{Key: p.Name, Value: p.Value})
	}
	return doc
}

// setTaggingCount sets x-amz-tagging-count when e has tags.
func setTaggingCount(h http.Header, e *manifest.Entry) {
	if len(e.Tags) > 0 {
		h.Set("x-amz-tagging-count", strconv.Itoa(len(e.Tags)))
	}
}

// getObjectTagging answers GetObjectTagging: the tag set of the current
// version, or of versionId.
func (s *Server) getObjectTagging(req *request) error {
	e, err := s.readVersion(req)
	if err != nil {
		return err
	}
	return s.writeXML(req, http.StatusOK, taggingOf(e.Tags))
}

// readVersion authorizes reading the addressed object's metadata (a
// probe, as HEAD: a single-use grant is left for the GET) and finds the
// version a subresource GET (tags, ACL, attributes) names: versionId,
// else the current one, whose ID the answer carries.
func (s *Server) readVersion(req *request) (*manifest.Entry, error) {
	if err := s.probe(req, req.repo, req.branch, req.key, noSuchKey()); err != nil {
		return nil, err
	}
	e, err := s.resolve(req, req.repo, req.branch, req.key, req.query.Get("versionId"))
	if err != nil {
		return nil, err
	}
	if e.VersionID != "" {
		req.w.Header().Set("x-amz-version-id", e.VersionID)
	}
	return e, nil
}

// putObjectTagging answers PutObjectTagging, and DeleteObjectTagging
// when del is set: the version gets the new tag set, keeping its bytes
// and version ID (see branch.Service.SetTags for which versions can).
func (s *Server) putObjectTagging(req *request, del bool) error {
	if err := s.allow(req, lease.Write, req.repo, req.branch, req.key, noSuchKey()); err != nil {
		return err
	}
	var tags []manifest.Pair
	if !del {
		var err error
		if tags, err = readTagging(req, objectTagLimit); err != nil {
			return err
		}
	}
	vid, err := s.taggedVersion(req)
	if err != nil {
		return err
	}
	e, err := s.b.SetTags(req.ctx(), req.repo, req.branch, req.key, vid, tags, req.p.Writer())
	if err != nil {
		return err
	}
	if del {
		return answerRetouched(req, e, http.StatusNoContent)
	}
	return answerRetouched(req, e, http.StatusOK)
}

// answerRetouched answers a change of a version's tags or ACL: the version
// it changed, and status.
func answerRetouched(req *request, e *manifest.Entry, status int) error {
	if e.VersionID != "" {
		req.w.Header().Set("x-amz-version-id", e.VersionID)
	}
	req.started = true
	req.w.WriteHeader(status)
	return nil
}

// taggedVersion is the version ID a tagging write addresses: "" for the
// current version; a versionId that is a delete marker answers as S3 does
// (405), one that is a commit ID names the version the key had then.
func (s *Server) taggedVersion(req *request) (string, error) {
	vid := req.query.Get("versionId")
	if vid == "" {
		return "", nil
	}
	e, err := s.resolve(req, req.repo, req.branch, req.key, vid)
	if err != nil {
		return "", err
	}
	if _, perr := manifest.ParseCommitID(vid); perr == nil {
		return vid, nil // history: SetTags refuses it
	}
	return e.VersionID, nil
}

// getBucketTagging answers GetBucketTagging; a bucket without tags is
// NoSuchTagSet, as on S3.
func (s *Server) getBucketTagging(req *request) error {
	if err := s.bucketConfig(req); err != nil {
		return err
	}
	b, err := s.b.RepoConfig(req.ctx(), req.repo, taggingDoc)
	if errors.Is(err, branch.ErrNoSuchConfig) {
		return errNoSuchTagSet()
	}
	if err != nil {
		return err
	}
	var doc tagging
	if err := xml.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("bucket tagging of %s: %w", req.repo, manifest.ErrCorrupt)
	}
	doc.Xmlns = s3ns
	return s.writeXML(req, http.StatusOK, doc)
}

// putBucketTagging answers PutBucketTagging, and DeleteBucketTagging when
// del is set.
func (s *Server) putBucketTagging(req *request, del bool) error {
	if err := s.bucketConfig(req); err != nil {
		return err
	}
	if del {
		if err := s.b.DeleteRepoConfig(req.ctx(), req.repo, taggingDoc); err != nil {
			return err
		}
	} else if err := s.storeBucketTagging(req); err != nil {
		return err
	}
	req.started = true
	req.w.WriteHeader(http.StatusNoContent)
	return nil
}

// storeBucketTagging reads the request's tag set and stores it; an empty
// set removes the bucket's tags.
func (s *Server) storeBucketTagging(req *request) error {
	tags, err := readTagging(req, bucketTagLimit)
	if err != nil {
		return err
	}
	if len(tags) == 0 {
		return s.b.DeleteRepoConfig(req.ctx(), req.repo, taggingDoc)
	}
	doc := taggingOf(tags)
	doc.Xmlns = ""
	b, err := xml.Marshal(doc)
	if err != nil {
		return err
	}
	return s.b.SetRepoConfig(req.ctx(), req.repo, taggingDoc, b)
}

// bucketConfig admits a request for bucket configuration: the owner's
// only, on a bucket that exists.
func (s *Server) bucketConfig(req *request) error {
	if err := s.ownerOnly(req, req.r.Method+" bucket configuration"); err != nil {
		return err
	}
	return s.requireBranch(req)
}
