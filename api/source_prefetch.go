package api

import (
	"context"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/source"
)

// source/prefetch and source/status: making a source local ahead of its
// reads, and how much of it is. Owner operations, like every source verb.

func (s *sourceHandler) prefetch(ctx context.Context, c *call, a *apiv1.SourcePrefetchRequest) (*apiv1.SourcePrefetchResponse, error) {
	r, err := s.registry()
	if err != nil {
		return nil, err
	}
	if err := required("id", a.ID); err != nil {
		return nil, err
	}
	var info *source.PrefetchInfo
	if a.Cancel {
		info, err = r.CancelPrefetch(ctx, a.ID)
	} else {
		info, err = r.Prefetch(ctx, a.ID, source.PrefetchOptions{Prefix: a.Prefix, Parallel: a.Parallel,
			Rate: a.BytesPerSecond, Principal: c.p.AccessKey})
	}
	if err != nil {
		return nil, sourceError(err)
	}
	return &apiv1.SourcePrefetchResponse{Prefetch: prefetchOut(a.ID, info)}, nil
}

func (s *sourceHandler) status(ctx context.Context, c *call, a *apiv1.SourceStatusRequest) (*apiv1.SourceStatusResponse, error) {
	r, err := s.registry()
	if err != nil {
		return nil, err
	}
	if err := required("id", a.ID); err != nil {
		return nil, err
	}
	st, err := r.Status(ctx, a.ID, !a.NoScan)
	if err != nil {
		return nil, sourceError(err)
	}
	out := apiv1.SourceStatus{Source: st.Source.ID, Repo: st.Source.Repo, Branch: st.Source.Branch, Prefix: st.Source.Prefix,
		State: st.Source.State, Scanned: st.Scanned, Entries: st.Entries, Bytes: st.Bytes,
		LocalEntries: st.LocalEntries, LocalBytes: st.LocalBytes}
	if st.Prefetch != nil {
		p := prefetchOut(a.ID, st.Prefetch)
		out.Prefetch = &p
	}
	return &apiv1.SourceStatusResponse{Status: out}, nil
}

// prefetchOut is the wire form of source id's prefetch job.
func prefetchOut(id string, p *source.PrefetchInfo) apiv1.SourcePrefetch {
	out := apiv1.SourcePrefetch{Source: id, State: p.State, Error: p.Error, Prefix: p.Prefix, Parallel: p.Parallel,
		BytesPerSecond: p.Rate, TotalEntries: p.TotalEntries, TotalBytes: p.TotalBytes, Entries: p.Entries,
		LocalEntries: p.LocalEntries, LocalBytes: p.LocalBytes, FetchedEntries: p.FetchedEntries,
		FetchedBytes: p.FetchedBytes, ReceivedBytes: p.ReceivedBytes, Drifted: p.Drifted, Unavailable: p.Unavailable,
		DriftedKeys: append([]string{}, p.DriftedKeys...), UnavailableKeys: append([]string{}, p.UnavailableKeys...),
		Started: p.Started, StartedBy: p.Principal}
	if !p.Ended.IsZero() {
		ended := p.Ended
		out.Ended = &ended
	}
	return out
}
