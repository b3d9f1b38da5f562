package client

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// ListOptions narrows a listing (ListObjectsV2).
type ListOptions struct {
	Prefix string
	// Delimiter groups the keys that contain it after Prefix into common
	// prefixes ("/" lists one directory level); "" lists every key.
	Delimiter string
	// MaxKeys bounds the entries of one page (default and most: 1000).
	MaxKeys int
}

// Listed is one object of a listing.
type Listed struct {
	Key          string
	Size         int64
	ETag         string
	LastModified time.Time
}

// ListPage is one page of a listing, in key order; a page may hold
// objects and common prefixes (each ending with the delimiter) at once.
type ListPage struct {
	Objects  []Listed
	Prefixes []string
}

// List lists the objects of branch of repo that opt selects, page by page,
// following continuation tokens, and hands each page to fn; an error from
// fn stops the listing and is returned. Under a lease, what is outside
// its view is not listed.
func (c *Client) List(ctx context.Context, repo, branch string, opt ListOptions, fn func(*ListPage) error) error {
	token := ""
	for {
		page, next, err := c.listPage(ctx, repo, branch, opt, token)
		if err != nil {
			return err
		}
		if err := fn(page); err != nil {
			return err
		}
		if next == "" {
			return nil
		}
		token = next
	}
}

// listResult is the part of a ListBucketResult the client reads; keys
// and prefixes come URL-encoded (encoding-type=url), so any byte of a key
// survives the XML.
type listResult struct {
	IsTruncated           bool   `xml:"IsTruncated"`
	NextContinuationToken string `xml:"NextContinuationToken"`
	Contents              []struct {
		Key          string `xml:"Key"`
		Size         int64  `xml:"Size"`
		ETag         string `xml:"ETag"`
		LastModified string `xml:"LastModified"`
	} `xml:"Contents"`
	CommonPrefixes []struct {
		Prefix string `xml:"Prefix"`
	} `xml:"CommonPrefixes"`
}

// listPage fetches the page at token and returns the next page's token
// ("" after the last page).
func (c *Client) listPage(ctx context.Context, repo, branch string, opt ListOptions, token string) (*ListPage, string, error) {
	q := url.Values{"list-type": {"2"}, "encoding-type": {"url"}}
	if opt.Prefix != "" {
		q.Set("prefix", opt.Prefix)
	}
	if opt.Delimiter != "" {
		q.Set("delimiter", opt.Delimiter)
	}
	if opt.MaxKeys > 0 {
		q.Set("max-keys", strconv.Itoa(opt.MaxKeys))
	}
	if token != "" {
		q.Set("continuation-token", token)
	}
	b := Object{Repo: repo, Branch: branch}
	u := c.cfg.Endpoint + "/" + repo + "?" + strings.ReplaceAll(q.Encode(), "+", "%20")
	var doc listResult
	r := request{method: http.MethodGet, url: u, header: branchHeader(b), payload: unsigned, retry: true}
	err := c.do(ctx, r, func(resp *http.Response) error {
		doc = listResult{}
		if err := xml.NewDecoder(resp.Body).Decode(&doc); err != nil {
			return fmt.Errorf("list %s: decode answer: %w", b, err)
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	page, err := doc.page()
	if err != nil {
		return nil, "", fmt.Errorf("list %s: %w", b, err)
	}
	if doc.IsTruncated && doc.NextContinuationToken == "" {
		return nil, "", fmt.Errorf("list %s: a truncated page without a continuation token", b)
	}
	if !doc.IsTruncated {
		return page, "", nil
	}
	return page, doc.NextContinuationToken, nil
}

// page decodes the document's URL-encoded keys and times.
func (d *listResult) page() (*ListPage, error) {
	p := &ListPage{Objects: make([]Listed, 0, len(d.Contents))}
	for _, o := range d.Contents {
		key, err := url.QueryUnescape(o.Key)
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", o.Key, err)
		}
		mod, err := time.Parse(time.RFC3339Nano, o.LastModified)
		if err != nil {
			return nil, fmt.Errorf("key %q: last modified: %w", key, err)
		}
		p.Objects = append(p.Objects, Listed{Key: key, Size: o.Size, ETag: strings.Trim(o.ETag, `"`), LastModified: mod})
	}
	for _, cp := range d.CommonPrefixes {
		pre, err := url.QueryUnescape(cp.Prefix)
		if err != nil {
			return nil, fmt.Errorf("prefix %q: %w", cp.Prefix, err)
		}
		p.Prefixes = append(p.Prefixes, pre)
	}
	return p, nil
}

// MaxDeleteKeys is the most keys one DeleteObjects call takes.
const MaxDeleteKeys = 1000

// DeleteFailure is a key that DeleteObjects did not delete, and why.
type DeleteFailure struct {
	Key     string
	Code    string
	Message string
}

// DeleteObjects removes up to MaxDeleteKeys keys from branch of repo in
// one call (history keeps them) and returns the keys the gateway refused,
// each with its own reason. A missing key counts as deleted. A key that
// XML cannot carry (control bytes, invalid UTF-8) is deleted on its own
// with a DELETE instead, since the document would name another key.
func (c *Client) DeleteObjects(ctx context.Context, repo, branch string, keys []string) ([]DeleteFailure, error) {
	if len(keys) == 0 || len(keys) > MaxDeleteKeys {
		return nil, fmt.Errorf("delete %d keys of %s: one call takes 1 to %d", len(keys), repo, MaxDeleteKeys)
	}
	var safe []string
	var failed []DeleteFailure
	for _, k := range keys {
		if xmlSafe(k) {
			safe = append(safe, k)
			continue
		}
		if _, err := c.Delete(ctx, Object{Repo: repo, Branch: branch, Key: k}); err != nil {
			if Code(err) == "NoSuchBucket" || ctx.Err() != nil {
				return nil, err
			}
			failed = append(failed, DeleteFailure{Key: k, Code: Code(err), Message: err.Error()})
		}
	}
	if len(safe) == 0 {
		return failed, nil
	}
	more, err := c.deleteBatch(ctx, repo, branch, safe)
	return append(failed, more...), err
}

// xmlSafe reports whether XML 1.0 text can carry s unchanged.
func xmlSafe(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		ok := r == '\t' || r == '\n' || r == '\r' || r >= 0x20 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF
		if !ok {
			return false
		}
	}
	return true
}

// deleteBatch is one DeleteObjects call for keys.
func (c *Client) deleteBatch(ctx context.Context, repo, branch string, keys []string) ([]DeleteFailure, error) {
	body, err := deleteBody(keys)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(body)
	m := md5.Sum(body)
	h := branchHeader(Object{Repo: repo, Branch: branch})
	h.Set("Content-MD5", base64.StdEncoding.EncodeToString(m[:]))
	h.Set("Content-Type", "application/xml")
	r := request{method: http.MethodPost, url: c.cfg.Endpoint + "/" + repo + "?delete=", header: h,
		payload: hex.EncodeToString(sum[:]), retry: true, body: func() io.Reader { return bytes.NewReader(body) }, size: int64(len(body))}
	var failed []DeleteFailure
	err = c.do(ctx, r, func(resp *http.Response) error {
		var doc struct {
			Errors []struct {
				Key     string `xml:"Key"`
				Code    string `xml:"Code"`
				Message string `xml:"Message"`
			} `xml:"Error"`
		}
		if err := xml.NewDecoder(resp.Body).Decode(&doc); err != nil {
			return fmt.Errorf("delete keys of %s: decode answer: %w", repo, err)
		}
		failed = failed[:0]
		for _, e := range doc.Errors {
			failed = append(failed, DeleteFailure{Key: e.Key, Code: e.Code, Message: e.Message})
		}
		return nil
	})
	return failed, err
}

// deleteBody is the quiet Delete document naming keys: the answer then
// lists only the failures.
func deleteBody(keys []string) ([]byte, error) {
	type object struct {
		Key string `xml:"Key"`
	}
	doc := struct {
		XMLName xml.Name `xml:"Delete"`
		Quiet   bool     `xml:"Quiet"`
		Objects []object `xml:"Object"`
	}{Quiet: true, Objects: make([]object, len(keys))}
	for i, k := range keys {
		doc.Objects[i].Key = k
	}
	b, err := xml.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("delete keys: encode %w", err)
	}
	return b, nil
}
