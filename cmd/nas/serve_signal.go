package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentnas/nas/gateway"
)

// serveKeyPair loads --tls-cert and --tls-key (nil for plain HTTP), after
// refusing plain HTTP beyond loopback without --insecure.
func serveKeyPair(o serveOptions) (*gateway.KeyPair, error) {
	if o.tlsCert == "" && o.tlsKey == "" {
		if !o.insecure && !gateway.IsLoopback(o.addr) {
			return nil, gateway.ErrInsecure
		}
		return nil, nil
	}
	if o.tlsCert == "" || o.tlsKey == "" {
		return nil, usagef("--tls-cert and --tls-key go together")
	}
	return gateway.LoadKeyPair(o.tlsCert, o.tlsKey)
}

// reloadOnHangup makes SIGHUP reload what can be reloaded instead of
// ending the process, until ctx ends or the returned stop is called.
func reloadOnHangup(ctx context.Context, kp *gateway.KeyPair, lf *logFile, log *slog.Logger) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-done:
				return
			case <-hup:
				reopenLog(lf, log)
				reload(kp, log)
			}
		}
	}()
	return func() {
		signal.Stop(hup)
		close(done)
	}
}

// reopenLog reopens the --log-file, if there is one.
func reopenLog(lf *logFile, log *slog.Logger) {
	if lf == nil {
		return
	}
	if err := lf.Reopen(); err != nil {
		log.Error("SIGHUP: log file not reopened, still writing the previous one", "err", err)
		return
	}
	log.Info("SIGHUP: reopened the log file", "path", lf.path)
}

// reload reloads the TLS certificate and logs what it did. A bad file is
// logged and the old certificate stays. Policies and roles live in the
// data directory and change through the control API at once, so they have
// nothing to reload.
func reload(kp *gateway.KeyPair, log *slog.Logger) {
	const rest = "policies and roles take effect when set through the API"
	if kp == nil {
		log.Info("SIGHUP: nothing to reload (no TLS certificate)", "note", rest)
		return
	}
	if err := kp.Reload(); err != nil {
		log.Error("SIGHUP: TLS certificate not reloaded, serving the previous one", "err", err)
		return
	}
	log.Info("SIGHUP: reloaded the TLS certificate", "note", rest)
}
