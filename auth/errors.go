package auth

import (
	"errors"
	"fmt"

	"github.com/agentnas/nas/lease"
)

// The answers of Authorize and of the budget charges, as errors. Every
// edge translates them in its one table: S3 codes in s3api, the JSON error
// document in api, errno in the mount (through the HTTP answers).
var (
	// ErrNotFound is returned when the target lies outside the lease's
	// view: for the lease it does not exist, so the edge answers exactly
	// as for a missing key (NoSuchKey, NoSuchUpload, ENOENT, ...).
	ErrNotFound = errors.New("auth: not found")
	// ErrNoSuchBucket is returned (wrapping ErrNotFound) when the
	// repository or branch itself is outside the lease (NoSuchBucket).
	ErrNoSuchBucket = fmt.Errorf("repository or branch: %w", ErrNotFound)
	// ErrNoSuchVersion is returned (wrapping ErrNotFound) when a commit or
	// version the request names is not in the history of the lease's
	// branch (NoSuchVersion).
	ErrNoSuchVersion = fmt.Errorf("commit or version: %w", ErrNotFound)
	// ErrDenied is returned when the target is visible but the action is
	// not granted, or the operation is the owner's (AccessDenied, EACCES).
	ErrDenied = errors.New("auth: access denied")
	// ErrOverBudget is returned when a budget of the lease or an ancestor
	// does not cover the request (QuotaExceeded, EDQUOT).
	ErrOverBudget = errors.New("auth: budget exhausted")
	// ErrLeaseEnded is returned when the lease (or an ancestor) expired or
	// was revoked after the request was authenticated (ExpiredToken,
	// ESTALE). It wraps lease.ErrExpired.
	ErrLeaseEnded = fmt.Errorf("auth: %w", lease.ErrExpired)
	// ErrUnsignedHeaders is returned when the request carries an x-amz-*
	// or x-nas-* header that the signature does not cover (403
	// AccessDenied, as AWS answers).
	ErrUnsignedHeaders = errors.New("auth: there were headers present in the request which were not signed")
	// ErrUnsignedPayload is returned when a door that changes authority
	// (the control API, STS) receives a payload the signature does not
	// cover: UNSIGNED-PAYLOAD, unsigned aws-chunked bodies, or presigned
	// query authentication (403).
	ErrUnsignedPayload = errors.New("auth: this endpoint requires a signed payload in a header-signed request")
	// ErrRunTaken is returned (wrapping ErrDenied) when a web identity
	// names a run (RoleSessionName) that the owner or another identity
	// started (AccessDenied).
	ErrRunTaken = fmt.Errorf("the run was started by someone else: %w", ErrDenied)
	// ErrNotTrusted is returned (wrapping ErrDenied) when a web identity
	// token names a role that does not exist or does not trust its
	// issuer, subject or claims (AccessDenied; a missing role reads as
	// one that does not trust the token).
	ErrNotTrusted = fmt.Errorf("the role does not trust this web identity: %w", ErrDenied)
	// ErrInvalidIdentityToken is returned when a web identity token is
	// malformed, signed with a refused algorithm or an unknown key, for
	// another audience, or not yet valid (InvalidIdentityToken).
	ErrInvalidIdentityToken = errors.New("auth: invalid web identity token")
	// ErrIdentityTokenExpired is returned when a web identity token's
	// exp has passed (ExpiredTokenException).
	ErrIdentityTokenExpired = errors.New("auth: web identity token expired")
	// ErrIDPCommunication is returned when the issuer's discovery
	// document or key set cannot be fetched (IDPCommunicationError,
	// which SDKs retry).
	ErrIDPCommunication = errors.New("auth: cannot reach the identity provider")
	// ErrBadBearer is returned when a request to the MCP door carries an
	// Authorization header that is not "Bearer" and a well-formed MCP
	// token (401).
	ErrBadBearer = errors.New("auth: malformed bearer token")
	// ErrInvalid is returned for a charge that can never be right: a
	// negative length, a sum that overflows (400).
	ErrInvalid = errors.New("auth: invalid request")
)

// Refusal is the error Authorize and the charges return: the decision,
// the rule that matched (for the record and the message) and what was
// asked. It wraps one of the errors above, so edges match with errors.Is.
type Refusal struct {
	Decision lease.Decision
	Rule     string
	Action   string
	Target   Target
	kind     error
}

func (r *Refusal) Error() string {
	msg := r.kind.Error() + ": " + r.Rule
	if r.Target.Key != "" {
		msg += " (" + r.Action + " " + r.Target.Key + ")"
	}
	return msg
}

// Unwrap returns the category (ErrNotFound, ErrDenied, ...).
func (r *Refusal) Unwrap() error { return r.kind }
