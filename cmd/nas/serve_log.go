package main

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"

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
