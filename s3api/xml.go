package s3api

import (
	"encoding/xml"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

const s3ns = "http://s3.amazonaws.com/doc/2006-03-01/"

// writeXML writes status and v as an XML document.
func (s *Server) writeXML(req *request, status int, v any) error {
	// The request's refusals are recorded before the client hears back.
	s.auth.Finish(req.ctx(), req.p)
	b, err := xml.Marshal(v)
	if err != nil {
		return err
	}
	h := req.w.Header()
	h.Set("Content-Type", "application/xml")
	h.Set("Content-Length", strconv.Itoa(len(xml.Header)+len(b)))
	req.started = true
	req.w.WriteHeader(status)
	io.WriteString(req.w, xml.Header)
	req.w.Write(b)
	return nil
}

type errorDoc struct {
	XMLName    xml.Name `xml:"Error"`
	Code       string   `xml:"Code"`
	Message    string   `xml:"Message"`
	Key        string   `xml:"Key,omitempty"`
	BucketName string   `xml:"BucketName,omitempty"`
	VersionID  string   `xml:"VersionId,omitempty"`
	Resource   string   `xml:"Resource"`
	RequestID  string   `xml:"RequestId"`
	HostID     string   `xml:"HostId"`
}

// keepOnError are the headers an error response may carry; object headers
// set before the failure (ETag, checksums, version, metadata) are dropped.
// The bucket's CORS headers stay, so a page can read its error as S3
// allows.
var keepOnError = map[string]bool{"X-Amz-Request-Id": true, "X-Amz-Id-2": true, "Server": true, "X-Nas-Lease-Expires": true,
	"Access-Control-Allow-Origin": true, "Access-Control-Allow-Methods": true, "Access-Control-Expose-Headers": true,
	"Access-Control-Allow-Credentials": true, "Vary": true}

func (s *Server) writeError(req *request, e *Error) {
	s.auth.Finish(req.ctx(), req.p)
	h := req.w.Header()
	notModified := e.Status == http.StatusNotModified
	for k := range h {
		if notModified && (k == "Etag" || k == "Last-Modified") {
			continue // a 304 names the version the client already has
		}
		if !keepOnError[k] && !strings.HasPrefix(k, "X-Nas-Budget-") {
			delete(h, k)
		}
	}
	for k, vs := range e.Header {
		h[k] = vs
	}
	if e.Status == http.StatusNotModified {
		req.started = true
		req.w.WriteHeader(e.Status)
		return
	}
	if e.Code == "InvalidRange" {
		h.Set("Accept-Ranges", "bytes")
	}
	if req.r.Method == http.MethodHead {
		// HEAD responses carry no body; the status and headers say it.
		h.Set("x-amz-error-code", e.Code)
		req.started = true
		req.w.WriteHeader(e.Status)
		return
	}
	doc := errorDoc{Code: e.Code, Message: e.Message, Key: e.Key, BucketName: e.Bucket, VersionID: e.VersionID,
		Resource: req.r.URL.EscapedPath(), RequestID: req.id, HostID: req.id}
	if doc.Key == "" && (e.Code == "NoSuchKey" || e.Code == "NoSuchVersion") {
		doc.Key = req.key
	}
	if doc.BucketName == "" && (e.Code == "NoSuchBucket" || e.Code == "BucketNotEmpty" || e.Code == "BucketAlreadyOwnedByYou") {
		doc.BucketName = req.bucket
	}
	h.Del("ETag")
	h.Del("Last-Modified")
	_ = s.writeXML(req, e.Status, doc)
}

// isoTime formats t as S3 does in XML bodies.
func isoTime(ns int64) string {
	return time.Unix(0, ns).UTC().Format("2006-01-02T15:04:05.000Z")
}

// httpTime formats t for Last-Modified (second precision).
func httpTime(ns int64) string {
	return time.Unix(0, ns).UTC().Format(http.TimeFormat)
}

func quote(etag string) string { return `"` + etag + `"` }

// encoder applies encoding-type=url to keys and prefixes in listings.
type encoder bool

func (e encoder) enc(s string) string {
	if !e {
		return s
	}
	// S3 escapes a space as %20, never as "+" (a literal "+" is %2B).
	s = strings.ReplaceAll(url.QueryEscape(s), "+", "%20")
	return strings.ReplaceAll(s, "%2F", "/")
}

type owner struct {
	ID          string `xml:"ID"`
	DisplayName string `xml:"DisplayName"`
}

func (s *Server) ownerDoc() *owner { return &owner{ID: s.ownerID, DisplayName: "owner"} }
