package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/hook"
)

// newHookCmd builds `nas hook`: a repository's webhooks.
func newHookCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "hook", Short: "Webhooks: signed deliveries of a repository's events (owner only)",
		Long: "A hook receives a repository's events of the kinds it names, in order, as signed JSON POSTs " +
			"(header x-nas-signature: t=UNIX,v1=HEX, the HMAC-SHA256 with the hook's secret of \"UNIX.\" and the body). " +
			"A delivery that is not answered 2xx is retried with backoff before any later event is sent; " +
			"`nas hook deliveries` shows every attempt."}
	cmd.AddCommand(newHookAddCmd(), newHookListCmd(), newHookRemoveCmd(), newHookDeliveriesCmd(), newHookVerifyCmd())
	return cmd
}

// hookAddOptions are the arguments and flags of `nas hook add`.
type hookAddOptions struct {
	repo, url string
	events    []string
}

// newHookAddCmd builds `nas hook add`.
func newHookAddCmd() *cobra.Command {
	var o hookAddOptions
	cmd := &cobra.Command{
		Use:   "add REPO URL --events gate.pending,gate.decided,commit,merge,branch.created,lease.revoked",
		Short: "Register a webhook; prints its secret once",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.repo, o.url = args[0], args[1]
			return runHookAdd(cmd.Context(), o)
		},
	}
	cmd.Flags().StringSliceVar(&o.events, "events", nil, "events to deliver: gate.pending, gate.decided, commit, merge, branch.created, branch.deleted, lease.revoked, source.push, check.finished, object.created, object.removed (S3 event records of each commit's keys)")
	return cmd
}

func runHookAdd(ctx context.Context, o hookAddOptions) error {
	if len(o.events) == 0 {
		return usagef("nas hook add needs --events")
	}
	var out apiv1.HookResponse
	if err := doCall(ctx, apiv1.HookAddRequest{Repo: o.repo, URL: o.url, Events: o.events}, &out); err != nil {
		return err
	}
	if cf.json {
		return printJSON(&out)
	}
	fmt.Printf("%s\t%s\t%s\nsecret (shown once; it signs every delivery): %s\n", out.Hook.ID, out.Hook.URL,
		strings.Join(out.Hook.Events, ","), out.Hook.Secret)
	return nil
}

// hookListOptions are the arguments of `nas hook list`.
type hookListOptions struct{ repo string }

// newHookListCmd builds `nas hook list`.
func newHookListCmd() *cobra.Command {
	var o hookListOptions
	return &cobra.Command{
		Use:   "list [REPO]",
		Short: "List webhooks and where their deliveries stand",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.repo = optArg(args, 0)
			return runHookList(cmd.Context(), o)
		},
	}
}

func runHookList(ctx context.Context, o hookListOptions) error {
	var out apiv1.HookListResponse
	if err := doCall(ctx, apiv1.HookListRequest{Repo: o.repo}, &out); err != nil {
		return err
	}
	if cf.json {
		return printJSON(&out)
	}
	for _, h := range out.Hooks {
		state := "up to date"
		if h.Failures > 0 {
			state = fmt.Sprintf("retrying (%d failed attempts, next %s)", h.Failures, h.NextTry.Format("15:04:05"))
		}
		fmt.Printf("%s\t%s\t%s\t%s\t%s\n", h.ID, h.Repo, h.URL, strings.Join(h.Events, ","), state)
	}
	return nil
}

// hookIDOptions are the arguments of `nas hook remove` and `nas hook
// deliveries`.
type hookIDOptions struct{ repo, id string }

// newHookRemoveCmd builds `nas hook remove`.
func newHookRemoveCmd() *cobra.Command {
	var o hookIDOptions
	return &cobra.Command{
		Use:   "remove REPO HOOK_ID",
		Short: "Remove a webhook and its delivery log",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.repo, o.id = args[0], args[1]
			var out apiv1.HookResponse
			if err := doCall(cmd.Context(), apiv1.HookRemoveRequest{Repo: o.repo, ID: o.id}, &out); err != nil {
				return err
			}
			if cf.json {
				return printJSON(&out)
			}
			fmt.Println("removed", o.id)
			return nil
		},
	}
}

// newHookDeliveriesCmd builds `nas hook deliveries`.
func newHookDeliveriesCmd() *cobra.Command {
	var o hookIDOptions
	return &cobra.Command{
		Use:   "deliveries REPO HOOK_ID",
		Short: "A webhook's delivery attempts, newest first",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.repo, o.id = args[0], args[1]
			return runHookDeliveries(cmd.Context(), o)
		},
	}
}

func runHookDeliveries(ctx context.Context, o hookIDOptions) error {
	var out apiv1.HookDeliveriesResponse
	if err := doCall(ctx, apiv1.HookDeliveriesRequest{Repo: o.repo, ID: o.id}, &out); err != nil {
		return err
	}
	if cf.json {
		return printJSON(&out)
	}
	for _, d := range out.Deliveries {
		fmt.Printf("%s\t#%d\t%s\ttry %d\t%d\t%dms\t%s\n", d.Time.Format("2006-01-02T15:04:05Z"), d.Seq, d.Event, d.Attempt, d.Status, d.DurationMS, d.Error)
	}
	return nil
}

// hookVerifyOptions are the flags of `nas hook verify`.
type hookVerifyOptions struct {
	signature string
	tolerance time.Duration
}

// newHookVerifyCmd builds `nas hook verify`: a receiver's check of a
// delivery, for receivers written as scripts.
func newHookVerifyCmd() *cobra.Command {
	var o hookVerifyOptions
	cmd := &cobra.Command{
		Use:   "verify --signature HEADER < BODY",
		Short: "Check a delivery's signature: the body on standard input, the secret in $NAS_HOOK_SECRET (exit 0 when it verifies)",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			secret := os.Getenv("NAS_HOOK_SECRET")
			if secret == "" || o.signature == "" {
				return usagef("nas hook verify needs --signature and the hook's secret in $NAS_HOOK_SECRET")
			}
			body, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), 64<<20))
			if err != nil {
				return err
			}
			if err := hook.Verify(secret, o.signature, body, time.Now(), o.tolerance); err != nil {
				return err
			}
			fmt.Println("ok")
			return nil
		},
	}
	cmd.Flags().StringVar(&o.signature, "signature", "", "the delivery's x-nas-signature header")
	cmd.Flags().DurationVar(&o.tolerance, "tolerance", 5*time.Minute, "refuse a signature older (or newer) than this: a replay")
	return cmd
}
