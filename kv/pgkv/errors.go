package pgkv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/agentnas/nas/kv"
	"github.com/jackc/pgx/v5/pgconn"
)

// SQLSTATEs that Update retries.
const (
	serializationFailure = "40001"
	deadlockDetected     = "40P01"
)

// retryable reports whether err is a serialization failure or a deadlock,
// after which the whole transaction may run again.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == serializationFailure || pe.Code == deadlockDetected)
}

// classify wraps err with kv.ErrUnavailable when it says the server cannot
// be reached: a failed connection, a connection lost or refused, or the
// server shutting down.
func classify(err error) error {
	if err == nil || errors.Is(err, kv.ErrUnavailable) || !unavailable(err) {
		return err
	}
	return fmt.Errorf("%w: %w", kv.ErrUnavailable, err)
}

func unavailable(err error) bool {
	if errors.Is(err, context.Canceled) {
		return false // the caller gave up; that says nothing of the server
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		// Class 08 is connection exception; 57P01..57P03 are the server
		// shutting down, crashing or not yet accepting connections.
		return strings.HasPrefix(pe.Code, "08") || pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03"
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	return errors.As(err, &ce) || errors.As(err, &ne) || pgconn.SafeToRetry(err) ||
		errors.Is(err, pgconn.ErrConnClosed) || // a pooled connection the server dropped
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, context.DeadlineExceeded) && pgconn.Timeout(err)
}
