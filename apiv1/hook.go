package apiv1

import "time"

// Hook is a repository's webhook. Secret is shown only in the answer of
// hook/add: it signs every delivery (x-nas-signature: t=UNIX,v1=HEX, the
// HMAC-SHA256 of "UNIX." and the body).
type Hook struct {
	ID       string    `json:"id"`
	Repo     string    `json:"repo"`
	URL      string    `json:"url"`
	Events   []string  `json:"events"`
	Secret   string    `json:"secret,omitempty"`
	Created  time.Time `json:"created"`
	Cursor   uint64    `json:"cursor"`   // the first flight-recorder sequence not yet delivered
	Failures int       `json:"failures"` // failed attempts at the event at the cursor
	NextTry  time.Time `json:"next_try,omitzero"`
}

// HookAddRequest registers URL for Events (gate.pending, gate.decided,
// commit, merge, branch.created, branch.deleted, lease.revoked,
// source.push, check.finished; object.created and object.removed: each commit's changed
// keys as S3 event records) of Repo, from now on.
type HookAddRequest struct {
	Repo   string   `json:"repo"`
	URL    string   `json:"url"`
	Events []string `json:"events"`
}

// HookListRequest lists the hooks of Repo ("": of every repository).
type HookListRequest struct {
	Repo string `json:"repo,omitempty"`
}

// HookRemoveRequest removes a hook and its delivery log.
type HookRemoveRequest struct {
	Repo string `json:"repo"`
	ID   string `json:"id"`
}

// HookDeliveriesRequest lists a hook's delivery log, newest first.
type HookDeliveriesRequest struct {
	Repo string `json:"repo"`
	ID   string `json:"id"`
}

// HookResponse answers hook/add and hook/remove.
type HookResponse struct {
	Hook Hook `json:"hook"`
}

// HookListResponse answers hook/list.
type HookListResponse struct {
	Hooks []Hook `json:"hooks"`
}

// HookDelivery is one attempt to deliver an event.
type HookDelivery struct {
	Seq        uint64    `json:"seq"`
	Event      string    `json:"event"`
	Attempt    int       `json:"attempt"`
	Time       time.Time `json:"time"`
	Status     int       `json:"status"` // 0: no answer
	Error      string    `json:"error,omitempty"`
	DurationMS int64     `json:"duration_ms"`
}

// HookDeliveriesResponse answers hook/deliveries.
type HookDeliveriesResponse struct {
	Deliveries []HookDelivery `json:"deliveries"`
}

// Op implements Request.
func (HookAddRequest) Op() string { return "hook/add" }

// Op implements Request.
func (HookListRequest) Op() string { return "hook/list" }

// Op implements Request.
func (HookRemoveRequest) Op() string { return "hook/remove" }

// Op implements Request.
func (HookDeliveriesRequest) Op() string { return "hook/deliveries" }
