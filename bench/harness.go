package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// Workload is a named benchmark. Run measures every subject it compares
// (targets from env, baselines of its own) and returns one Result per case.
// A workload that cannot run against a target (it needs a local data
// directory, say) reports that target as a skipped Row rather than failing.
type Workload struct {
	// Name is unique, short and lower-case ("put", "fork"); --workloads
	// selects by it.
	Name string
	// Doc is one line for `nas-bench --help` and the report.
	Doc string
	// Run runs the workload.
	Run func(ctx context.Context, env *Env) ([]*Result, error)
}

var (
	registryMu sync.Mutex // guards registry
	registry   []registered
)

// registered is a workload of the registry and whether it is built in.
type registered struct {
	w       Workload
	builtin bool
}

// Register adds a workload to the harness. Call it from an init function
// in the file that defines the workload. Workloads run and are reported in
// registration order, after the built-in ones (whatever the order in which
// package files initialise). It panics on a duplicate or empty name, or a
// nil Run.
//
// A workload defined outside this package (the FUSE workloads, say) is
// built from the exported pieces: Env for targets, profile and scratch
// directories, Load and Once to measure, Compare to interleave subjects,
// DirStore and Content for file-system baselines, and Result, Row and Curve
// to report.
func Register(w Workload) { register(w, false) }

// register adds w to the registry, built in or not (see Register).
func register(w Workload, builtin bool) {
	if w.Name == "" || w.Run == nil {
		panic("bench: Register needs a name and a Run function")
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	for _, r := range registry {
		if r.w.Name == w.Name {
			panic("bench: workload registered twice: " + w.Name)
		}
	}
	registry = append(registry, registered{w, builtin})
}

// Registered returns the registered workloads in order: the built-in ones,
// then the others in registration order.
func Registered() []Workload {
	registryMu.Lock()
	defer registryMu.Unlock()
	var out []Workload
	for _, builtin := range []bool{true, false} {
		for _, r := range registry {
			if r.builtin == builtin {
				out = append(out, r.w)
			}
		}
	}
	return out
}

// TargetSpec names a target to run against: the in-process gateway
// (KindNAS), gofakes3 (KindGoFakeS3), or an endpoint by URL.
type TargetSpec struct {
	Name   string
	Kind   string
	URL    string
	Region string
	Creds  aws.Credentials
	// PID, for an endpoint served from this machine, is its server
	// process, whose resident set the memory workload then samples.
	PID int
}

// ParseTarget reads a --target value: "nas", "gofakes3", or NAME=URL
// (credentials and region come from the caller).
func ParseTarget(s string) (TargetSpec, error) {
	switch s {
	case KindNAS, KindGoFakeS3:
		return TargetSpec{Name: s, Kind: s}, nil
	}
	name, u, ok := strings.Cut(s, "=")
	if !ok || name == "" || !(strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://")) {
		return TargetSpec{}, fmt.Errorf("target %q: want nas, gofakes3 or NAME=http(s)://HOST:PORT", s)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return TargetSpec{}, fmt.Errorf("target %q: name may hold a-z, 0-9, '-', '_' and '.'", s)
		}
	}
	return TargetSpec{Name: name, Kind: KindEndpoint, URL: strings.TrimSuffix(u, "/")}, nil
}

// Spawner returns the command that runs a server of kind (KindNAS or
// KindGoFakeS3) on dataDir at addr in a separate process (ServeChild is
// what that process should call). The memory workload measures that
// process from outside; without a Spawner it is skipped.
type Spawner func(kind, dataDir, addr string) *exec.Cmd

// Env is what a workload runs in: the profile of the mode, the targets,
// a scratch directory and the switches of the invocation.
type Env struct {
	Profile Profile
	// Specs are the targets to compare; Reference names the one ratios
	// are taken against (the in-process gateway, "nas").
	Specs     []TargetSpec
	Reference string
	// Dir is the scratch directory: every target the harness starts and
	// every file baseline gets a fresh directory under it, on the same file
	// system, so "plain files" means the same disk.
	Dir string
	Log *slog.Logger
	// Spawn starts servers in separate processes (memory workload).
	Spawn Spawner
	// DropCaches empties the whole page cache (as root, through
	// /proc/sys/vm/drop_caches) before cold reads, in addition to evicting
	// the files the harness owns.
	DropCaches bool
	// MountPeers are other file systems mounted on this machine (JuiceFS,
	// a local NFS export) that the FUSE workloads run against beside our
	// mount, each in a directory of its own under the peer's.
	MountPeers []MountPeer
	// LakeFS, when set, is a lakeFS server the merge workload measures
	// beside the gateway.
	LakeFS *LakeFS
	// Progress receives one line per step; nil discards.
	Progress func(format string, args ...any)

	runID    string
	seq      int
	memo     map[string]memoized
	peerDirs []string // made by PeerDir, removed when the workload ends
}

// memoized is what a Memo function returned.
type memoized struct {
	v   any
	err error
}

// Memo returns what fn computes for key, computing it once per run, so
// workloads that share an expensive measurement (commit and diff) make it
// once.
func (e *Env) Memo(key string, fn func() (any, error)) (any, error) {
	if m, ok := e.memo[key]; ok {
		return m.v, m.err
	}
	v, err := fn()
	if e.memo == nil {
		e.memo = map[string]memoized{}
	}
	e.memo[key] = memoized{v, err}
	return v, err
}

// Logf reports progress.
func (e *Env) Logf(format string, args ...any) {
	if e.Progress != nil {
		e.Progress(format, args...)
	}
}

// TempDir makes a fresh directory under Dir.
func (e *Env) TempDir(name string) (string, error) {
	e.seq++
	d := filepath.Join(e.Dir, fmt.Sprintf("%03d-%s", e.seq, name))
	if err := os.MkdirAll(d, 0o700); err != nil {
		return "", fmt.Errorf("scratch dir: %w", err)
	}
	return d, nil
}

// MountPeer is another file system mounted at Dir, named Name in reports.
type MountPeer struct {
	Name, Dir string
}

// PeerDir makes and returns a fresh directory of this run in peer p; it
// is removed when the workload ends.
func (e *Env) PeerDir(p MountPeer, name string) (string, error) {
	e.seq++
	d := filepath.Join(p.Dir, fmt.Sprintf("nas-bench-%s-%03d-%s", e.runID, e.seq, name))
	if err := os.MkdirAll(d, 0o755); err != nil {
		return "", fmt.Errorf("peer %s: %w", p.Name, err)
	}
	e.peerDirs = append(e.peerDirs, d)
	return d, nil
}

// removePeerDirs removes what the last workload left in the peers.
func (e *Env) removePeerDirs() {
	for _, d := range e.peerDirs {
		os.RemoveAll(d)
	}
	e.peerDirs = nil
}

// Targets are started targets; Close stops them and removes what they left.
type Targets []*Target

// Close stops every target: local ones lose their data directory,
// endpoints get the buckets the run created emptied and deleted.
func (ts Targets) Close() error {
	var errs []error
	for _, t := range ts {
		errs = append(errs, t.Close())
		if t.DataDir != "" {
			errs = append(errs, os.RemoveAll(t.DataDir))
		}
	}
	return errors.Join(errs...)
}

// StartTargets starts every target fresh: the in-process ones on new data
// directories, so a case never inherits another case's data.
func (e *Env) StartTargets(ctx context.Context) (Targets, error) {
	var ts Targets
	for _, s := range e.Specs {
		t, err := e.StartTarget(ctx, s)
		if err != nil {
			ts.Close()
			return nil, err
		}
		ts = append(ts, t)
	}
	return ts, nil
}

// StartTarget starts one target fresh.
func (e *Env) StartTarget(ctx context.Context, s TargetSpec) (*Target, error) {
	switch s.Kind {
	case KindNAS:
		d, err := e.TempDir(s.Name)
		if err != nil {
			return nil, err
		}
		return StartGateway(ctx, s.Name, d, e.Log)
	case KindGoFakeS3:
		d, err := e.TempDir(s.Name)
		if err != nil {
			return nil, err
		}
		return StartGoFakeS3(ctx, s.Name, d)
	case KindEndpoint:
		t := NewEndpoint(s.Name, s.URL, s.Region, s.Creds)
		t.bucketPrefix = "nasbench-" + e.runID + "-"
		return t, nil
	}
	return nil, fmt.Errorf("bench: unknown target kind %q", s.Kind)
}

// StartReference starts a fresh reference target alone.
func (e *Env) StartReference(ctx context.Context) (*Target, error) {
	for _, s := range e.Specs {
		if s.Name == e.Reference {
			return e.StartTarget(ctx, s)
		}
	}
	return nil, fmt.Errorf("bench: no reference target %q", e.Reference)
}

// Options configure Run.
type Options struct {
	// Mode is "tiny", "quick" or "full"; Profile, when its Mode is set,
	// replaces the mode's profile (tests and overrides).
	Mode    string
	Profile Profile
	// Workloads selects workloads by name; empty means all.
	Workloads []string
	// Targets to compare. The reference (KindNAS "nas") is added if absent.
	Targets    []TargetSpec
	Dir        string // scratch directory; empty means a new one under os.TempDir
	Log        *slog.Logger
	Spawn      Spawner
	DropCaches bool
	MountPeers []MountPeer
	LakeFS     *LakeFS
	Progress   func(format string, args ...any)
	// Command is the command line recorded in the report.
	Command string
}

// ReferenceName is the name of the in-process gateway target, against
// which ratios are taken.
const ReferenceName = KindNAS

// selectWorkloads returns the registered workloads named (all of them
// when none is).
func selectWorkloads(names []string) ([]Workload, error) {
	all := Registered()
	if len(names) == 0 {
		return all, nil
	}
	var selected []Workload
	for _, name := range names {
		i := slices.IndexFunc(all, func(w Workload) bool { return w.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("bench: no workload %q (have %s)", name, strings.Join(WorkloadNames(), ", "))
		}
		selected = append(selected, all[i])
	}
	return selected, nil
}

// targetSpecs returns the targets given, with the reference target first
// when it is not among them; a name given twice is an error.
func targetSpecs(given []TargetSpec) ([]TargetSpec, error) {
	specs := slices.Clone(given)
	if !slices.ContainsFunc(specs, func(s TargetSpec) bool { return s.Name == ReferenceName }) {
		specs = append([]TargetSpec{{Name: ReferenceName, Kind: KindNAS}}, specs...)
	}
	seen := map[string]bool{}
	for _, s := range specs {
		if seen[s.Name] {
			return nil, fmt.Errorf("bench: target %q given twice", s.Name)
		}
		seen[s.Name] = true
	}
	return specs, nil
}

// Run runs the selected workloads against every target and returns the
// report. A workload that fails is recorded in the report and the run goes
// on; Run itself fails only on bad options or when ctx ends.
func Run(ctx context.Context, o Options) (*Report, error) {
	p := o.Profile
	if p.Mode == "" {
		var err error
		if p, err = ProfileFor(o.Mode); err != nil {
			return nil, err
		}
	}
	selected, err := selectWorkloads(o.Workloads)
	if err != nil {
		return nil, err
	}
	specs, err := targetSpecs(o.Targets)
	if err != nil {
		return nil, err
	}
	dir := o.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "nas-bench-")
		if err != nil {
			return nil, fmt.Errorf("scratch dir: %w", err)
		}
		defer os.RemoveAll(d)
		dir = d
	}
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	env := &Env{Profile: p, Specs: specs, Reference: ReferenceName, Dir: dir, Log: log, Spawn: o.Spawn,
		DropCaches: o.DropCaches, MountPeers: o.MountPeers, LakeFS: o.LakeFS, Progress: o.Progress, runID: fmt.Sprintf("%x", time.Now().Unix())}
	rep := &Report{Mode: p.Mode, Command: o.Command, Reference: ReferenceName, Started: time.Now().UTC(),
		Machine: DescribeMachine(dir)}
	for _, s := range specs {
		rep.Targets = append(rep.Targets, ReportTarget{Name: s.Name, Kind: s.Kind, URL: s.URL})
	}
	for _, w := range selected {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		env.Logf("workload %s: %s", w.Name, w.Doc)
		start := time.Now()
		results, err := w.Run(ctx, env)
		env.removePeerDirs()
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			rep.Failures = append(rep.Failures, WorkloadFailure{Workload: w.Name, Error: err.Error()})
			env.Logf("workload %s failed: %v", w.Name, err)
		}
		for _, r := range results {
			if r.Workload == "" {
				r.Workload = w.Name
			}
			r.fill(env.Reference)
			rep.Results = append(rep.Results, r)
		}
		rep.Timings = append(rep.Timings, WorkloadTiming{Workload: w.Name, Seconds: time.Since(start).Seconds()})
	}
	rep.Seconds = time.Since(rep.Started).Seconds()
	rep.LoadAfter = loadAverage()
	return rep, nil
}

// WorkloadNames lists the registered workloads' names.
func WorkloadNames() []string {
	var names []string
	for _, w := range Registered() {
		names = append(names, w.Name)
	}
	return names
}
