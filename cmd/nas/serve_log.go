package main

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"

	"github.com/agentnas/nas/auth"
)

// newLogger builds the gateway's logger: slog's text or JSON handler on w
// at the given level ("debug", "info", "warn", "error").
func newLogger(w io.Writer, format string, level *slog.LevelVar) (*slog.Logger, error) {
	opts := &slog.HandlerOptions{Level: level}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, usagef("--log-format: %q is neither text nor json", format)
}

// parseLevel parses --log-level into v.
func parseLevel(v *slog.LevelVar, s string) error {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return usagef("--log-level: %w", err)
	}
	v.Set(l)
	return nil
}

// banner announces where the gateway serves and, on its first start, the
// owner credentials it generated. In text format it is the plain lines
// scripts look for ("nas: serving S3 and the control API on URL ");
// in JSON format every line on stderr is a JSON record, so it is logged.
func banner(w io.Writer, log *slog.Logger, o serveOptions, addr net.Addr, owner auth.Owner, generated bool) {
	scheme := "http"
	if o.tlsCert != "" {
		scheme = "https"
	}
	endpoint := fmt.Sprintf("%s://%s", scheme, addr)
	stored := strings.TrimSuffix(o.data, "/") + "/credentials"
	if o.logFormat == "json" {
		log.Info("serving S3 and the control API", "endpoint", endpoint, "data", o.data)
		if generated {
			if o.logFile != "" {
				// Secrets never go to a log file: shown once, on stderr.
				log = slog.New(slog.NewJSONHandler(w, nil))
			}
			log.Info("generated owner credentials (shown once)", "stored", stored,
				"access_key_id", owner.AccessKey, "secret_access_key", owner.SecretKey)
		}
		return
	}
	fmt.Fprintf(w, "nas: serving S3 and the control API on %s (data in %s)\n", endpoint, o.data)
	if generated {
		fmt.Fprintf(w, "nas: generated owner credentials (stored in %s, shown once):\n", stored)
		fmt.Fprintf(w, "  export AWS_ACCESS_KEY_ID=%s AWS_SECRET_ACCESS_KEY=%s AWS_ENDPOINT_URL=%s\n", owner.AccessKey, owner.SecretKey, endpoint)
	}
}

// logFile is the --log-file the logger writes to, reopened on SIGHUP so a
// log rotator can move the old file away (logrotate's create mode). Safe
// for concurrent use.
type logFile struct {
	path string
	mu   sync.Mutex // guards f
	f    *os.File
}

// openLogFile opens path for appending (created 0640).
func openLogFile(path string) (*logFile, error) {
	lf := &logFile{path: path}
	if err := lf.Reopen(); err != nil {
		return nil, err
	}
	return lf, nil
}

// Write appends p to the current file.
func (l *logFile) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Write(p)
}

// Reopen opens the path again and closes the previous file; on failure the
// previous file stays in use.
func (l *logFile) Reopen() error {
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return fmt.Errorf("--log-file: %w", err)
	}
	l.mu.Lock()
	old := l.f
	l.f = f
	l.mu.Unlock()
	if old != nil {
		return old.Close()
	}
	return nil
}

// Close closes the current file.
func (l *logFile) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Close()
}
