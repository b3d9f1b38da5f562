package e2e_test

import (
	"testing"

	"github.com/agentnas/nas/internal/pgtest"
	"github.com/agentnas/nas/nastest"
)

// TestMain shares one PostgreSQL among the tests when NAS_TEST_GATEWAYS
// runs the suite against clusters of gateways.
func TestMain(m *testing.M) { pgtest.Main(m, nastest.Clustered()) }
