package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/agentnas/nas/adapter"
)

// headConcurrency bounds the HEAD requests of one listing in flight.
const headConcurrency = 8

// maxRedirects bounds the redirects followed for one request.
const maxRedirects = 5

// server shows HTTP resources as objects.
type server struct {
	client *http.Client
	log    *slog.Logger
	fixed  []resource // --url
	index  *url.URL   // --index

	mu    sync.Mutex
	known map[string]*url.URL // key -> URL, of the last index read

	listing adapter.Listing // of the last list from the start, for its next pages
}

func newServer(o options, log *slog.Logger) (*server, error) {
	s := &server{client: newClient(o.timeout), log: log, known: map[string]*url.URL{}}
	if o.index != "" {
		u, err := parseHTTPURL(o.index)
		if err != nil {
			return nil, err
		}
		s.index = u
		return s, nil
	}
	rs, err := urlResources(o.urls)
	if err != nil {
		return nil, err
	}
	s.fixed = rs
	for _, r := range rs {
		s.known[r.key] = r.url
	}
	return s, nil
}

// newClient is an HTTP client that bounds connecting and waiting for
// headers by timeout but not reading a body (a large object may take
// long; the gateway kills an adapter that stalls), asks for bytes as
// stored (no transparent gzip, which would break sizes and ranges), and
// follows redirects only within the same scheme and host.
func newClient(timeout time.Duration) *http.Client {
	tr := &http.Transport{
		Proxy:                  http.ProxyFromEnvironment,
		DialContext:            (&net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:    timeout,
		ResponseHeaderTimeout:  timeout,
		ExpectContinueTimeout:  time.Second,
		IdleConnTimeout:        90 * time.Second,
		MaxIdleConnsPerHost:    headConcurrency,
		MaxResponseHeaderBytes: 64 << 10,
		DisableCompression:     true,
	}
	return &http.Client{Transport: tr, CheckRedirect: sameHostRedirect}
}

// errRedirect is a redirect to another host, refused.
var errRedirect = errors.New("redirect refused")

// sameHostRedirect refuses a redirect to another scheme or host: the
// owner named the hosts the adapter reads from, and a resource that moved
// elsewhere is not shown (the refusal is logged as the request's error).
func sameHostRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("more than %d redirects", maxRedirects)
	}
	if first := via[0].URL; req.URL.Scheme != first.Scheme || req.URL.Host != first.Host {
		return fmt.Errorf("%w from %s to %s://%s: the adapter reads only the hosts it was given", errRedirect, first.Host, req.URL.Scheme, req.URL.Host)
	}
	return nil
}

// Name implements adapter.Server.
func (s *server) Name() string { return "http" }

// List implements adapter.Server: a list from the start reads the index
// (in --index mode) and HEADs every resource; the pages after it are
// answered from that listing, so that one listing is one consistent set.
func (s *server) List(ctx context.Context, after string, limit int) ([]adapter.Object, bool, error) {
	return s.listing.List(ctx, after, limit, s.listAll)
}

// listAll HEADs every resource, headConcurrency at a time, and returns
// the objects in key order. A resource that cannot be shown (gone, no
// Content-Length, no ETag or Last-Modified) is skipped and logged; one
// that fails (5xx, timeout) fails the listing, which would otherwise tell
// the gateway it was deleted.
func (s *server) listAll(ctx context.Context) ([]adapter.Object, error) {
	rs, err := s.resources(ctx)
	if err != nil {
		return nil, err
	}
	objs := make([]*adapter.Object, len(rs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(headConcurrency)
	for i, r := range rs {
		g.Go(func() error {
			o, err := s.head(gctx, r)
			var e *adapter.Error
			if errors.As(err, &e) && e.Code == adapter.CodeNotFound {
				s.log.Warn("resource skipped", "key", r.key, "url", r.url.Redacted(), "why", e.Message)
				return nil
			}
			if err != nil {
				return err
			}
			objs[i] = &o
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var out []adapter.Object
	for _, o := range objs {
		if o != nil {
			out = append(out, *o)
		}
	}
	slices.SortFunc(out, func(a, b adapter.Object) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// resources are the resources now: the --url ones, or those the index
// page links to.
func (s *server) resources(ctx context.Context) ([]resource, error) {
	if s.index == nil {
		return s.fixed, nil
	}
	resp, err := s.do(ctx, http.MethodGet, s.index, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, unavailable("index %s: %s", s.index.Redacted(), resp.Status)
	}
	rs := indexResources(io.LimitReader(resp.Body, maxIndex), s.index, func(href string, err error) {
		s.log.Warn("index link skipped", "href", href, "why", err)
	})
	known := make(map[string]*url.URL, len(rs))
	for _, r := range rs {
		known[r.key] = r.url
	}
	s.mu.Lock()
	s.known = known
	s.mu.Unlock()
	return rs, nil
}

// lookup is the URL of key: as last known, else (--index) as the index
// now links it; false when there is no such key.
func (s *server) lookup(ctx context.Context, key string) (*url.URL, bool, error) {
	s.mu.Lock()
	u, ok := s.known[key]
	s.mu.Unlock()
	if ok || s.index == nil {
		return u, ok, nil
	}
	rs, err := s.resources(ctx)
	if err != nil {
		return nil, false, err
	}
	for _, r := range rs {
		if r.key == key {
			return r.url, true, nil
		}
	}
	return nil, false, nil
}

// Stat implements adapter.Server.
func (s *server) Stat(ctx context.Context, key string) (adapter.Object, error) {
	u, ok, err := s.lookup(ctx, key)
	if err != nil {
		return adapter.Object{}, err
	}
	if !ok {
		return adapter.Object{}, &adapter.Error{Code: adapter.CodeNotFound, Message: fmt.Sprintf("no object %q", key)}
	}
	return s.head(ctx, resource{key: key, url: u})
}

// head is what r is now; CodeNotFound when it is gone or cannot be shown.
func (s *server) head(ctx context.Context, r resource) (adapter.Object, error) {
	resp, err := s.do(ctx, http.MethodHead, r.url, nil)
	if err != nil {
		return adapter.Object{}, err
	}
	resp.Body.Close()
	switch {
	case resp.StatusCode >= 500:
		return adapter.Object{}, unavailable("HEAD %s: %s", r.url.Redacted(), resp.Status)
	case resp.StatusCode != http.StatusOK:
		return adapter.Object{}, notShown("HEAD %s: %s", r.url.Redacted(), resp.Status)
	}
	if ce := resp.Header.Get("Content-Encoding"); ce != "" && ce != "identity" {
		return adapter.Object{}, notShown("%s is served with Content-Encoding %s (its bytes and ranges are not the stored ones)", r.url.Redacted(), ce)
	}
	if resp.ContentLength < 0 || resp.ContentLength > adapter.MaxSize {
		return adapter.Object{}, notShown("%s has no Content-Length within 0-5 TiB", r.url.Redacted())
	}
	o := adapter.Object{Key: r.key, Size: resp.ContentLength, ContentType: contentType(resp.Header.Get("Content-Type"))}
	lm, lmErr := http.ParseTime(resp.Header.Get("Last-Modified"))
	if lmErr == nil {
		o.ModTime = lm.UTC()
	}
	switch etag := resp.Header.Get("ETag"); {
	case validETag(etag):
		o.Version = etag
	case lmErr == nil:
		o.Version = lm.UTC().Format(http.TimeFormat)
	default:
		return adapter.Object{}, notShown("%s has neither an ETag nor a Last-Modified, so it cannot be pinned", r.url.Redacted())
	}
	return o, nil
}

// maxContentType bounds a content type shown (a list page must fit
// adapter.MaxLine).
const maxContentType = 256

// contentType is ct when it is a plausible content type, else "".
func contentType(ct string) string {
	if len(ct) > maxContentType || strings.IndexFunc(ct, func(r rune) bool { return r < 0x20 || r >= 0x7f }) >= 0 {
		return ""
	}
	return ct
}

// validETag reports whether e is an entity tag ("x" or W/"x") that fits
// a version.
func validETag(e string) bool {
	o := strings.TrimPrefix(e, "W/")
	if len(e) > adapter.MaxVersion || len(o) < 2 || o[0] != '"' || o[len(o)-1] != '"' {
		return false
	}
	for _, c := range []byte(o[1 : len(o)-1]) {
		if c == '"' || c < 0x21 || c == 0x7f {
			return false
		}
	}
	return true
}

// Read implements adapter.Server with a ranged GET conditional on
// version: If-Match for a strong ETag, If-Unmodified-Since for a date (a
// weak ETag cannot be used in If-Match, which compares strongly); the
// validator of the answer is checked against version in every case.
func (s *server) Read(ctx context.Context, key, version string, off, n int64) (io.ReadCloser, int64, error) {
	u, ok, err := s.lookup(ctx, key)
	if err != nil {
		return nil, 0, err
	}
	if !ok {
		return nil, 0, changed("%q is no longer linked", key)
	}
	if n == 0 { // nothing to read, but the version must still hold
		o, err := s.head(ctx, resource{key: key, url: u})
		if err != nil {
			return nil, 0, pinned(err)
		}
		if o.Version != version {
			return nil, 0, changed("%q is now version %s", key, o.Version)
		}
		return io.NopCloser(strings.NewReader("")), 0, nil
	}
	h := http.Header{"Range": {fmt.Sprintf("bytes=%d-%d", off, off+n-1)}}
	if strings.HasPrefix(version, `"`) {
		h.Set("If-Match", version)
	} else if !strings.HasPrefix(version, `W/"`) {
		h.Set("If-Unmodified-Since", version)
	}
	resp, err := s.do(ctx, http.MethodGet, u, h)
	if err != nil {
		return nil, 0, pinned(err)
	}
	body, length, err := s.ranged(resp, key, version, off, n)
	if err != nil {
		resp.Body.Close()
		return nil, 0, err
	}
	return body, length, nil
}

// ranged checks the answer to a read of [off, off+n) of version and
// returns its bytes and how many there are.
func (s *server) ranged(resp *http.Response, key, version string, off, n int64) (io.ReadCloser, int64, error) {
	where := resp.Request.URL.Redacted()
	switch resp.StatusCode {
	case http.StatusPreconditionFailed, http.StatusNotFound, http.StatusGone:
		return nil, 0, changed("GET %s: %s", where, resp.Status)
	case http.StatusPartialContent, http.StatusOK, http.StatusRequestedRangeNotSatisfiable:
	default:
		return nil, 0, unavailable("GET %s: %s", where, resp.Status)
	}
	// A server that ignored Range may have ignored If-Match too: its
	// answer must name the version itself.
	if err := sameVersion(resp, version, resp.StatusCode == http.StatusOK); err != nil {
		return nil, 0, err
	}
	if ce := resp.Header.Get("Content-Encoding"); ce != "" && ce != "identity" {
		return nil, 0, unavailable("GET %s: Content-Encoding %s", where, ce)
	}
	switch resp.StatusCode {
	case http.StatusRequestedRangeNotSatisfiable: // off at or past the end
		if size, err := unsatisfiedSize(resp.Header.Get("Content-Range")); err != nil || off < size {
			return nil, 0, unavailable("GET %s: %s for bytes %d- of %d (%v)", where, resp.Status, off, size, err)
		}
		resp.Body.Close()
		return io.NopCloser(strings.NewReader("")), 0, nil
	case http.StatusPartialContent:
		first, last, size, err := contentRange(resp.Header.Get("Content-Range"))
		if err != nil || first != off || last != min(off+n, size)-1 || (resp.ContentLength >= 0 && resp.ContentLength != last-first+1) {
			return nil, 0, unavailable("GET %s: Content-Range %q for bytes %d-%d (%v)", where, resp.Header.Get("Content-Range"), off, off+n-1, err)
		}
		return readCloser{io.LimitReader(resp.Body, last-first+1), resp.Body}, last - first + 1, nil
	default: // 200: the server ignored the range; skip to off
		size := resp.ContentLength
		if size < 0 || size > adapter.MaxSize {
			return nil, 0, unavailable("GET %s: the whole object without a Content-Length", where)
		}
		length := max(0, min(n, size-off))
		if length > 0 {
			if _, err := io.CopyN(io.Discard, resp.Body, off); err != nil {
				return nil, 0, unavailable("GET %s: skipping to %d: %v", where, off, err)
			}
		}
		s.log.Debug("server ignored the range", "key", key, "url", where)
		return readCloser{io.LimitReader(resp.Body, length), resp.Body}, length, nil
	}
}

// sameVersion checks that the validator of resp (ETag, else
// Last-Modified) is version; an answer without one is trusted only when
// the request was conditional on version (a strong ETag or a date) and
// not strict.
func sameVersion(resp *http.Response, version string, strict bool) error {
	weak := strings.HasPrefix(version, `W/"`)
	if strings.HasPrefix(version, `"`) || weak {
		etag := resp.Header.Get("ETag")
		if etag == "" {
			if weak || strict {
				return unavailable("%s answered without an ETag: version %s cannot be checked", resp.Request.URL.Redacted(), version)
			}
			return nil
		}
		// A weak version matches the same tag, weak or strong; a strong
		// one only itself.
		if etag != version && (!weak || strings.TrimPrefix(etag, "W/") != strings.TrimPrefix(version, "W/")) {
			return changed("%s is now ETag %s, not %s", resp.Request.URL.Redacted(), etag, version)
		}
		return nil
	}
	lm := resp.Header.Get("Last-Modified")
	if lm == "" {
		if strict {
			return unavailable("%s answered without a Last-Modified: version %s cannot be checked", resp.Request.URL.Redacted(), version)
		}
		return nil
	}
	t, err := http.ParseTime(lm)
	v, verr := http.ParseTime(version)
	if err != nil || verr != nil || !t.Equal(v) {
		return changed("%s was last modified %s, not %s", resp.Request.URL.Redacted(), lm, version)
	}
	return nil
}

// contentRange parses "bytes first-last/size".
func contentRange(h string) (first, last, size int64, err error) {
	r, ok := strings.CutPrefix(h, "bytes ")
	span, total, ok2 := strings.Cut(r, "/")
	a, b, ok3 := strings.Cut(span, "-")
	if !ok || !ok2 || !ok3 {
		return 0, 0, 0, fmt.Errorf("malformed Content-Range %q", h)
	}
	first, err1 := strconv.ParseInt(a, 10, 64)
	last, err2 := strconv.ParseInt(b, 10, 64)
	size, err3 := strconv.ParseInt(total, 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil || first < 0 || last < first || size <= last || size > adapter.MaxSize {
		return 0, 0, 0, fmt.Errorf("malformed Content-Range %q", h)
	}
	return first, last, size, nil
}

// unsatisfiedSize parses the "bytes */size" of a 416.
func unsatisfiedSize(h string) (int64, error) {
	r, ok := strings.CutPrefix(h, "bytes */")
	size, err := strconv.ParseInt(r, 10, 64)
	if !ok || err != nil || size < 0 {
		return 0, fmt.Errorf("malformed Content-Range %q", h)
	}
	return size, nil
}

// do sends a request for bytes as stored; a failure to get an answer is
// CodeUnavailable.
func (s *server) do(ctx context.Context, method string, u *url.URL, h http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, u.Redacted(), err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	req.Header.Set("Accept-Encoding", "identity")
	req.Header.Set("User-Agent", "nas-adapter-http")
	resp, err := s.client.Do(req)
	if errors.Is(err, errRedirect) {
		return nil, notShown("%s %s: %v", method, u.Redacted(), err)
	}
	if err != nil {
		return nil, unavailable("%s %s: %v", method, u.Redacted(), err)
	}
	return resp, nil
}

// readCloser reads from one and closes another.
type readCloser struct {
	io.Reader
	io.Closer
}

func unavailable(format string, args ...any) error {
	return &adapter.Error{Code: adapter.CodeUnavailable, Message: fmt.Sprintf(format, args...)}
}

func changed(format string, args ...any) error {
	return &adapter.Error{Code: adapter.CodeChanged, Message: fmt.Sprintf(format, args...)}
}

// pinned is err for a read of a pinned version: an object that is gone
// or can no longer be shown has changed.
func pinned(err error) error {
	var e *adapter.Error
	if errors.As(err, &e) && e.Code == adapter.CodeNotFound {
		return &adapter.Error{Code: adapter.CodeChanged, Message: e.Message}
	}
	return err
}

// notShown is a resource that is not (or can no longer be) an object.
func notShown(format string, args ...any) error {
	return &adapter.Error{Code: adapter.CodeNotFound, Message: fmt.Sprintf(format, args...)}
}
