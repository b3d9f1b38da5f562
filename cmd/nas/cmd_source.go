package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentnas/nas/apiv1"
)

// newSourceCmd builds `nas source`: attaching remote buckets and local
// folders to a repository.
func newSourceCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "source", Short: "Attach remote buckets and local folders (lazy sources)",
		Long: "A source's objects appear in the repository without being copied: attaching imports the remote listing " +
			"(one entry per object, pinned to its ETag and version), and each object is fetched on its first read, " +
			"after which every branch and fork reads it locally. The remote is written only by `nas source push`."}
	cmd.AddCommand(newSourceAddCmd(), newSourceListCmd(), newSourceRefreshCmd(), newSourceRemoveCmd(),
		newSourcePrefetchCmd(), newSourceStatusCmd(), newSourcePushCmd())
	return cmd
}

// sourceAddOptions are the arguments and flags of `nas source add`.
type sourceAddOptions struct {
	repo, url, prefix, branch, endpoint, region string
	accessKey, secretKey, sessionToken          string
	virtualHost, noWait, withMetadata           bool
	args                                        []string
}

// newSourceAddCmd builds `nas source add`.
func newSourceAddCmd() *cobra.Command {
	var o sourceAddOptions
	cmd := &cobra.Command{
		Use:   "add REPO s3://BUCKET[/PREFIX] | dir:/ABSOLUTE/PATH | git:/ABSOLUTE/PATH[@REV] | git:https://URL[@REV] | exec:/PATH/TO/ADAPTER [--arg A]... [--prefix P] [--branch B] [--source-endpoint URL] [--source-region R]",
		Short: "Attach a bucket, or a folder or Git revision of the gateway's host, under a prefix of the repository",
		Long: "Attaching transfers no object bytes: the listing becomes entries in a commit on the branch (the repository's " +
			"default branch unless --branch; protected branches included), imported in pages with progress.\n\n" +
			"--source-endpoint and --source-region name the remote S3 endpoint (--endpoint, as everywhere, names the gateway). " +
			"The remote's credentials (--source-access-key/--source-secret-key, or $NAS_SOURCE_ACCESS_KEY/" +
			"$NAS_SOURCE_SECRET_KEY) are given once to the gateway, which keeps them: no run reading through the " +
			"gateway ever sees them. Without credentials requests are anonymous.\n\n" +
			"A folder (dir:/path) is read through os.Root: neither \"..\" nor a symbolic link leads outside it, and it is never written.\n\n" +
			"A Git repository (git:/path@REV, a work tree or a bare one; REV a branch, tag or commit ID, HEAD when omitted) " +
			"is attached as the tree of REV's commit, each file pinned to its blob; a refresh follows a branch or tag " +
			"and shows where it moved as a diff. Symbolic links read as their target, submodules as \"Subproject commit ID\", " +
			"LFS pointers as the pointer file. A public remote repository (git:https://HOST/PATH.git@REV) is mirrored by the gateway " +
			"and fetched before every listing.\n\n" +
			"An adapter (exec:/path/to/adapter, a program in the gateway's --source-adapters folder) shows any listable data " +
			"as objects; it runs on the gateway's host with the --arg values given here (shown by 'nas source list': never a password) " +
			"and speaks the protocol of the README's \"Source adapters\". Each entry is pinned to the adapter's version token.",
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.repo, o.url = args[0], args[1]
			return runSourceAdd(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.prefix, "prefix", "", "where the objects appear in the repository (e.g. data/)")
	f.StringVar(&o.branch, "branch", "", "branch to attach to (default: the repository's default branch)")
	f.StringVar(&o.endpoint, "source-endpoint", "", "the remote's S3 endpoint URL (default: AWS S3)")
	f.StringVar(&o.region, "source-region", "", "the remote's region (default us-east-1)")
	f.StringVar(&o.accessKey, "source-access-key", "", "the remote's access key (default $NAS_SOURCE_ACCESS_KEY)")
	f.StringVar(&o.secretKey, "source-secret-key", "", "the remote's secret key (default $NAS_SOURCE_SECRET_KEY)")
	f.StringVar(&o.sessionToken, "source-session-token", "", "the remote's session token (default $NAS_SOURCE_SESSION_TOKEN)")
	f.BoolVar(&o.withMetadata, "with-metadata", false, "ask each new or changed object for its content type and user metadata (one HEAD each, at attach and every refresh)")
	f.StringArrayVar(&o.args, "arg", nil, "an argument of the adapter (exec: sources; repeat for more)")
	f.BoolVar(&o.virtualHost, "virtual-host", false, "address the bucket as BUCKET.host (default: path style when --source-endpoint is given)")
	f.BoolVar(&o.noWait, "no-wait", false, "return once the import started ('nas source list' shows its progress)")
	return cmd
}

// runSourceAdd attaches the source and, unless --no-wait, waits for its
// listing to be imported.
func runSourceAdd(ctx context.Context, o sourceAddOptions) error {
	c, err := newClient()
	if err != nil {
		return err
	}
	if o.accessKey == "" {
		o.accessKey, o.secretKey, o.sessionToken = os.Getenv("NAS_SOURCE_ACCESS_KEY"), os.Getenv("NAS_SOURCE_SECRET_KEY"), os.Getenv("NAS_SOURCE_SESSION_TOKEN")
	}
	if (o.accessKey == "") != (o.secretKey == "") {
		return usagef("give both the remote's access key and secret key (--source-access-key, --source-secret-key)")
	}
	req := apiv1.SourceAddRequest{Repo: o.repo, URL: o.url, Prefix: o.prefix, Branch: o.branch, Endpoint: o.endpoint,
		Region: o.region, AccessKey: o.accessKey, SecretKey: o.secretKey, SessionToken: o.sessionToken, VirtualHost: o.virtualHost,
		WithMetadata: o.withMetadata, Args: o.args}
	var out apiv1.SourceResponse
	if err := c.do(ctx, req, &out); err != nil {
		return err
	}
	if o.noWait {
		return printSource(out.Source, fmt.Sprintf("attaching %s as %s (importing in the background)", out.Source.URL, out.Source.ID))
	}
	s, err := waitSource(ctx, c, out.Source.ID)
	if err != nil {
		return err
	}
	return printSource(s, fmt.Sprintf("attached %s as %s at %q on %s/%s: %d objects in %d commit(s), head %s",
		s.URL, s.ID, s.Prefix, s.Repo, s.Branch, s.Added, s.Commits, s.Commit))
}

// waitSource polls an attach or refresh until it ends, showing its
// progress on a terminal.
func waitSource(ctx context.Context, c *client, id string) (apiv1.Source, error) {
	tty := isTerminal(os.Stderr)
	for {
		var out apiv1.SourceResponse
		if err := c.do(ctx, apiv1.SourceGetRequest{ID: id}, &out); err != nil {
			return out.Source, err
		}
		s := out.Source
		if tty {
			fmt.Fprintf(os.Stderr, "\r%s %s: %d listed, %d added, %d changed, %d removed, %d commit(s)   ",
				s.State, s.ID, s.Listed, s.Added, s.Changed, s.Removed, s.Commits)
		}
		switch s.State {
		case "ready":
			if tty {
				fmt.Fprintln(os.Stderr)
			}
			return s, nil
		case "failed":
			if tty {
				fmt.Fprintln(os.Stderr)
			}
			return s, fmt.Errorf("source %s: %s (run `nas source refresh %s %s` to resume)", s.ID, s.Error, s.Repo, s.ID)
		}
		select {
		case <-ctx.Done():
			return s, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// isTerminal reports whether f is a character device (a terminal).
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// printSource prints line, or with --json the source as source/get
// answers it.
func printSource(s apiv1.Source, line string) error {
	if cf.json {
		return printJSON(&apiv1.SourceResponse{Source: s})
	}
	fmt.Println(line)
	return nil
}

// sourceListOptions are the argument of `nas source list`.
type sourceListOptions struct {
	repo string // "": every repository
}

// newSourceListCmd builds `nas source list`.
func newSourceListCmd() *cobra.Command {
	var o sourceListOptions
	return &cobra.Command{
		Use:   "list [REPO]",
		Short: "List attached sources (of one repository, or all)",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("%s takes at most 1 argument\nusage: %s", cmd.CommandPath(), cmd.UseLine())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.repo = optArg(args, 0)
			return runSourceList(cmd.Context(), o)
		},
	}
}

// runSourceList prints the sources, one a line with their state.
func runSourceList(ctx context.Context, o sourceListOptions) error {
	out, err := listSources(ctx, o.repo)
	if err != nil {
		return err
	}
	if cf.json {
		return printJSON(&out)
	}
	for _, s := range out.Sources {
		state := s.State
		if s.Error != "" {
			state += " (" + s.Error + ")"
		}
		fmt.Printf("%s\t%s/%s\t%s\t%s\t%d objects\t%s\n", s.ID, s.Repo, s.Branch, orDash(s.Prefix), s.URL, s.Listed, state)
	}
	return nil
}

// orDash is s, or "-" for an empty s.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// listSources pages through source/list: every source of repo (""
// all), in one answer.
func listSources(ctx context.Context, repo string) (apiv1.SourceListResponse, error) {
	all := apiv1.SourceListResponse{Sources: []apiv1.Source{}}
	c, err := newClient()
	if err != nil {
		return all, err
	}
	req := apiv1.SourceListRequest{Repo: repo}
	for {
		var page apiv1.SourceListResponse
		if err := c.do(ctx, req, &page); err != nil {
			return all, err
		}
		all.Sources = append(all.Sources, page.Sources...)
		if page.NextCursor == "" {
			return all, nil
		}
		req.Cursor = page.NextCursor
	}
}

// sourceRefreshOptions are the arguments of `nas source refresh`.
type sourceRefreshOptions struct {
	repo string
	ids  []string // none: every source of repo
}

// newSourceRefreshCmd builds `nas source refresh`.
func newSourceRefreshCmd() *cobra.Command {
	var o sourceRefreshOptions
	return &cobra.Command{
		Use:   "refresh REPO [SOURCE_ID...]",
		Short: "List sources again and commit what changed there (added, re-pinned, removed objects)",
		Long: "Refresh re-lists each source (every source of REPO when no ID is given) and commits the difference, so " +
			"`nas diff REPO BASE COMMIT` shows the remote's drift. Objects written on the branch over the source's " +
			"prefix are left as they are. --json prints the refreshed sources as source/list answers them.",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 {
				return usagef("%s takes REPO and optional source IDs\nusage: %s", cmd.CommandPath(), cmd.UseLine())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.repo, o.ids = args[0], args[1:]
			return runSourceRefresh(cmd.Context(), o)
		},
	}
}

// runSourceRefresh refreshes the sources one after the other, waiting for
// each, and says what each refresh changed.
func runSourceRefresh(ctx context.Context, o sourceRefreshOptions) error {
	c, err := newClient()
	if err != nil {
		return err
	}
	ids := o.ids
	if len(ids) == 0 {
		all, err := listSources(ctx, o.repo)
		if err != nil {
			return err
		}
		for _, s := range all.Sources {
			ids = append(ids, s.ID)
		}
	}
	results := apiv1.SourceListResponse{Sources: []apiv1.Source{}}
	for _, id := range ids {
		s, err := refreshSource(ctx, c, o.repo, id)
		if err != nil {
			return err
		}
		results.Sources = append(results.Sources, s)
		if !cf.json {
			fmt.Println(refreshLine(&s))
		}
	}
	if cf.json {
		return printJSON(&results)
	}
	return nil
}

// refreshSource refreshes source id of repo and waits for the refresh to
// end.
func refreshSource(ctx context.Context, c *client, repo, id string) (apiv1.Source, error) {
	var out apiv1.SourceResponse
	if err := c.do(ctx, apiv1.SourceRefreshRequest{ID: id}, &out); err != nil {
		return out.Source, err
	}
	if out.Source.Repo != repo {
		return out.Source, usagef("source %s belongs to repository %s, not %s", id, out.Source.Repo, repo)
	}
	return waitSource(ctx, c, id)
}

// refreshLine says what a refresh changed.
func refreshLine(s *apiv1.Source) string {
	line := fmt.Sprintf("refreshed %s: %d added, %d changed, %d removed", s.ID, s.Added, s.Changed, s.Removed)
	if s.Commit != "" {
		return line + fmt.Sprintf("; see `nas diff %s %s %s`", s.Repo, s.Base, s.Commit)
	}
	return line + " (nothing changed)"
}

// sourceRemoveOptions are the arguments and flags of `nas source remove`.
type sourceRemoveOptions struct {
	repo, id string
	evict    bool
}

// newSourceRemoveCmd builds `nas source remove`.
func newSourceRemoveCmd() *cobra.Command {
	var o sourceRemoveOptions
	cmd := &cobra.Command{
		Use:   "remove REPO SOURCE_ID [--evict]",
		Short: "Detach a source; the gateway forgets its credentials",
		Long: "The entries stay in the branches (history is immutable). Objects already read keep reading from local " +
			"chunks; the others then answer RemoteSourceRemoved. --evict also drops what was fetched from the source.",
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.repo, o.id = args[0], args[1]
			return runSourceRemove(cmd.Context(), o)
		},
	}
	cmd.Flags().BoolVar(&o.evict, "evict", false, "also forget what was materialised from the source")
	return cmd
}

// runSourceRemove detaches the source, after checking that it belongs to
// the repository named.
func runSourceRemove(ctx context.Context, o sourceRemoveOptions) error {
	c, err := newClient()
	if err != nil {
		return err
	}
	if err := checkSourceRepo(ctx, c, o.repo, o.id); err != nil {
		return err
	}
	var out apiv1.SourceRemoveResponse
	if err := c.do(ctx, apiv1.SourceRemoveRequest{ID: o.id, Evict: o.evict}, &out); err != nil {
		return err
	}
	if cf.json {
		return printJSON(&out)
	}
	msg := "removed source " + o.id
	if o.evict {
		msg += " and evicted what was fetched from it"
	}
	fmt.Println(msg)
	return nil
}
