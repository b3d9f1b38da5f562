package check

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"sync"
	"time"

	"github.com/agentnas/nas/hook"
	"github.com/agentnas/nas/keyspace"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/program"
	"github.com/agentnas/nas/record"
)

// job is one claimed attempt: a result, its check and what it is sent.
type job struct {
	proposal string
	res      Result
	check    *Check
	payload  Payload
}

// outcome is what an attempt came to; retry asks for another attempt.
type outcome struct {
	state, message string
	retry          bool
}

// Run runs pending checks until ctx ends.
func (s *Service) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	slots := make(chan struct{}, s.o.Parallel)
	t := time.NewTicker(s.o.Poll)
	defer t.Stop()
	for {
		if err := s.round(ctx, &wg, slots); err != nil && ctx.Err() == nil {
			s.o.Log.Warn("pre-merge checks", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.kick:
		}
	}
}

// round claims the due results a free slot can take and runs each in
// the background.
func (s *Service) round(ctx context.Context, wg *sync.WaitGroup, slots chan struct{}) error {
	due, err := s.due(ctx)
	if err != nil {
		return err
	}
	for _, key := range due {
		select {
		case slots <- struct{}{}:
		default:
			return nil // busy: the next round takes the rest
		}
		j, err := s.claim(ctx, key)
		if err != nil || j == nil {
			<-slots
			if err != nil {
				return err
			}
			continue
		}
		wg.Go(func() {
			defer func() { <-slots }()
			s.finish(ctx, j, s.attempt(ctx, j))
		})
	}
	return nil
}

// due lists the pending results whose next try has come and that no
// round has claimed, by their pending keys.
func (s *Service) due(ctx context.Context) ([][]byte, error) {
	now := time.Now()
	var out [][]byte
	err := s.db.View(ctx, func(r kv.Reader) error {
		out = nil
		var keys [][]byte
		err := r.Scan(kv.Prefix([]byte(keyspace.CheckPending)), func(k, _ []byte) error {
			keys = append(keys, slices.Clone(k))
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range keys {
			var res Result
			if err := getJSON(r, resultKey(proposalOf(k)), &res); err != nil {
				if err := ignoreNotFound(err); err != nil {
					return err
				}
				continue
			}
			if res.State == StatePending && !now.Before(res.NextTry) && now.After(res.Claim) {
				out = append(out, k)
			}
		}
		return nil
	})
	return out, err
}

// claim takes the result at key for one attempt, unless another round
// did meanwhile (nil job).
func (s *Service) claim(ctx context.Context, key []byte) (*job, error) {
	proposal, name := proposalOf(key)
	var j *job
	err := s.db.Update(ctx, func(txn kv.Txn) error {
		j = nil
		var res Result
		if err := getJSON(txn, resultKey(proposal, name), &res); err != nil {
			return ignoreNotFound(err)
		}
		now := time.Now()
		if res.State != StatePending || now.Before(res.NextTry) || !now.After(res.Claim) {
			return nil
		}
		var p Payload
		if err := getJSON(txn, subjectKey(proposal), &p); err != nil {
			return ignoreNotFound(err)
		}
		c, err := getCheck(txn, p.Repo, name)
		if errors.Is(err, ErrNotFound) {
			c = nil // removed: the attempt says so
		} else if err != nil {
			return err
		}
		res.Attempts++
		res.Try = randomHex(8)
		res.Claim = now.Add(s.claimFor(c))
		if res.Started.IsZero() {
			res.Started = now.UTC()
		}
		if err := putResult(txn, proposal, &res); err != nil {
			return err
		}
		p.Check, p.Attempt, p.Time = name, res.Attempts, now.UTC()
		j = &job{proposal: proposal, res: res, check: c, payload: p}
		return nil
	})
	return j, err
}

// claimFor is how long a claim holds: past the attempt's own timeout, so
// only a gateway that died mid-attempt leaves one to expire.
func (s *Service) claimFor(c *Check) time.Duration {
	d := s.o.Timeout
	if c != nil && c.Kind == KindCommand {
		d = s.o.CommandTimeout
	}
	if c != nil && c.Timeout > 0 {
		d = c.Timeout
	}
	return 2*d + 10*time.Second
}

func ignoreNotFound(err error) error {
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// attempt runs one attempt of j.
func (s *Service) attempt(ctx context.Context, j *job) outcome {
	if j.check == nil {
		return outcome{state: StateError, message: "the check was removed (nas check add it again, then nas check rerun)"}
	}
	body, err := json.Marshal(j.payload)
	if err != nil {
		return outcome{state: StateError, message: err.Error()}
	}
	if j.check.Kind == KindCommand {
		return s.command(ctx, j.check, body)
	}
	return s.webhook(ctx, j, body)
}

// finish stores what j's attempt came to, unless the result was rerun or
// removed meanwhile; a retry is scheduled with backoff while attempts
// are left.
func (s *Service) finish(ctx context.Context, j *job, o outcome) {
	if ctx.Err() != nil {
		return // the gateway stops: the claim expires and another attempt runs
	}
	final := false
	err := s.db.Update(ctx, func(txn kv.Txn) error {
		final = false
		var res Result
		if err := getJSON(txn, resultKey(j.proposal, j.res.Name), &res); err != nil {
			return ignoreNotFound(err)
		}
		if res.Try != j.res.Try || res.State != StatePending {
			return nil
		}
		res.Claim, res.Message = time.Time{}, o.message
		if o.retry && res.Attempts < s.o.MaxAttempts {
			res.NextTry = time.Now().Add(s.backoff(res.Attempts))
			res.Message = fmt.Sprintf("attempt %d of %d failed, retrying: %s", res.Attempts, s.o.MaxAttempts, o.message)
			return putResult(txn, j.proposal, &res)
		}
		if o.retry {
			o.state = StateError
		}
		res.State, res.Finished, res.NextTry = o.state, time.Now().UTC(), time.Time{}
		final = true
		return putResult(txn, j.proposal, &res)
	})
	if err != nil {
		s.o.Log.Warn("storing a check's result", "proposal", j.proposal, "check", j.res.Name, "err", err)
		return
	}
	s.o.Log.Info("pre-merge check", "proposal", j.proposal, "check", j.res.Name, "attempt", j.res.Attempts, "state", o.state, "retry", o.retry)
	if final {
		s.record(ctx, j, o)
		if s.o.OnFinal != nil {
			s.o.OnFinal(ctx, j.proposal)
		}
	}
}

// record writes j's final result to the flight recorder (after it is
// stored: a result is an observation, and one the recorder missed is
// still on the card and in the log).
func (s *Service) record(ctx context.Context, j *job, o outcome) {
	if s.o.Recorder == nil {
		return
	}
	p := j.payload
	effect := record.EffectDeny
	if o.state == StatePass {
		effect = record.EffectAllow
	}
	e := record.Event{Kind: record.KindCheck, Run: p.Run, Lease: p.Lease, Repo: p.Repo, Branch: p.Into,
		Decision: record.Decision{Effect: effect, Rule: "check " + j.res.Name, Reason: o.state},
		Details: map[string]string{"proposal": p.ProposalID, "gate": p.GateID, "from": p.Branch, "check": j.res.Name,
			"state": o.state, "diff_sha256": p.DiffSHA256}}
	if _, err := s.o.Recorder.Append(ctx, e); err != nil {
		s.o.Log.Warn("recording a check's result", "proposal", p.ProposalID, "check", j.res.Name, "err", err)
	}
}

// backoff is the delay after the n-th failed attempt.
func (s *Service) backoff(n int) time.Duration {
	b := s.o.Backoff
	for i := 1; i < n && b < time.Hour; i++ {
		b *= 2
	}
	return b
}

// webhook posts the payload, signed with the check's secret, and reads
// its answer: anything but a 2xx with a valid answer is retried.
func (s *Service) webhook(ctx context.Context, j *job, body []byte) outcome {
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(j.check.Timeout, s.o.Timeout))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, j.check.URL, bytes.NewReader(body))
	if err != nil {
		return outcome{state: StateError, message: err.Error()}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "agentnas-check/1")
	req.Header.Set("x-nas-check", j.check.Name)
	req.Header.Set("x-nas-delivery", fmt.Sprintf("%s-%s-%d", j.proposal, j.check.Name, j.res.Attempts))
	req.Header.Set(hook.SignatureHeader, hook.Sign(j.check.Secret, time.Now(), body))
	resp, err := s.o.Client.Do(req)
	if err != nil {
		return outcome{message: err.Error(), retry: true}
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return outcome{message: fmt.Sprintf("%s: %q", resp.Status, msg), retry: true}
	}
	a, err := DecodeAnswer(resp.Body, j.payload.DiffSHA256)
	if err != nil {
		return outcome{message: err.Error(), retry: true}
	}
	return outcome{state: a.State, message: a.Message}
}

// command runs a command check once: the payload on stdin, exit 0
// passes, its output (cut at MaxMessage) is the message; at its timeout
// its process group is killed.
func (s *Service) command(ctx context.Context, c *Check, body []byte) outcome {
	real, err := s.allow(c.Command)
	if err != nil {
		return outcome{state: StateError, message: err.Error()}
	}
	timeout := cmp.Or(c.Timeout, s.o.CommandTimeout)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, real, c.Args...)
	cmd.Env, cmd.Dir, cmd.Stdin = program.Env(), "/", bytes.NewReader(body)
	out := &capped{}
	cmd.Stdout, cmd.Stderr = out, out
	program.SetGroup(cmd)
	cmd.Cancel = func() error { program.KillGroup(cmd); return nil }
	cmd.WaitDelay = time.Second
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return outcome{state: StateError, message: clip(fmt.Sprintf("timed out after %v: killed\n%s", timeout, out.b.String()))}
	case err == nil:
		return outcome{state: StatePass, message: clip(out.b.String())}
	case errors.As(err, &exit):
		return outcome{state: StateFail, message: clip(fmt.Sprintf("exit status %d\n%s", exit.ExitCode(), out.b.String()))}
	}
	return outcome{state: StateError, message: clip(err.Error())}
}

// capped keeps the first MaxMessage bytes written to it and drops the
// rest (exec writes to it from one goroutine at a time).
type capped struct{ b bytes.Buffer }

func (c *capped) Write(p []byte) (int, error) {
	if room := MaxMessage - c.b.Len(); room > 0 {
		c.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
