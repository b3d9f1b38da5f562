package gateway

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentnas/nas/cas"
	"github.com/agentnas/nas/cas/s3seg"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/kv/pgkv"
)

// metaTimeout bounds connecting to and migrating a PostgreSQL metadata
// store when the gateway opens.
const metaTimeout = 30 * time.Second

// IsSharedMeta reports whether meta names a metadata store that several
// gateways can share (a postgres:// or postgresql:// URL), rather than
// the embedded Badger store of one data directory.
func IsSharedMeta(meta string) bool {
	return strings.HasPrefix(meta, "postgres://") || strings.HasPrefix(meta, "postgresql://")
}

// openMeta opens the metadata store Config.Meta names: the embedded
// Badger store under DATA/kv when it is empty, PostgreSQL for a postgres
// URL. Anything else is refused, so a typo never opens an empty store.
func openMeta(ctx context.Context, c Config) (kv.DB, error) {
	switch {
	case c.Meta == "":
		return kv.OpenBadger(filepath.Join(c.DataDir, "kv"), kv.BadgerOptions{Logger: c.Log, Sizing: c.KV})
	case IsSharedMeta(c.Meta):
		db, err := pgkv.Open(ctx, c.Meta, pgkv.Options{Logger: c.Log})
		if err != nil {
			return nil, fmt.Errorf("metadata store %s: %w", redactURL(c.Meta), err)
		}
		return db, nil
	}
	return nil, fmt.Errorf("metadata store %q: want empty (embedded) or a postgres:// URL", redactURL(c.Meta))
}

// redactURL hides the password of a connection URL for logs and errors.
func redactURL(u string) string {
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok {
		return u
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return u
	}
	user, _, hasPass := strings.Cut(rest[:at], ":")
	if !hasPass {
		return u
	}
	return scheme + "://" + user + ":xxxxx" + rest[at:]
}

// openRemote opens the bucket Config.Chunks names, if any, and checks
// that it answers: a gateway that cannot store its chunks does not start.
func openRemote(c Config) (cas.Remote, error) {
	if c.Chunks == nil {
		return nil, nil
	}
	st, err := s3seg.Open(*c.Chunks)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), metaTimeout)
	defer cancel()
	if err := st.Check(ctx); err != nil {
		return nil, err
	}
	return st, nil
}
