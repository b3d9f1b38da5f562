package pgtest_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agentnas/nas/internal/pgtest"
)

// TestStart: a cluster starts, answers SELECT 1, and two clusters of one
// test are separate.
func TestStart(t *testing.T) {
	ctx := context.Background()
	a, b := pgtest.Start(t), pgtest.StartCluster(t)
	if a == b.DSN {
		t.Fatalf("two clusters share the DSN %s", a)
	}
	conn, err := pgx.Connect(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("SELECT 1: %d, %v", one, err)
	}
	b.Stop()
	if c, err := pgx.Connect(ctx, b.DSN); err == nil {
		c.Close(ctx)
		t.Fatal("a stopped cluster accepts connections")
	}
}
