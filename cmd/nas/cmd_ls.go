package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	nasclient "github.com/agentnas/nas/client"
)

// lsOptions are the arguments and flags of `nas ls`.
type lsOptions struct {
	target    string
	recursive bool
}

// newLsCmd builds `nas ls`.
func newLsCmd() *cobra.Command {
	var o lsOptions
	cmd := &cobra.Command{
		Use:   "ls REPO[@BRANCH][/PATH] [--recursive]",
		Short: "List objects: one directory level, or everything under it",
		Long: `Ls lists the object PATH, if there is one, and what is in the directory
PATH/ (PATH and PATH/ name the same directory; no PATH is the branch's root):
one level, with subdirectories as prefixes ending in '/', or with --recursive
every key under it. Each line shows the size, the modification time (UTC) and
the key. --json prints NDJSON, one line per entry: type (object or prefix),
key, size, last_modified, etag.

` + addressHelp,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.target = args[0]
			return runLs(cmd.Context(), o)
		},
	}
	cmd.Flags().BoolVarP(&o.recursive, "recursive", "r", false, "list every key under the directory, not one level")
	return cmd
}

// lsEntry is one line of ls --json: an object, or a common prefix (a
// subdirectory, with neither size nor time).
type lsEntry struct {
	Type         string    `json:"type"` // object or prefix
	Key          string    `json:"key"`
	Size         int64     `json:"size"`
	LastModified time.Time `json:"last_modified,omitzero"`
	ETag         string    `json:"etag,omitempty"`
}

// runLs lists the object and the directory.
func runLs(ctx context.Context, o lsOptions) error {
	obj, err := gatewayAddress(o.target)
	if err != nil {
		return err
	}
	c, err := newObjClient()
	if err != nil {
		return err
	}
	enc := json.NewEncoder(os.Stdout)
	show := func(e lsEntry) error {
		if cf.json {
			return enc.Encode(e)
		}
		if e.Type == "prefix" {
			fmt.Printf("%12s  %-23s  %s\n", "PRE", "", e.Key)
			return nil
		}
		fmt.Printf("%12d  %-23s  %s\n", e.Size, e.LastModified.UTC().Format("2006-01-02 15:04:05.000"), e.Key)
		return nil
	}
	return listEntries(ctx, c, obj, o.recursive, show)
}

// listEntries hands show the object obj.Key itself, then the entries of
// the directory dirPrefix(obj.Key).
func listEntries(ctx context.Context, c *objClient, obj nasclient.Object, recursive bool, show func(lsEntry) error) error {
	if !isDirKey(obj.Key) {
		self, err := c.probe(ctx, obj)
		if err != nil {
			return err
		}
		if self != nil {
			if err := show(objectEntry(*self)); err != nil {
				return err
			}
		}
	}
	opt := nasclient.ListOptions{Prefix: dirPrefix(obj.Key)}
	if !recursive {
		opt.Delimiter = "/"
	}
	return c.List(ctx, obj.Repo, obj.Branch, opt, func(p *nasclient.ListPage) error {
		for _, e := range mergePage(p) {
			if err := show(e); err != nil {
				return err
			}
		}
		return nil
	})
}

// objectEntry is the entry of a listed object.
func objectEntry(l nasclient.Listed) lsEntry {
	return lsEntry{Type: "object", Key: l.Key, Size: l.Size, LastModified: l.LastModified, ETag: l.ETag}
}

// mergePage puts a page's objects and prefixes in one key order.
func mergePage(p *nasclient.ListPage) []lsEntry {
	out := make([]lsEntry, 0, len(p.Objects)+len(p.Prefixes))
	i, j := 0, 0
	for i < len(p.Objects) || j < len(p.Prefixes) {
		if j == len(p.Prefixes) || i < len(p.Objects) && p.Objects[i].Key < p.Prefixes[j] {
			out = append(out, objectEntry(p.Objects[i]))
			i++
			continue
		}
		out = append(out, lsEntry{Type: "prefix", Key: p.Prefixes[j]})
		j++
	}
	return out
}
