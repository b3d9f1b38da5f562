package api

import (
	"context"
	"net/http"

	"github.com/agentnas/nas/apiv1"
)

// Who may call an operation, and whether it writes.
const (
	owner  = 0
	leases = 1 << iota // lease principals may call it (it authorizes each target itself)
	writes             // it changes state: idempotency_key applies
)

// route registers fn under its request type's operation name, decoding
// that type (unknown fields refused) before calling it.
func route[Req apiv1.Request, Resp any](m map[string]verb, flags int, fn func(context.Context, *call, *Req) (*Resp, error)) {
	var zero Req
	m[zero.Op()] = verb{write: flags&writes != 0, lease: flags&leases != 0, fn: func(ctx context.Context, c *call) (any, error) {
		var r Req
		if err := c.decode(&r); err != nil {
			return nil, err
		}
		return fn(ctx, c, &r)
	}}
}

// routes is the table of operations: each named by its apiv1 request
// type, each an owner operation unless it says leases may call it.
func (h *Handler) routes() map[string]verb {
	m := map[string]verb{}
	route(m, writes, h.repoCreate)
	route(m, owner, h.repoGet)
	route(m, owner, h.repoList)
	route(m, writes, h.repoDelete)
	route(m, writes, h.branchCreate)
	route(m, owner, h.branchGet)
	route(m, owner, h.branchList)
	route(m, writes, h.branchDelete)
	route(m, owner, h.branchListDeleted)
	route(m, writes, h.branchRestore)
	route(m, writes, h.branchProtect)
	route(m, writes, h.branchUnprotect)
	route(m, writes, h.branchLimits)
	route(m, writes|leases, h.commitCreate)
	route(m, writes|leases, h.commitRevert)
	route(m, writes|leases, h.commitCherryPick)
	route(m, leases, h.commitLog)
	route(m, leases, h.diffList)
	route(m, leases, h.changesList)
	route(m, owner, h.fsck)
	route(m, writes, h.gc)
	route(m, writes|leases, h.leaseCreate)
	route(m, leases, h.leaseGet)
	route(m, writes|leases, h.leaseWiden)
	route(m, owner, h.leaseList)
	route(m, writes|leases, h.leaseRevoke)
	route(m, writes, h.shareGrant)
	route(m, owner, h.shareList)
	route(m, writes, h.shareRevoke)
	route(m, writes, h.rolePut)
	route(m, owner, h.roleGet)
	route(m, owner, h.roleList)
	route(m, writes, h.roleDelete)
	route(m, owner, h.recordList)
	route(m, owner, h.recordExplain)
	route(m, owner, h.recordVerify)
	route(m, leases, h.objectStat)
	route(m, leases, h.objectList)
	route(m, leases, h.objectLookup)
	route(m, leases, h.objectTouched)
	route(m, leases, h.objectReads)
	route(m, writes|leases, h.objectCompose)
	route(m, writes|leases, h.objectPutBatch)
	route(m, writes|leases, h.objectRename)
	route(m, writes, h.mergeCreate)
	route(m, writes|leases, h.proposeCreate)
	route(m, leases, h.gateList)
	route(m, owner, h.gateGet)
	route(m, writes, h.gateApprove)
	route(m, writes, h.gateDeny)
	route(m, owner, h.gateStats)
	route(m, owner, h.gateDiff)
	route(m, owner, h.policyGet)
	route(m, writes, h.policySet)
	route(m, writes|leases, h.checkpointCreate)
	route(m, leases, h.checkpointList)
	route(m, writes|leases, h.checkpointRestore)
	route(m, owner, h.trashList)
	route(m, writes, h.trashRestore)
	h.sourceRoutes(m)
	h.hookRoutes(m)
	h.checkRoutes(m)
	route(m, leases, h.fileRead)
	route(m, leases, h.fileDereference)
	route(m, leases, h.fileVerify)
	route(m, writes|leases, h.memoryRemember)
	route(m, leases, h.memoryRecall)
	route(m, leases, h.memoryTest)
	route(m, writes, h.memoryReview)
	route(m, leases, h.searchQuery)
	route(m, writes, h.indexRebuild)
	route(m, owner, h.indexStatus)
	route(m, writes, h.indexDelete)
	route(m, writes, h.labelSet)
	route(m, owner, h.labelList)
	route(m, writes, h.labelDelete)
	route(m, writes, h.handoffSet)
	route(m, owner, h.handoffList)
	route(m, writes, h.handoffDelete)
	route(m, writes, h.holdSet)
	route(m, owner, h.holdList)
	route(m, writes, h.holdDelete)
	route(m, writes, h.forgetRun)
	route(m, writes|leases, h.forgetRequest)
	return m
}

// limitOf applies the list limits: 0 is the default, more than the most
// is the most, a negative limit is refused.
func limitOf(n int) (int, error) {
	switch {
	case n == 0:
		return apiv1.DefaultLimit, nil
	case n < 0:
		return 0, &Error{Status: http.StatusBadRequest, Code: apiv1.CodeInvalidArgument, Message: "limit must be positive"}
	}
	return min(n, apiv1.MaxLimit), nil
}

// required refuses empty required fields, given as name, value pairs.
func required(fields ...string) error {
	for i := 0; i+1 < len(fields); i += 2 {
		if fields[i+1] == "" {
			return &Error{Status: http.StatusBadRequest, Code: apiv1.CodeInvalidArgument, Message: fields[i] + " is required"}
		}
	}
	return nil
}

// pageOf returns up to limit items named after cursor, in order, and the
// cursor of the next page ("" when this is the last).
func pageOf[T, J any](items []T, cursor string, limit int, name func(*T) string, out func(*T) J) ([]J, string) {
	res := []J{}
	for i := range items {
		n := name(&items[i])
		if n <= cursor {
			continue
		}
		if len(res) == limit {
			return res, name(&items[i-1])
		}
		res = append(res, out(&items[i]))
	}
	return res, ""
}
