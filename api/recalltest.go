package api

import (
	"context"
	"slices"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/memory"
)

// memoryTest answers memory/test: the Home's golden recall tests, read
// through the door like files/read (charged and recorded), each case run
// as the caller's own memory/recall of its query on the same commit, so
// a lease's cases see only what its recalls would.
func (h *Handler) memoryTest(ctx context.Context, c *call, a *apiv1.MemoryTestRequest) (*apiv1.MemoryTestResponse, error) {
	if err := required("repo", a.Repo); err != nil {
		return nil, err
	}
	home, br, head, err := h.homeHead(ctx, c, a.Repo, a.Branch, a.Home)
	if err != nil {
		return nil, err
	}
	f, err := h.statAt(ctx, c, auth.Target{Repo: a.Repo, Branch: br, Key: home + "/" + memory.RecallTestsFile, Commit: head.String()}, head)
	if err != nil {
		return nil, err
	}
	if f.e.Size > memory.MaxRecallTestsFile {
		return nil, invalid(f.t.Key + " is too large for recall tests")
	}
	if _, err := h.charge(ctx, c, f, 0, 0); err != nil {
		return nil, err
	}
	if err := h.load(ctx, f); err != nil {
		return nil, err
	}
	cases, err := memory.ParseRecallTests(f.data)
	if err != nil {
		return nil, invalid(err.Error())
	}
	out := &apiv1.MemoryTestResponse{Commit: head.String(), Home: home, Cases: []apiv1.RecallTestResult{}}
	for _, t := range cases {
		res, err := h.recallCase(ctx, c, &apiv1.MemoryRecallRequest{Repo: a.Repo, Branch: br, Home: home, Query: t.Query, Limit: t.TopK}, t)
		if err != nil {
			return nil, err
		}
		if res.Pass {
			out.Passed++
		} else {
			out.Failed++
		}
		out.Cases = append(out.Cases, res)
	}
	return out, nil
}

// recallCase runs one recall test: recall, then the expected IDs it
// did not return. A recall on a branch that moved since the tests were
// read answers for its new head; the case says which notes it got.
func (h *Handler) recallCase(ctx context.Context, c *call, q *apiv1.MemoryRecallRequest, t memory.RecallTest) (apiv1.RecallTestResult, error) {
	res := apiv1.RecallTestResult{Query: t.Query, Expect: t.Expect, TopK: t.TopK, Got: []string{}, Missing: []string{}}
	got, err := h.memoryRecall(ctx, c, q)
	if err != nil {
		return res, err
	}
	for _, n := range got.Notes {
		res.Got = append(res.Got, n.ID)
	}
	for _, id := range t.Expect {
		if !slices.Contains(res.Got, id) {
			res.Missing = append(res.Missing, id)
		}
	}
	res.Pass = len(res.Missing) == 0
	return res, nil
}
