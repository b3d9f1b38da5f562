package main

import (
	"context"
	"errors"
	"os"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	nasclient "github.com/agentnas/nas/client"
)

// objClient is the client of the object commands: the pooled transport
// with bounded connects and response headers but no overall timeout (a
// transfer takes as long as its bytes do), and the lease file, if any.
type objClient struct {
	*nasclient.Client
	lease *nasclient.LeaseFile
}

// newObjClient resolves the credentials as every client command does.
func newObjClient() (*objClient, error) {
	cfg, lf, err := resolveClient()
	if err != nil {
		return nil, err
	}
	cfg.HTTP = nil
	return &objClient{Client: nasclient.New(cfg), lease: lf}, nil
}

// dirPrefix is the prefix of the keys "in" key taken as a directory:
// key itself when it is the root or ends with '/', else key + "/".
func dirPrefix(key string) string {
	if key == "" || strings.HasSuffix(key, "/") {
		return key
	}
	return key + "/"
}

// errStop ends a listing early; it is never returned to a caller.
var errStop = errors.New("stop listing")

// probe returns the object o.Key itself when it exists (nil when it does
// not), with one page of one key: the exact key sorts first among the
// keys it prefixes.
func (c *objClient) probe(ctx context.Context, o nasclient.Object) (*nasclient.Listed, error) {
	var found *nasclient.Listed
	err := c.List(ctx, o.Repo, o.Branch, nasclient.ListOptions{Prefix: o.Key, Delimiter: "/", MaxKeys: 1}, func(p *nasclient.ListPage) error {
		if len(p.Objects) > 0 && p.Objects[0].Key == o.Key {
			found = &p.Objects[0]
		}
		return errStop
	})
	if errors.Is(err, errStop) {
		err = nil
	}
	return found, err
}

// walk hands fn every object "at" o taken as a path: o.Key itself when it
// is an object (withSelf), and every key under dirPrefix(o.Key), in key
// order.
func (c *objClient) walk(ctx context.Context, o nasclient.Object, withSelf bool, fn func(nasclient.Listed) error) error {
	if withSelf && o.Key != "" && !strings.HasSuffix(o.Key, "/") {
		self, err := c.probe(ctx, o)
		if err != nil {
			return err
		}
		if self != nil {
			if err := fn(*self); err != nil {
				return err
			}
		}
	}
	return c.List(ctx, o.Repo, o.Branch, nasclient.ListOptions{Prefix: dirPrefix(o.Key)}, func(p *nasclient.ListPage) error {
		for _, obj := range p.Objects {
			if err := fn(obj); err != nil {
				return err
			}
		}
		return nil
	})
}

// progress counts the bytes of a long transfer on a bar on standard
// error; a nil *progress counts nothing.
type progress struct{ bar *progressbar.ProgressBar }

// newProgress is a bar for total bytes (-1: unknown) when the output is
// for a person: standard output is a terminal and --json is not set.
func newProgress(total int64, what string) *progress {
	if cf.json || !term.IsTerminal(int(os.Stdout.Fd())) {
		return nil
	}
	return &progress{bar: progressbar.NewOptions64(total,
		progressbar.OptionSetDescription(what),
		progressbar.OptionSetWriter(os.Stderr),
		progressbar.OptionShowBytes(true),
		progressbar.OptionShowTotalBytes(true),
		progressbar.OptionSetWidth(20),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionFullWidth())}
}

// add counts n more bytes done (negative: a retried transfer starts over).
func (p *progress) add(n int64) {
	if p != nil {
		_ = p.bar.Add64(n)
	}
}

// learnTotal sets the total of a bar started without one (a single
// download learns its size from the answer).
func (p *progress) learnTotal(n int64) {
	if p != nil && p.bar.GetMax64() < 0 && n >= 0 {
		p.bar.ChangeMax64(n)
	}
}

// finish clears the bar.
func (p *progress) finish() {
	if p != nil {
		_ = p.bar.Finish()
	}
}
