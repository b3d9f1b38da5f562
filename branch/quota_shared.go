package branch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentnas/nas/keyspace"
	"github.com/agentnas/nas/kv"
)

// SetSharedQuotas keeps each quota branch's usage in the store (BU/),
// read and written by every write's own transaction, instead of in this
// process's memory: gateways sharing a metadata store then count one
// usage, and two of them racing on a quota cannot both pass it. Call it
// before serving.
func (s *Service) SetSharedQuotas() { s.sharedQuotas = true }

func usageKey(repo, branch uint64) []byte {
	return u64(u64([]byte(keyspace.BranchUsage), repo), branch)
}

// sharedQuotaFor reads the branch's usage in txn, counting the branch
// (through txn, so the count and the write are one serializable
// transaction) when the store holds none yet.
func (s *Service) sharedQuotaFor(ctx context.Context, txn kv.Txn, v *view) (*quotaTxn, error) {
	key := usageKey(v.rr.ID, v.br.ID)
	e := &usageEntry{}
	b, err := txn.Get(key)
	switch {
	case errors.Is(err, kv.ErrNotFound):
		if err := s.countUsage(ctx, pinned{txn}, v, e); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, err
	default:
		if err := json.Unmarshal(b, &e.u); err != nil {
			return nil, fmt.Errorf("usage of %s/%s: %w", v.rr.Name, v.br.Name, err)
		}
		e.ready = true
	}
	return &quotaTxn{e: e, lim: v.br.limits(), name: v.rr.Name + "/" + v.br.Name, shared: &sharedQuota{txn: txn, key: key}}, nil
}

// store writes u as the branch's usage in the transaction.
func (q *sharedQuota) store(u Usage) error {
	b, err := json.Marshal(u)
	if err != nil {
		return err
	}
	return q.txn.Set(q.key, b)
}

// forgetTimeout bounds dropping a stored usage.
const forgetTimeout = 30 * time.Second

// forgetUsage drops what is known of a branch's usage after a change
// that did not go through a quota transaction: in this process, and in
// the store with shared quotas.
func (s *Service) forgetUsage(repo, branch uint64) {
	s.usage.forget(repo, branch)
	if s.sharedQuotas {
		s.forgetShared(repo, branch)
	}
}

// forgetShared drops the stored usage of a branch (a merge, a restore,
// an import or new limits changed it outside a quota transaction): the
// next write counts again.
func (s *Service) forgetShared(repo, branch uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), forgetTimeout)
	defer cancel()
	err := s.db.Update(ctx, func(txn kv.Txn) error { return txn.Delete(usageKey(repo, branch)) })
	if err != nil {
		s.log.Warn("dropping a branch's stored usage; quotas count from it until it is", "err", err)
	}
}
