package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	nasclient "github.com/agentnas/nas/client"
)

// rmOptions are the arguments and flags of `nas rm`.
type rmOptions struct {
	target           string
	recursive, force bool
}

// newRmCmd builds `nas rm`.
func newRmCmd() *cobra.Command {
	var o rmOptions
	cmd := &cobra.Command{
		Use:   "rm REPO[@BRANCH]/PATH [--recursive [--force]]",
		Short: "Remove an object, or with --recursive a directory of objects",
		Long: `Rm removes an object from its branch (history keeps it; removing a missing
key succeeds, as on S3). With --recursive it removes the object PATH, if
there is one, and every key under PATH/, in batches of 1000; a branch's whole
root (REPO/ or REPO@BRANCH/) also needs --force. --json prints one document:
repo, branch, path, removed and failed (key, code, message).

` + addressHelp,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.target = args[0]
			return runRm(cmd.Context(), o)
		},
	}
	cmd.Flags().BoolVarP(&o.recursive, "recursive", "r", false, "remove PATH and every key under PATH/")
	cmd.Flags().BoolVar(&o.force, "force", false, "with --recursive, allow removing a branch's whole root")
	return cmd
}

// rmJSON is what rm prints with --json.
type rmJSON struct {
	Repo    string      `json:"repo"`
	Branch  string      `json:"branch,omitempty"`
	Path    string      `json:"path"`
	Removed int         `json:"removed"`
	Failed  []rmFailure `json:"failed"`
}

// rmFailure is a key rm could not remove.
type rmFailure struct {
	Key     string `json:"key"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// runRm removes the object or the directory.
func runRm(ctx context.Context, o rmOptions) error {
	obj, err := gatewayAddress(o.target)
	if err != nil {
		return err
	}
	switch {
	case !o.recursive && isDirKey(obj.Key):
		return usagef("rm: %s names a directory (use --recursive)", describe(obj))
	case o.recursive && obj.Key == "" && !o.force:
		return usagef("rm: %s is the whole branch: add --force to remove everything in it", describe(obj))
	}
	c, err := newObjClient()
	if err != nil {
		return err
	}
	out := rmJSON{Repo: obj.Repo, Branch: obj.Branch, Path: obj.Key, Failed: []rmFailure{}}
	if !o.recursive {
		if _, err := c.Delete(ctx, obj); err != nil {
			return fmt.Errorf("rm %s: %w", describe(obj), err)
		}
		out.Removed = 1
	} else if err := removeTree(ctx, c, obj, &out); err != nil {
		return err
	}
	return printRm(&out)
}

// removeTree removes what walk finds at obj, 1000 keys a call, while it
// lists (continuation tokens are keys, so deleting does not disturb them).
func removeTree(ctx context.Context, c *objClient, obj nasclient.Object, out *rmJSON) error {
	batch := make([]string, 0, nasclient.MaxDeleteKeys)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		failed, err := c.DeleteObjects(ctx, obj.Repo, obj.Branch, batch)
		if err != nil {
			return fmt.Errorf("rm %s: %w", describe(obj), err)
		}
		out.Removed += len(batch) - len(failed)
		for _, f := range failed {
			out.Failed = append(out.Failed, rmFailure{Key: f.Key, Code: f.Code, Message: f.Message})
		}
		batch = batch[:0]
		return nil
	}
	err := c.walk(ctx, obj, true, func(l nasclient.Listed) error {
		batch = append(batch, l.Key)
		if len(batch) == nasclient.MaxDeleteKeys {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	return err
}

// printRm says what rm removed; a key it could not remove fails it.
func printRm(out *rmJSON) error {
	if cf.json {
		if err := printJSON(out); err != nil {
			return err
		}
	} else {
		for _, f := range out.Failed {
			fmt.Fprintf(os.Stderr, "nas: rm %s: %s: %s\n", f.Key, f.Code, f.Message)
		}
		fmt.Printf("removed %d object(s) from %s\n", out.Removed, describe(nasclient.Object{Repo: out.Repo, Branch: out.Branch, Key: out.Path}))
	}
	if len(out.Failed) > 0 {
		return fmt.Errorf("rm: %d key(s) not removed", len(out.Failed))
	}
	return nil
}

// removeExtra deletes mirror's extras rels from the target dst and
// reports each.
func removeExtra(ctx context.Context, c *objClient, dst address, rels []string, dryRun bool, rp *reporter) error {
	if dst.isLocal() {
		return removeLocal(dst.local, rels, dryRun, rp)
	}
	for len(rels) > 0 {
		n := min(len(rels), nasclient.MaxDeleteKeys)
		keys := make([]string, n)
		for i, rel := range rels[:n] {
			keys[i] = dirPrefix(dst.obj.Key) + rel
		}
		rels = rels[n:]
		if err := deleteReported(ctx, c, dst.obj, keys, dryRun, rp); err != nil {
			return err
		}
	}
	return nil
}

// deleteReported deletes keys of at's branch in one call and reports
// each key.
func deleteReported(ctx context.Context, c *objClient, at nasclient.Object, keys []string, dryRun bool, rp *reporter) error {
	why := map[string]error{}
	if !dryRun {
		failed, err := c.DeleteObjects(ctx, at.Repo, at.Branch, keys)
		if err != nil {
			return err
		}
		for _, f := range failed {
			why[f.Key] = fmt.Errorf("%s: %s", f.Code, f.Message)
		}
	}
	for _, k := range keys {
		o := at
		o.Key = k
		rp.report(fileResult{Action: "delete", Dst: describe(o), DryRun: dryRun}, why[k])
	}
	return nil
}

// removeLocal deletes the files rels (slash-separated) of dir, and the
// directories that this leaves empty.
func removeLocal(dir string, rels []string, dryRun bool, rp *reporter) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	for _, rel := range rels {
		name := filepath.FromSlash(rel)
		r := fileResult{Action: "delete", Dst: filepath.Join(dir, name), DryRun: dryRun}
		if dryRun {
			rp.report(r, nil)
			continue
		}
		err := root.Remove(name)
		for d := filepath.Dir(name); err == nil && d != "."; d = filepath.Dir(d) {
			if root.Remove(d) != nil { // not empty: stop there
				break
			}
		}
		rp.report(r, err)
	}
	return nil
}
