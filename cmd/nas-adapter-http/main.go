// Command nas-adapter-http is a source adapter (package adapter) that
// shows HTTP resources as objects: the URLs given with --url, or the
// files an HTML index page (--index) links to. See README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/agentnas/nas/adapter"
)

// urlList is a repeated --url flag.
type urlList []string

func (l *urlList) String() string     { return fmt.Sprint(*l) }
func (l *urlList) Set(s string) error { *l = append(*l, s); return nil }

// options are the flags.
type options struct {
	urls    urlList
	index   string
	timeout time.Duration
}

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(os.Args[1:], os.Stdin, os.Stdout, log); err != nil {
		log.Error("nas-adapter-http", "err", err)
		os.Exit(1)
	}
}

// run parses args and serves the protocol on in and out.
func run(args []string, in io.Reader, out io.Writer, log *slog.Logger) error {
	o, err := parseFlags(args)
	if err != nil {
		return err
	}
	s, err := newServer(o, log)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return adapter.Serve(ctx, in, out, s)
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("nas-adapter-http", flag.ContinueOnError)
	fs.Var(&o.urls, "url", "an HTTP(S) resource to show as an object (repeat for more)")
	fs.StringVar(&o.index, "index", "", "an HTML index page whose relative links are the objects")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "bound on connecting and on waiting for a response's headers (not on its body)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if (len(o.urls) > 0) == (o.index != "") {
		return o, errors.New("give either --url (repeated) or --index")
	}
	if o.timeout <= 0 {
		return o, errors.New("--timeout must be positive")
	}
	for _, u := range append([]string{o.index}, o.urls...) {
		if u == "" {
			continue
		}
		if _, err := parseHTTPURL(u); err != nil {
			return o, err
		}
	}
	return o, nil
}

// parseHTTPURL parses an absolute http or https URL.
func parseHTTPURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("url %q: %w", s, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("url %q: not an absolute http or https URL", s)
	}
	u.Fragment, u.RawFragment = "", ""
	return u, nil
}
