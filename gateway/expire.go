package gateway

import (
	"context"
	"time"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/record"
)

// ExpireInterval is how often the gateway recycles branches whose time to
// live ran out. Reads and writes refuse an expired branch at once; this
// only reclaims it.
var ExpireInterval = 30 * time.Second

// runExpiry recycles expired branches every ExpireInterval until ctx ends,
// recording each in the flight recorder.
func (g *Gateway) runExpiry(ctx context.Context) {
	t := time.NewTicker(ExpireInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := g.ExpireBranches(ctx); err != nil && ctx.Err() == nil {
			g.log.Error("recycling expired branches", "err", err)
		}
		if _, err := g.ExpireScratch(ctx); err != nil && ctx.Err() == nil {
			g.log.Error("deleting expired scratch files", "err", err)
		}
	}
}

// ExpireBranches recycles every branch whose time to live ran out now,
// and returns how many it recycled.
func (g *Gateway) ExpireBranches(ctx context.Context) (int, error) {
	return g.Branches.Expire(ctx, time.Now(), func(e branch.ExpiredBranch) {
		ev := record.Event{Kind: record.KindBranchExpired, Principal: "gateway", Repo: e.Repo, Branch: e.Name,
			Details: map[string]string{"expired_at": e.ExpiredAt.Format(time.RFC3339)}}
		if _, err := g.Recorder.Append(context.WithoutCancel(ctx), ev); err != nil {
			g.log.Error("recording a recycled branch", "repo", e.Repo, "branch", e.Name, "err", err)
		}
		g.log.Info("recycled an expired branch", "repo", e.Repo, "branch", e.Name, "expired_at", e.ExpiredAt)
	})
}

// ExpireScratch deletes every scratch file whose time to live ran out
// now, recording each, and returns how many it deleted.
func (g *Gateway) ExpireScratch(ctx context.Context) (int, error) {
	return g.Branches.ExpireScratch(ctx, time.Now(), func(repo, br, key string) {
		ev := record.Event{Kind: record.KindScratchExpired, Principal: "gateway", Repo: repo, Branch: br, Subject: record.Subject{Path: key}}
		if _, err := g.Recorder.Append(context.WithoutCancel(ctx), ev); err != nil {
			g.log.Error("recording an expired scratch file", "repo", repo, "branch", br, "err", err)
		}
	})
}
