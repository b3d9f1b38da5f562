package adapter

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// CheckKey says why k is not a key an adapter should show, or nil: empty,
// longer than MaxKey, not UTF-8, with a control character, or with an
// empty, "." or ".." segment.
func CheckKey(k string) error {
	switch {
	case k == "":
		return fmt.Errorf("empty key")
	case len(k) > MaxKey:
		return fmt.Errorf("key of %d bytes (at most %d)", len(k), MaxKey)
	case !utf8.ValidString(k):
		return fmt.Errorf("key %q is not UTF-8", k)
	case strings.IndexFunc(k, unicode.IsControl) >= 0:
		return fmt.Errorf("key %q has a control character", k)
	}
	for seg := range strings.SplitSeq(k, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("key %q has an empty, . or .. segment", k)
		}
	}
	return nil
}

// Listing answers a Server's List from a listing made whole: a list from
// the start makes a new one (full), the pages after it come from it, so
// one listing is one consistent set. It is safe for concurrent use.
type Listing struct {
	mu   sync.Mutex
	objs []Object // sorted by key
}

// List implements Server.List over full, which returns every object
// sorted by key.
func (l *Listing) List(ctx context.Context, after string, limit int, full func(context.Context) ([]Object, error)) ([]Object, bool, error) {
	l.mu.Lock()
	objs := l.objs
	l.mu.Unlock()
	if after == "" || objs == nil {
		var err error
		if objs, err = full(ctx); err != nil {
			return nil, false, err
		}
		l.mu.Lock()
		l.objs = objs
		l.mu.Unlock()
	}
	page, more := Page(objs, after, limit)
	return page, more, nil
}

// Page is the list answer of a listing held whole: the objects of objs
// (sorted by key) after after, at most limit, and whether others follow.
// The page is a copy.
func Page(objs []Object, after string, limit int) ([]Object, bool) {
	i, found := slices.BinarySearchFunc(objs, after, func(o Object, k string) int { return strings.Compare(o.Key, k) })
	if found {
		i++
	}
	page := objs[i:min(i+max(limit, 0), len(objs))]
	return slices.Clone(page), i+len(page) < len(objs)
}
