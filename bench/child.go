package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/johannesboyne/gofakes3"

	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/gateway"
)

// ServeChild is the body of a server process the memory workload spawns
// (see Spawner): it serves kind (KindNAS or KindGoFakeS3) on dataDir at
// addr with BenchCredentials until ctx ends. It is the same gateway
// assembly as `nas serve`, without the garbage-collection timer.
func ServeChild(ctx context.Context, kind, dataDir, addr string) error {
	log := slog.New(slog.DiscardHandler)
	switch kind {
	case KindNAS:
		g, err := gateway.Open(gateway.Config{DataDir: dataDir, Owner: auth.Owner{AccessKey: benchAccessKey, SecretKey: benchSecretKey}, Log: log})
		if err != nil {
			return fmt.Errorf("open gateway: %w", err)
		}
		defer g.Close()
		g.Start()
		return gateway.Serve(ctx, g.Handler(), gateway.ServeOptions{Addr: addr}, log)
	case KindGoFakeS3:
		be, err := NewGoFakeS3Backend(dataDir)
		if err != nil {
			return err
		}
		var lc net.ListenConfig
		ln, err := lc.Listen(ctx, "tcp", addr)
		if err != nil {
			return fmt.Errorf("listen: %w", err)
		}
		srv := &http.Server{Handler: gofakes3.New(be).Server(), ReadHeaderTimeout: 30 * time.Second}
		go func() {
			<-ctx.Done()
			_ = srv.Close()
		}()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
	return fmt.Errorf("bench: cannot serve %q in a child process", kind)
}
