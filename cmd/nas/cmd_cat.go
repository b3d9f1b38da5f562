package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	nasclient "github.com/agentnas/nas/client"
)

// catOptions are the arguments and flags of `nas cat`.
type catOptions struct {
	target, rng string
}

// newCatCmd builds `nas cat`.
func newCatCmd() *cobra.Command {
	var o catOptions
	cmd := &cobra.Command{
		Use:   "cat REPO[@BRANCH]/PATH [--range START-[END]]",
		Short: "Write an object to standard output",
		Long: `Cat streams an object to standard output, or with --range the bytes START to
END (inclusive, counted from 0; no END: to the end). --json changes nothing
on success (the bytes are the output); a failure is the JSON error document.

` + addressHelp,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.target = args[0]
			return runCat(cmd.Context(), o, os.Stdout)
		},
	}
	cmd.Flags().StringVar(&o.rng, "range", "", "only bytes START-END (inclusive) or START- (to the end)")
	return cmd
}

// parseRange reads START-[END] as an offset and a length (-1: to the end).
func parseRange(s string) (int64, int64, error) {
	if s == "" {
		return 0, -1, nil
	}
	a, b, ok := strings.Cut(s, "-")
	start, err := strconv.ParseInt(a, 10, 64)
	if !ok || err != nil || start < 0 {
		return 0, 0, usagef("--range %q: want START-END or START-", s)
	}
	if b == "" {
		return start, -1, nil
	}
	end, err := strconv.ParseInt(b, 10, 64)
	if err != nil || end < start {
		return 0, 0, usagef("--range %q: END must be a number not below START", s)
	}
	return start, end - start + 1, nil
}

// runCat copies the object to w.
func runCat(ctx context.Context, o catOptions, w io.Writer) error {
	obj, err := gatewayAddress(o.target)
	if err != nil {
		return err
	}
	if isDirKey(obj.Key) {
		return usagef("cat: %s names a directory", describe(obj))
	}
	off, n, err := parseRange(o.rng)
	if err != nil {
		return err
	}
	c, err := newObjClient()
	if err != nil {
		return err
	}
	var written int64
	etag := ""
	err = c.Get(ctx, obj, "", off, n, func(r io.Reader, info nasclient.Info) error {
		// A retry reads from the start again: skip what is already out, if
		// it is still the same object.
		if written > 0 && info.ETag != etag {
			return fmt.Errorf("the object changed while it was read")
		}
		etag = info.ETag
		if _, err := io.CopyN(io.Discard, r, written); err != nil {
			return err
		}
		m, err := io.Copy(w, r)
		written += m
		return err
	})
	if err != nil {
		return fmt.Errorf("cat %s: %w", describe(obj), err)
	}
	return nil
}
