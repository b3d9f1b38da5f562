package check

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/agentnas/nas/hook"
	"github.com/agentnas/nas/keyspace"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/program"
	"github.com/agentnas/nas/record"
)

// The kinds of check.
const (
	KindWebhook = "webhook"
	KindCommand = "command"
)

// Limits.
const (
	MaxChecks     = 32 // checks of one repository
	MaxArgs       = 32 // arguments of a command check
	MaxArgLen     = 4096
	MaxTimeout    = 30 * time.Minute
	secretBytes   = 32
	maxNameLength = 64
)

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

// Check is one named check of a repository.
type Check struct {
	Repo    string   `json:"repo"`
	Name    string   `json:"name"`
	Kind    string   `json:"kind"` // webhook or command
	URL     string   `json:"url,omitempty"`
	Secret  string   `json:"secret,omitempty"`
	Command string   `json:"command,omitempty"` // absolute path inside the --check-commands folder
	Args    []string `json:"args,omitempty"`
	// Timeout bounds one attempt (0: the gateway's default).
	Timeout time.Duration `json:"timeout,omitempty"`
	Created time.Time     `json:"created"`
}

// Rule is the checks a merge into Branch requires.
type Rule struct {
	Branch string   `json:"branch"`
	Checks []string `json:"checks"`
}

// Options tunes a Service; the zero value is the default.
type Options struct {
	// Commands is the folder command checks run from ("": none may run).
	Commands string
	Poll     time.Duration // how often pending results are looked for (0: 500 ms)
	Timeout  time.Duration // a webhook attempt's bound (0: 30 s)
	// CommandTimeout bounds a command check (0: 5 min).
	CommandTimeout time.Duration
	Backoff        time.Duration // the first retry's delay, doubled (0: 2 s)
	MaxAttempts    int           // webhook attempts before error (0: 4)
	Parallel       int           // checks run at once (0: 4)
	Client         *http.Client  // nil: one of its own, never following redirects
	Log            *slog.Logger
	// Recorder, when set, is told each final result (event "check").
	Recorder Recorder
	// OnFinal, when set, is called after a proposal's check came to its
	// final result (the gate merges a proposal whose checks all passed
	// when its policy would have merged it).
	OnFinal func(ctx context.Context, proposal string)
}

// Recorder writes flight-recorder events.
type Recorder interface {
	Append(ctx context.Context, e record.Event) (record.Event, error)
}

// Service keeps the checks, their rules and results, and runs them.
type Service struct {
	db   kv.DB
	o    Options
	kick chan struct{} // a result became pending: look now
}

// New returns the checks kept in db; Run runs them.
func New(db kv.DB, o Options) *Service {
	if o.Poll <= 0 {
		o.Poll = 500 * time.Millisecond
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	if o.CommandTimeout <= 0 {
		o.CommandTimeout = 5 * time.Minute
	}
	if o.Backoff <= 0 {
		o.Backoff = 2 * time.Second
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 4
	}
	if o.Parallel <= 0 {
		o.Parallel = 4
	}
	if o.Client == nil {
		o.Client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	return &Service{db: db, o: o, kick: make(chan struct{}, 1)}
}

func checkKey(repo, name string) []byte { return []byte(keyspace.Check + repo + "/" + name) }

func ruleKey(repo, branch string) []byte { return []byte(keyspace.CheckRule + repo + "/" + branch) }

// validate checks c as Add is given it and fills in what it derives.
func (s *Service) validate(c *Check) error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("check %q: "+format+": %w", append(append([]any{c.Name}, a...), ErrInvalid)...)
	}
	if len(c.Name) > maxNameLength || !nameRE.MatchString(c.Name) {
		return bad("a name is 1-%d of [a-z0-9._-], starting with a letter or digit", maxNameLength)
	}
	if c.Timeout < 0 || c.Timeout > MaxTimeout {
		return bad("a timeout is between 0 and %v", MaxTimeout)
	}
	switch {
	case c.URL != "" && c.Command == "":
		c.Kind = KindWebhook
		if err := hook.CheckURL(c.URL); err != nil {
			return bad("%v", err)
		}
		if len(c.Args) > 0 {
			return bad("a webhook check takes no arguments")
		}
	case c.Command != "" && c.URL == "":
		c.Kind = KindCommand
		real, err := s.allow(c.Command)
		if err != nil {
			return err
		}
		c.Command = real
		if len(c.Args) > MaxArgs {
			return bad("at most %d arguments", MaxArgs)
		}
		for _, a := range c.Args {
			if len(a) > MaxArgLen || strings.IndexByte(a, 0) >= 0 {
				return bad("an argument is at most %d bytes without NUL", MaxArgLen)
			}
		}
	default:
		return bad("a check is a webhook (url) or a command, one of them")
	}
	return nil
}

// allow admits a command check's program: inside the folder, symbolic
// links resolved. It is asked at Add and again before every run.
func (s *Service) allow(path string) (string, error) {
	if s.o.Commands == "" {
		return "", fmt.Errorf("command %s: this gateway runs no check commands (start it with --check-commands DIR and install the program there): %w", path, ErrInvalid)
	}
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("command %s: the path must be absolute: %w", path, ErrInvalid)
	}
	real, err := program.Allow(s.o.Commands, path)
	if err != nil {
		return "", fmt.Errorf("command %s (the gateway's check-commands folder): %v: %w", path, err, ErrInvalid)
	}
	return real, nil
}

// Add registers check c of c.Repo, replacing none: the answer holds the
// secret of a webhook check, which only Add shows.
func (s *Service) Add(ctx context.Context, c Check) (*Check, error) {
	if err := s.validate(&c); err != nil {
		return nil, err
	}
	if c.Kind == KindWebhook {
		b := make([]byte, secretBytes)
		rand.Read(b)
		c.Secret = hex.EncodeToString(b)
	}
	c.Created = time.Now().UTC()
	err := s.db.Update(ctx, func(txn kv.Txn) error {
		if _, err := txn.Get(checkKey(c.Repo, c.Name)); err == nil {
			return fmt.Errorf("check %s of %s already exists (remove it first): %w", c.Name, c.Repo, ErrInvalid)
		} else if !errors.Is(err, kv.ErrNotFound) {
			return err
		}
		n := 0
		if err := txn.Scan(kv.Prefix([]byte(keyspace.Check+c.Repo+"/")), func(_, _ []byte) error { n++; return nil }); err != nil {
			return err
		}
		if n >= MaxChecks {
			return fmt.Errorf("repository %s already has %d checks: %w", c.Repo, n, ErrInvalid)
		}
		b, _ := json.Marshal(c)
		return txn.Set(checkKey(c.Repo, c.Name), b)
	})
	if err != nil {
		return nil, err
	}
	return &c, nil
}

// Get returns check name of repo.
func (s *Service) Get(ctx context.Context, repo, name string) (*Check, error) {
	var c Check
	err := s.db.View(ctx, func(r kv.Reader) error { return getJSON(r, checkKey(repo, name), &c) })
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("check %s of %s: %w", name, repo, ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	return &c, nil
}

// List returns the checks of repo, by name, and its rules, by branch.
func (s *Service) List(ctx context.Context, repo string) ([]Check, []Rule, error) {
	var checks []Check
	var rules []Rule
	err := s.db.View(ctx, func(r kv.Reader) error {
		err := r.Scan(kv.Prefix([]byte(keyspace.Check+repo+"/")), func(_, v []byte) error {
			var c Check
			if json.Unmarshal(v, &c) == nil {
				checks = append(checks, c)
			}
			return nil
		})
		if err != nil {
			return err
		}
		p := keyspace.CheckRule + repo + "/"
		return r.Scan(kv.Prefix([]byte(p)), func(k, v []byte) error {
			var names []string
			if json.Unmarshal(v, &names) == nil {
				rules = append(rules, Rule{Branch: strings.TrimPrefix(string(k), p), Checks: names})
			}
			return nil
		})
	})
	return checks, rules, err
}

// Remove deletes check name of repo; a rule that names it keeps naming
// it (so a merge it guards stays refused until the rule changes).
func (s *Service) Remove(ctx context.Context, repo, name string) error {
	return s.db.Update(ctx, func(txn kv.Txn) error {
		if _, err := txn.Get(checkKey(repo, name)); errors.Is(err, kv.ErrNotFound) {
			return fmt.Errorf("check %s of %s: %w", name, repo, ErrNotFound)
		} else if err != nil {
			return err
		}
		return txn.Delete(checkKey(repo, name))
	})
}

// Require sets the checks a merge into branch of repo requires; none
// removes the rule. Every name must be a check of repo.
func (s *Service) Require(ctx context.Context, repo, branch string, names []string) (*Rule, error) {
	names = slices.Compact(slices.Sorted(slices.Values(names)))
	return &Rule{Branch: branch, Checks: names}, s.db.Update(ctx, func(txn kv.Txn) error {
		if len(names) == 0 {
			return txn.Delete(ruleKey(repo, branch))
		}
		for _, n := range names {
			if _, err := txn.Get(checkKey(repo, n)); errors.Is(err, kv.ErrNotFound) {
				return fmt.Errorf("no check %s in %s (nas check add first): %w", n, repo, ErrNotFound)
			} else if err != nil {
				return err
			}
		}
		b, _ := json.Marshal(names)
		return txn.Set(ruleKey(repo, branch), b)
	})
}

// Required returns the checks a merge into branch of repo requires.
func (s *Service) Required(ctx context.Context, repo, branch string) ([]string, error) {
	var names []string
	err := s.db.View(ctx, func(r kv.Reader) error { return getJSON(r, ruleKey(repo, branch), &names) })
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	return names, err
}

// getJSON reads key into v; ErrNotFound when it is absent.
func getJSON(r kv.Reader, key []byte, v any) error {
	b, err := r.Get(key)
	if errors.Is(err, kv.ErrNotFound) {
		return ErrNotFound
	}
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
