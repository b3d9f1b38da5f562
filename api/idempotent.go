package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/keyspace"
	"github.com/agentnas/nas/kv"
)

// stripKey removes idempotency_key from a JSON object so verbs can reject
// unknown fields.
func stripKey(body []byte) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return body
	}
	if _, ok := m["idempotency_key"]; !ok {
		return body
	}
	delete(m, "idempotency_key")
	out, _ := json.Marshal(m)
	return out
}

// idempotencyTTL is how long a write's answer is kept for replay;
// claimTTL is how long a claim of a call that never finished (the gateway
// died during it) blocks a retry.
const (
	idempotencyTTL = 24 * time.Hour
	claimTTL       = 15 * time.Minute
)

// replay is the stored value of an idempotency key: a claim while the
// first call runs, then its answer.
type replay struct {
	Expires int64           `json:"expires"`
	Request []byte          `json:"request"` // SHA-256 of the request body
	Pending bool            `json:"pending,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
}

// inflight serialises the calls of one idempotency key inside this
// process, so a concurrent repeat waits for the first call's answer.
type inflight struct {
	mu    sync.Mutex
	calls map[string]chan struct{} // closed when the call ends
}

// idempotent runs fn once per key: the first call claims the key in one kv
// transaction (so two calls, even in two processes, can never both run fn),
// and a repeat within idempotencyTTL answers the stored result. A repeat
// with a different request body is refused; one that arrives while the
// first still runs waits for it, or, when another process holds the claim
// (or a crash left it), is told to retry. A failed call releases its
// claim, so a retry runs again.
func (h *Handler) idempotent(ctx context.Context, key string, body []byte, fn func() (any, error)) (any, error) {
	k := append([]byte(keyspace.Idempotency), key...)
	sum := sha256.Sum256(body)
	release, err := h.idem.acquire(ctx, key)
	if err != nil {
		return nil, err
	}
	defer release()
	prev, claimed, err := h.claim(ctx, k, sum[:])
	switch {
	case err != nil:
		return nil, err
	case claimed:
		return h.runClaimed(ctx, k, sum[:], fn)
	case prev.Pending:
		return nil, &Error{Status: http.StatusConflict, Code: apiv1.CodeConflict, Retryable: true,
			Message: "an earlier call with this idempotency_key is still running; retry later"}
	}
	return prev.Result, nil
}

// claim reads k and, when it holds no live value, claims it, in one
// transaction. It answers the live value otherwise.
func (h *Handler) claim(ctx context.Context, k, sum []byte) (prev replay, claimed bool, err error) {
	now := time.Now()
	err = h.db.Update(ctx, func(txn kv.Txn) error {
		prev, claimed = replay{}, false
		v, err := txn.Get(k)
		switch {
		case errors.Is(err, kv.ErrNotFound):
		case err != nil:
			return err
		default:
			if json.Unmarshal(v, &prev) == nil && now.UnixNano() < prev.Expires {
				if len(prev.Request) > 0 && !bytes.Equal(prev.Request, sum) { // (answers stored before requests were hashed have none)
					return &Error{Status: http.StatusConflict, Code: apiv1.CodeConflict,
						Message: "idempotency_key was used for a different request; use a new key"}
				}
				return nil
			}
		}
		b, _ := json.Marshal(replay{Expires: now.Add(claimTTL).UnixNano(), Request: sum, Pending: true})
		claimed = true
		return txn.Set(k, b)
	})
	return prev, claimed, err
}

// runClaimed runs fn under the claim of k and stores its answer, or
// releases the claim when it fails.
func (h *Handler) runClaimed(ctx context.Context, k, sum []byte, fn func() (any, error)) (any, error) {
	res, err := fn()
	var b []byte
	if err == nil {
		b, err = json.Marshal(res)
	}
	ctx = context.WithoutCancel(ctx) // the claim is settled even if the client went away
	if err != nil {
		if derr := h.db.Update(ctx, func(txn kv.Txn) error { return txn.Delete(k) }); derr != nil {
			h.log.Warn("releasing idempotency claim", "err", derr)
		}
		return nil, err
	}
	kept := b
	if r := forReplay(res); r != nil {
		kept, _ = json.Marshal(r)
	}
	rp, _ := json.Marshal(replay{Expires: time.Now().Add(idempotencyTTL).UnixNano(), Request: sum, Result: kept})
	if err := h.db.Update(ctx, func(txn kv.Txn) error { return txn.Set(k, rp) }); err != nil {
		h.log.Warn("storing idempotent answer", "err", err)
	}
	return json.RawMessage(b), nil
}

// acquire waits until no other call of key runs in this process and
// marks one running; release ends it.
func (f *inflight) acquire(ctx context.Context, key string) (release func(), err error) {
	for {
		f.mu.Lock()
		c, busy := f.calls[key]
		if !busy {
			if f.calls == nil {
				f.calls = map[string]chan struct{}{}
			}
			c = make(chan struct{})
			f.calls[key] = c
			f.mu.Unlock()
			return func() {
				f.mu.Lock()
				delete(f.calls, key)
				f.mu.Unlock()
				close(c)
			}, nil
		}
		f.mu.Unlock()
		select {
		case <-c:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
