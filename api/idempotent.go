package api

import (
	"context"
	"encoding/json"
	"errors"
	"time"

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

// idempotencyTTL is how long a write's answer is kept for replay.
const idempotencyTTL = 24 * time.Hour

type replay struct {
	Expires int64           `json:"expires"`
	Result  json.RawMessage `json:"result"`
}

func (h *Handler) idempotent(ctx context.Context, key string, fn func() (any, error)) (any, error) {
	k := append([]byte("I/"), key...)
	var prev []byte
	err := h.db.View(ctx, func(r kv.Reader) error {
		v, err := r.Get(k)
		if err == nil {
			prev = v
		}
		if errors.Is(err, kv.ErrNotFound) {
			return nil
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if prev != nil {
		var rp replay
		if json.Unmarshal(prev, &rp) == nil && time.Now().UnixNano() < rp.Expires {
			return rp.Result, nil
		}
	}
	res, err := fn()
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	rp, _ := json.Marshal(replay{Expires: time.Now().Add(idempotencyTTL).UnixNano(), Result: b})
	if err := h.db.Update(ctx, func(txn kv.Txn) error { return txn.Set(k, rp) }); err != nil {
		h.log.Warn("storing idempotent answer", "err", err)
	}
	return json.RawMessage(b), nil
}
