package s3api

import (
	"encoding/base64"
	"encoding/xml"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"sync"

	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/manifest"
)

type objectDoc struct {
	Key               string `xml:"Key"`
	LastModified      string `xml:"LastModified"`
	ETag              string `xml:"ETag"`
	ChecksumAlgorithm string `xml:"ChecksumAlgorithm,omitempty"`
	ChecksumType      string `xml:"ChecksumType,omitempty"`
	Size              int64  `xml:"Size"`
	StorageClass      string `xml:"StorageClass"`
	Owner             *owner `xml:"Owner,omitempty"`
}

type prefixDoc struct {
	Prefix string `xml:"Prefix"`
}

type listBucketResult struct {
	XMLName               xml.Name    `xml:"ListBucketResult"`
	Xmlns                 string      `xml:"xmlns,attr"`
	Name                  string      `xml:"Name"`
	Prefix                string      `xml:"Prefix"`
	Marker                *string     `xml:"Marker,omitempty"`
	NextMarker            string      `xml:"NextMarker,omitempty"`
	ContinuationToken     *string     `xml:"ContinuationToken,omitempty"`
	NextContinuationToken string      `xml:"NextContinuationToken,omitempty"`
	StartAfter            string      `xml:"StartAfter,omitempty"`
	KeyCount              *int        `xml:"KeyCount,omitempty"`
	MaxKeys               int         `xml:"MaxKeys"`
	Delimiter             string      `xml:"Delimiter,omitempty"`
	EncodingType          string      `xml:"EncodingType,omitempty"`
	IsTruncated           bool        `xml:"IsTruncated"`
	Contents              []objectDoc `xml:"Contents"`
	CommonPrefixes        []prefixDoc `xml:"CommonPrefixes"`
}

// maxKeys parses a max-keys style parameter: default def, capped at 1000.
func maxKeys(v string, def int) (int, error) {
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, errInvalidMaxKeys()
	}
	return min(n, 1000), nil
}

func encodingType(q string) (encoder, error) {
	switch q {
	case "":
		return false, nil
	case "url":
		return true, nil
	}
	return false, errInvalidEncodingType()
}

func (s *Server) listObjects(req *request, v2 bool) error {
	q := req.query
	enc, err := encodingType(q.Get("encoding-type"))
	if err != nil {
		return err
	}
	max, err := maxKeys(q.Get("max-keys"), 1000)
	if err != nil {
		return err
	}
	if err := s.allow(req, lease.List, req.repo, req.branch, "", nil); err != nil {
		return err
	}
	o := branch.ListOptions{Prefix: q.Get("prefix"), Delimiter: q.Get("delimiter"), MaxKeys: max, Filter: s.listFilter(req)}
	doc := listBucketResult{Xmlns: s3ns, Name: req.bucket, Prefix: o.Prefix, MaxKeys: max,
		Delimiter: enc.enc(o.Delimiter), Contents: []objectDoc{}}
	if enc {
		doc.EncodingType = "url"
	}
	if v2 {
		// Version 2 encodes the prefix; version 1 sends it as given (so
		// clients decode exactly the fields S3 encodes).
		doc.Prefix = enc.enc(o.Prefix)
		o.After = q.Get("start-after")
		doc.StartAfter = enc.enc(o.After)
		if q.Has("continuation-token") {
			tok := q.Get("continuation-token")
			doc.ContinuationToken = &tok
		}
		if tok := q.Get("continuation-token"); tok != "" {
			after, err := base64.RawURLEncoding.DecodeString(tok)
			if err != nil {
				return errInvalidArgument("The continuation token provided is incorrect")
			}
			o.After = string(after)
		}
	} else {
		o.After = q.Get("marker")
		m := enc.enc(o.After)
		doc.Marker = &m
	}
	var res *branch.ListResult
	if max > 0 {
		if res, err = s.b.List(req.ctx(), req.repo, req.branch, o); err != nil {
			return err
		}
	} else {
		if err := s.requireBranch(req); err != nil {
			return err
		}
		res = &branch.ListResult{}
	}
	fetchOwner := !v2 || q.Get("fetch-owner") == "true"
	for _, obj := range res.Objects {
		d := objectDocOf(enc.enc(obj.Key), obj.Entry)
		if fetchOwner {
			d.Owner = s.ownerDoc()
		}
		doc.Contents = append(doc.Contents, d)
	}
	for _, p := range res.CommonPrefixes {
		doc.CommonPrefixes = append(doc.CommonPrefixes, prefixDoc{Prefix: enc.enc(p)})
	}
	doc.IsTruncated = res.Truncated
	if v2 {
		n := len(res.Objects) + len(res.CommonPrefixes)
		doc.KeyCount = &n
		if res.Truncated {
			doc.NextContinuationToken = base64.RawURLEncoding.EncodeToString([]byte(res.Next))
		}
	} else if res.Truncated && o.Delimiter != "" {
		doc.NextMarker = enc.enc(res.Next)
	}
	return s.writeXML(req, http.StatusOK, doc)
}

func objectDocOf(key string, e *manifest.Entry) objectDoc {
	d := objectDoc{Key: key, LastModified: isoTime(e.ModTime), ETag: quote(e.ETag), Size: e.Size, StorageClass: "STANDARD"}
	if e.ChecksumAlgorithm != "" {
		d.ChecksumAlgorithm, d.ChecksumType = e.ChecksumAlgorithm, e.ChecksumType
	}
	return d
}

// versionEntry is a <Version> or <DeleteMarker> element.
type versionEntry struct {
	XMLName      xml.Name
	Key          string `xml:"Key"`
	VersionID    string `xml:"VersionId"`
	IsLatest     bool   `xml:"IsLatest"`
	LastModified string `xml:"LastModified"`
	ETag         string `xml:"ETag,omitempty"`
	Size         *int64 `xml:"Size,omitempty"`
	StorageClass string `xml:"StorageClass,omitempty"`
	Owner        *owner `xml:"Owner"`
}

type listVersionsResult struct {
	XMLName             xml.Name       `xml:"ListVersionsResult"`
	Xmlns               string         `xml:"xmlns,attr"`
	Name                string         `xml:"Name"`
	Prefix              string         `xml:"Prefix"`
	KeyMarker           string         `xml:"KeyMarker"`
	VersionIDMarker     string         `xml:"VersionIdMarker"`
	NextKeyMarker       string         `xml:"NextKeyMarker,omitempty"`
	NextVersionIDMarker string         `xml:"NextVersionIdMarker,omitempty"`
	MaxKeys             int            `xml:"MaxKeys"`
	Delimiter           string         `xml:"Delimiter,omitempty"`
	EncodingType        string         `xml:"EncodingType,omitempty"`
	IsTruncated         bool           `xml:"IsTruncated"`
	Entries             []versionEntry `xml:",any"`
	CommonPrefixes      []prefixDoc    `xml:"CommonPrefixes"`
}

func (s *Server) listVersions(req *request) error {
	q := req.query
	enc, err := encodingType(q.Get("encoding-type"))
	if err != nil {
		return err
	}
	max, err := maxKeys(q.Get("max-keys"), 1000)
	if err != nil {
		return err
	}
	if err := s.allow(req, lease.List, req.repo, req.branch, "", nil); err != nil {
		return err
	}
	o := branch.VersionListOptions{Prefix: q.Get("prefix"), Delimiter: q.Get("delimiter"),
		KeyMarker: q.Get("key-marker"), VersionIDMarker: q.Get("version-id-marker"), MaxKeys: max, Filter: s.listFilter(req)}
	res, err := s.b.ListVersions(req.ctx(), req.repo, req.branch, o)
	if err != nil {
		return err
	}
	doc := listVersionsResult{Xmlns: s3ns, Name: req.bucket, Prefix: enc.enc(o.Prefix), KeyMarker: enc.enc(o.KeyMarker),
		VersionIDMarker: o.VersionIDMarker, MaxKeys: max, Delimiter: enc.enc(o.Delimiter), IsTruncated: res.Truncated,
		NextKeyMarker: enc.enc(res.NextKeyMarker), NextVersionIDMarker: res.NextVersionIDMarker}
	if enc {
		doc.EncodingType = "url"
	}
	for _, v := range res.Versions {
		e := versionEntry{Key: enc.enc(v.Key), VersionID: v.VersionID, IsLatest: v.IsLatest,
			LastModified: isoTime(v.ModTime), Owner: s.ownerDoc()}
		if v.DeleteMarker {
			e.XMLName.Local = "DeleteMarker"
		} else {
			e.XMLName.Local = "Version"
			e.ETag, e.StorageClass = quote(v.Entry.ETag), "STANDARD"
			size := v.Entry.Size
			e.Size = &size
		}
		doc.Entries = append(doc.Entries, e)
	}
	for _, p := range res.CommonPrefixes {
		doc.CommonPrefixes = append(doc.CommonPrefixes, prefixDoc{Prefix: enc.enc(p)})
	}
	return s.writeXML(req, http.StatusOK, doc)
}

type deleteRequest struct {
	XMLName xml.Name       `xml:"Delete"`
	Quiet   bool           `xml:"Quiet"`
	Objects []deleteObject `xml:"Object"`
}

// deleteObject is one key DeleteObjects names.
type deleteObject struct {
	Key       string `xml:"Key"`
	VersionID string `xml:"VersionId"`
}

type deletedDoc struct {
	Key                   string `xml:"Key"`
	VersionID             string `xml:"VersionId,omitempty"`
	DeleteMarker          bool   `xml:"DeleteMarker,omitempty"`
	DeleteMarkerVersionID string `xml:"DeleteMarkerVersionId,omitempty"`
}

type deleteErrorDoc struct {
	Key       string `xml:"Key"`
	VersionID string `xml:"VersionId,omitempty"`
	Code      string `xml:"Code"`
	Message   string `xml:"Message"`
}

type deleteResult struct {
	XMLName xml.Name         `xml:"DeleteResult"`
	Xmlns   string           `xml:"xmlns,attr"`
	Deleted []deletedDoc     `xml:"Deleted"`
	Errors  []deleteErrorDoc `xml:"Error"`
}

// deleteObjects is DeleteObjects: up to 1000 keys, each answered on its
// own. Every key is authorized first, in order; the deletes are then
// recorded together (the recorder writes concurrent appends in one
// transaction) and the keys without a version deleted in one transaction
// of the branch, so a batch costs a few durable writes, not two per key.
func (s *Server) deleteObjects(req *request) error {
	var d deleteRequest
	if err := readBodyChecked(req, 2<<20, &d); err != nil {
		return err
	}
	if len(d.Objects) == 0 || len(d.Objects) > 1000 {
		return errMalformedXML("The XML you provided was not well-formed or did not validate against our published schema.")
	}
	outs := make([]deleteOutcome, len(d.Objects))
	var todo []int // the keys to delete, in order
	for i, o := range d.Objects {
		if len(o.Key) == 0 || len(o.Key) > 1024 {
			outs[i].err = errKeyTooLong()
		} else if aerr := s.allow(req, lease.Delete, req.repo, req.branch, o.Key, noSuchKey()); aerr != nil {
			// A key outside the lease does not exist for it: deleting it
			// succeeds and changes nothing, as for any missing key.
			if e := toS3(aerr); e.Code != "NoSuchKey" {
				outs[i].err = aerr
			}
		} else {
			todo = append(todo, i)
		}
	}
	todo = s.recordDeletes(req, d.Objects, todo, outs)
	if err := s.deleteAll(req, d.Objects, todo, outs); err != nil {
		return err
	}
	return s.writeXML(req, http.StatusOK, deleteDoc(d, outs))
}

// deleteOutcome is what DeleteObjects did with one key.
type deleteOutcome struct {
	res branch.DeleteResult
	err error
}

// recordDeletes records the deletes of d's objects todo, side by side,
// and returns those recorded (a delete not recorded is not performed).
func (s *Server) recordDeletes(req *request, objs []deleteObject, todo []int, outs []deleteOutcome) []int {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for _, i := range todo {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			outs[i].err = s.recordDelete(req, objs[i].Key, objs[i].VersionID)
		})
	}
	wg.Wait()
	return slices.DeleteFunc(todo, func(i int) bool { return outs[i].err != nil })
}

// deleteAll deletes the recorded objects todo: those without a version in
// one transaction, versions one by one. Only a missing bucket fails the
// request.
func (s *Server) deleteAll(req *request, objs []deleteObject, todo []int, outs []deleteOutcome) error {
	var plain []int
	var keys []string
	for _, i := range todo {
		if objs[i].VersionID != "" {
			outs[i].res, outs[i].err = s.deleteOne(req, objs[i].Key, objs[i].VersionID)
			if outs[i].err != nil && isBucketMissing(outs[i].err) {
				return outs[i].err
			}
			continue
		}
		plain, keys = append(plain, i), append(keys, objs[i].Key)
	}
	if len(plain) == 0 {
		return nil
	}
	cond, err := s.auth.Condition(req.ctx(), req.p, auth.Target{Repo: req.repo, Branch: req.branch}, branch.Condition{})
	if err != nil {
		for _, i := range plain {
			outs[i].err = err
		}
		return nil
	}
	for n, r := range s.b.DeleteKeys(req.ctx(), req.repo, req.branch, keys, cond) {
		if r.Err != nil && isBucketMissing(r.Err) {
			return r.Err
		}
		outs[plain[n]].res, outs[plain[n]].err = r.DeleteResult, r.Err
	}
	return nil
}

// deleteDoc is DeleteObjects' answer for outs.
func deleteDoc(d deleteRequest, outs []deleteOutcome) deleteResult {
	doc := deleteResult{Xmlns: s3ns}
	for i, o := range d.Objects {
		if err := outs[i].err; err != nil {
			e := toS3(err)
			doc.Errors = append(doc.Errors, deleteErrorDoc{Key: o.Key, VersionID: o.VersionID, Code: e.Code, Message: e.Message})
			continue
		}
		if d.Quiet {
			continue
		}
		res := outs[i].res
		dd := deletedDoc{Key: o.Key}
		if o.VersionID != "" {
			dd.VersionID = o.VersionID
			dd.DeleteMarker = res.DeleteMarker
		} else if res.DeleteMarker {
			dd.DeleteMarker, dd.DeleteMarkerVersionID = true, res.VersionID
		}
		doc.Deleted = append(doc.Deleted, dd)
	}
	return doc
}

func isBucketMissing(err error) bool {
	return errors.Is(err, branch.ErrNoSuchRepo) || errors.Is(err, branch.ErrNoSuchBranch)
}

// listFilter restricts a listing to what the request's lease may list.
func (s *Server) listFilter(req *request) *branch.Filter {
	return s.auth.ListFilter(req.ctx(), req.p, req.repo, lease.List)
}

// deleteOne deletes key (the version vid, when set) for DeleteObjects,
// under the door's veil; a missing version is deleted already.
func (s *Server) deleteOne(req *request, key, vid string) (branch.DeleteResult, error) {
	cond, err := s.auth.Condition(req.ctx(), req.p, auth.Target{Repo: req.repo, Branch: req.branch, Key: key}, branch.Condition{})
	if err != nil {
		return branch.DeleteResult{}, err
	}
	if vid == "" {
		return s.b.Delete(req.ctx(), req.repo, req.branch, key, cond)
	}
	res, err := s.b.DeleteVersion(req.ctx(), req.repo, req.branch, key, vid, cond)
	if isNotFound(err) && !isBucketMissing(err) {
		return branch.DeleteResult{VersionID: vid}, nil
	}
	return res, err
}
