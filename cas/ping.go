package cas

import (
	"context"
	"fmt"
	"os"
)

// Ping checks that the store's segment root can be reached: it stats the
// directory. It reads no chunk and writes nothing (readiness probes).
func (s *Store) Ping(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	fi, err := os.Stat(s.dir)
	if err != nil {
		return fmt.Errorf("chunk store: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("chunk store: %s is not a directory", s.dir)
	}
	return nil
}
