package main

import (
	"bytes"
	"fmt"
	"io"
	"net/url"
	"path"
	"strconv"
	"strings"

	"golang.org/x/net/html"

	"github.com/agentnas/nas/adapter"
)

// maxResources bounds how many objects one adapter shows (an index page
// with more links is cut there).
const maxResources = 100_000

// maxIndex bounds the bytes of an index page read.
const maxIndex = 16 << 20

// resource is one object: its key and where its bytes are.
type resource struct {
	key string
	url *url.URL
}

// urlResources are the resources of --url flags: the key of each is its
// path without the leading "/" (cleaned: empty and "." segments dropped,
// ".." resolved; "index" for the root), made unique with a "~N" suffix in flag order.
func urlResources(urls []string) ([]resource, error) {
	seen := map[string]bool{}
	var rs []resource
	for _, s := range urls {
		u, err := parseHTTPURL(s)
		if err != nil {
			return nil, err
		}
		base := strings.TrimPrefix(path.Clean("/"+u.Path), "/")
		if base == "" {
			base = "index"
		}
		key := base
		for n := 2; seen[key]; n++ {
			key = base + "~" + strconv.Itoa(n)
		}
		if err := adapter.CheckKey(key); err != nil {
			return nil, fmt.Errorf("--url %s: %w", s, err)
		}
		seen[key] = true
		rs = append(rs, resource{key: key, url: u})
	}
	return rs, nil
}

// indexResources are the resources an index page at base links to: every
// link that resolves to the same scheme and host, below the directory of
// base, without a query and not ending in "/" (a directory, the parent).
// The key is the decoded path relative to that directory; links whose key
// is not valid are skipped and reported to skipped.
func indexResources(page io.Reader, base *url.URL, skipped func(href string, err error)) []resource {
	dir := base.Path[:strings.LastIndex(base.Path, "/")+1]
	if dir == "" {
		dir = "/"
	}
	seen := map[string]bool{}
	var rs []resource
	for _, href := range hrefs(page) {
		if len(rs) == maxResources {
			skipped(href, fmt.Errorf("more than %d links", maxResources))
			break
		}
		href = strings.TrimSpace(href)
		if href == "" || strings.HasPrefix(href, "#") || strings.ContainsRune(href, '?') {
			continue
		}
		ref, err := url.Parse(href)
		if err != nil {
			skipped(href, err)
			continue
		}
		u := base.ResolveReference(ref)
		u.Fragment, u.RawFragment = "", ""
		if u.Scheme != base.Scheme || u.Host != base.Host || strings.HasSuffix(u.Path, "/") || !strings.HasPrefix(u.Path, dir) {
			continue // another site, a directory or a parent: not an object of this index
		}
		key := u.Path[len(dir):]
		if path.Clean("/"+key) != "/"+key {
			skipped(href, fmt.Errorf("key %q is not clean", key))
			continue
		}
		if err := adapter.CheckKey(key); err != nil {
			skipped(href, err)
			continue
		}
		if !seen[key] {
			seen[key] = true
			rs = append(rs, resource{key: key, url: u})
		}
	}
	return rs
}

// hrefs are the href attributes of the <a> elements of an HTML page.
func hrefs(page io.Reader) []string {
	var out []string
	z := html.NewTokenizer(page)
	for {
		switch z.Next() {
		case html.ErrorToken:
			return out
		case html.StartTagToken, html.SelfClosingTagToken:
			name, more := z.TagName()
			if !bytes.Equal(name, []byte("a")) {
				continue
			}
			for more {
				var k, v []byte
				k, v, more = z.TagAttr()
				if string(k) == "href" {
					out = append(out, string(v))
					break
				}
			}
		}
	}
}
