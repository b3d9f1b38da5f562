package mcpserver

import (
	"errors"
	"fmt"

	"github.com/agentnas/nas/client"
)

// ErrNoTarget is returned by New when Options name no client,
// repository or branch.
var ErrNoTarget = errors.New("mcpserver: a client, a repository and a branch are required")

// The codes a refused tool call starts with: the specification's error
// mapping, in S3's words, which agents already know.
const (
	// CodeNotFound is returned when a path does not exist or is outside
	// the lease's view; the two are never told apart.
	CodeNotFound = "NotFound"
	// CodeAccessDenied is returned when a path is visible but the lease
	// does not allow the action on it.
	CodeAccessDenied = "AccessDenied"
	// CodeQuotaExceeded is returned when a budget of the lease (bytes
	// read or written, requests) or a quota of its branch is spent.
	CodeQuotaExceeded = "QuotaExceeded"
	// CodeExpiredToken is returned when the lease expired or was revoked.
	CodeExpiredToken = "ExpiredToken"
	// CodeStorageFull is returned when the gateway's disk is full.
	CodeStorageFull = "StorageFull"
)

// codes is the one translation table of this edge: a gateway error code
// (S3 or control API) to the code the agent sees. Codes not here pass
// through as the gateway gave them (InvalidArgument, TooLarge, ...).
var codes = map[string]string{
	"NoSuchKey":          CodeNotFound,
	"NoSuchBucket":       CodeNotFound,
	"NoSuchVersion":      CodeNotFound,
	"NoSuchUpload":       CodeNotFound,
	"NotFound":           CodeNotFound,
	"AccessDenied":       CodeAccessDenied,
	"QuotaExceeded":      CodeQuotaExceeded,
	"ExpiredToken":       CodeExpiredToken,
	"InvalidAccessKeyId": CodeExpiredToken,
	"StorageFull":        CodeStorageFull,
}

// hints say what an agent can do about each code.
var hints = map[string]string{
	CodeNotFound:      "no such path in this lease's view",
	CodeAccessDenied:  "the lease does not allow this action here",
	CodeQuotaExceeded: "a budget of the lease is spent; ask for a new lease or stop",
	CodeExpiredToken:  "the lease has expired or was revoked; ask for a new lease",
	CodeStorageFull:   "the gateway's storage is full; nothing was written, retry later or tell a person",
}

// toolError is a refused call as the agent sees it: a code of the
// mapping and what the gateway said.
type toolError struct {
	code, msg string
	err       error
}

func (e *toolError) Error() string { return e.code + ": " + e.msg }

func (e *toolError) Unwrap() error { return e.err }

// refusal translates err, the failure of a gateway call made for op
// ("read docs/a.md"), into the error a tool returns (and the SDK turns
// into a result with IsError). A failure that is not the gateway's
// answer (the gateway unreachable, a canceled call) keeps its text.
func refusal(op string, err error) error {
	var ce *client.Error
	if !errors.As(err, &ce) {
		return fmt.Errorf("%s: %w", op, err)
	}
	code := mapCode(ce)
	msg := ce.Message
	if h, ok := hints[code]; ok {
		// The gateway's own text is left out of NotFound: the agent
		// learns nothing about a path it cannot see.
		msg = op + ": " + h
		if code != CodeNotFound && ce.Message != "" {
			msg += " (" + ce.Message + ")"
		}
	} else {
		msg = op + ": " + msg
	}
	return &toolError{code: code, msg: msg, err: err}
}

// mapCode is the code ce answers to the agent.
func mapCode(ce *client.Error) string {
	if ce.Code == "Unauthenticated" && (ce.Reason == "expired" || ce.Reason == "revoked") {
		return CodeExpiredToken
	}
	if c, ok := codes[ce.Code]; ok {
		return c
	}
	return ce.Code
}
