package source

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/keyspace"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/manifest"
)

// registryPrefix starts every attachment record's key.
const registryPrefix = keyspace.Source

func recordKey(id string) []byte { return []byte(registryPrefix + id) }

// Spec is what the owner gives to attach a source.
type Spec struct {
	Repo   string
	Branch string // "" means the repository's default branch
	// Prefix is where the source's objects appear in the repository (""
	// or ending in "/"; one is added).
	Prefix string
	// URL is "s3://BUCKET[/PREFIX]" or "dir:/ABSOLUTE/PATH".
	URL string
	// Endpoint and Region of an S3 source ("" endpoint: AWS).
	Endpoint, Region string
	// The remote's credentials, kept by the gateway and never shown again.
	AccessKey, SecretKey, SessionToken string
	// VirtualHost addresses the bucket as a host name instead of in the
	// path (path style is the default with an endpoint, virtual host
	// without one).
	VirtualHost bool
	// Principal is who attaches (recorded on the commits).
	Principal string
	// WithMetadata asks each new or re-pinned object for its content type
	// and user metadata (one HEAD each), at attach and at every refresh.
	WithMetadata bool
	// Args are an adapter's arguments (exec: sources only). They are shown
	// to the owner in the source's Info: never a password.
	Args []string
}

// Info describes an attachment. It never holds credentials.
type Info struct {
	ID          string `json:"id"`
	Repo        string `json:"repo"`
	Branch      string `json:"branch"`
	Prefix      string `json:"prefix"`
	URL         string `json:"url"`
	Endpoint    string `json:"endpoint,omitempty"`
	Region      string `json:"region,omitempty"`
	Versioned   bool   `json:"versioned"`
	Credentials bool   `json:"credentials"` // the gateway holds credentials for it
	// Args are an adapter's arguments.
	Args []string `json:"args,omitempty"`
	// WithMetadata: every object an attach or refresh adds or re-pins is
	// asked for (one HEAD each) its content type and user metadata.
	WithMetadata bool `json:"with_metadata,omitempty"`
	// State is "importing" (attach under way), "refreshing", "ready" or
	// "failed" (Error says why; refresh resumes).
	State string `json:"state"`
	Error string `json:"error,omitempty"`
	// Progress and outcome of the last attach or refresh.
	Listed    int64     `json:"listed"`  // remote objects listed so far
	Added     int64     `json:"added"`   // entries added
	Changed   int64     `json:"changed"` // entries re-pinned (remote drift)
	Removed   int64     `json:"removed"` // entries removed (gone from the remote)
	Kept      int64     `json:"kept"`    // local objects left in place of remote ones
	Skipped   int64     `json:"skipped"` // remote objects that cannot be keys
	Base      string    `json:"base"`    // branch head before it (diff from here)
	Commit    string    `json:"commit"`  // last commit it made ("" when nothing changed)
	Commits   int       `json:"commits"` // commits it made
	Created   time.Time `json:"created"`
	Synced    time.Time `json:"synced"` // when the last attach or refresh ended
	Principal string    `json:"attached_by,omitempty"`
	// Prefetch is the last prefetch job (nil: never prefetched).
	Prefetch *PrefetchInfo `json:"prefetch,omitempty"`
}

// record is the stored attachment: its Info plus what only the gateway
// may know.
type record struct {
	Info
	AccessKey    string `json:"access_key,omitempty"`
	SecretKey    string `json:"secret_key,omitempty"`
	SessionToken string `json:"session_token,omitempty"`
	VirtualHost  bool   `json:"virtual_host,omitempty"`
}

// Options tunes a Registry.
type Options struct {
	Log *slog.Logger
	// OnCommit, when set, is called with every commit an attach or refresh
	// is about to make, before the branch moves; an error stops it (the
	// flight recorder's "record first, then act").
	OnCommit func(ctx context.Context, repo, branch string, id manifest.CommitID, message, principal string) error
	// CommitEvery bounds the changes per commit (0 means 10,000): a large
	// listing becomes readable page by page.
	CommitEvery int
	// Remote-access tuning (tests): HTTPClient carries S3 requests; Retry
	// bounds retries; the timeouts are S3Config's.
	HTTPClient                  *http.Client
	Retry                       Retry
	HeaderTimeout, StallTimeout time.Duration
	Materializer                MaterializerOptions
	// GitMirrors is the folder where remote Git repositories (git:https://…)
	// are mirrored ("": none can be attached).
	GitMirrors string
	// Adapters is the folder of the adapter programs exec: sources may run
	// ("": none may). AdapterTimeout bounds every wait for one (0: 30 s).
	Adapters       string
	AdapterTimeout time.Duration
	// Peers, when set, reports whether other gateways share the metadata
	// store: Run then leaves the attachments marked as under way alone,
	// since their jobs may be running on another gateway.
	Peers func(context.Context) (bool, error)
}

// Registry keeps the attached sources: their records (credentials
// included) in kv, the open sources, and the attach and refresh jobs.
type Registry struct {
	db  kv.DB
	b   *branch.Service
	m   *Materializer
	o   Options
	log *slog.Logger

	mu         sync.Mutex              // guards open, jobs and prefetches
	open       map[string]Source       // attachment ID -> its open source
	jobs       map[string]*job         // attachment ID -> its attach or refresh under way
	prefetches map[string]*prefetchJob // attachment ID -> its prefetch under way
	queue      chan *job
	pqueue     chan *prefetchJob
}

// New returns a Registry over db and the branches of b, with its
// Materializer. Jobs run once Run is running.
func New(db kv.DB, b *branch.Service, o Options) *Registry {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.CommitEvery <= 0 {
		o.CommitEvery = 10000
	}
	r := &Registry{db: db, b: b, o: o, log: o.Log, open: map[string]Source{}, jobs: map[string]*job{}, queue: make(chan *job, 64),
		prefetches: map[string]*prefetchJob{}, pqueue: make(chan *prefetchJob, 64)}
	r.m = NewMaterializer(db, b.Chunks(), r, o.Materializer)
	return r
}

// Materializer returns the registry's Materializer.
func (r *Registry) Materializer() *Materializer { return r.m }

// job is an attach or refresh of one source.
type job struct {
	id        string
	principal string
	done      chan struct{}
	err       error // set before done is closed
}

// Run runs attach, refresh and prefetch jobs until ctx ends, then waits
// for the running ones (they stop at their next page; a prefetch stops
// its fetches under way and is marked interrupted).
func (r *Registry) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	if r.alone(ctx) {
		r.markInterrupted(ctx)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case j := <-r.queue:
			wg.Add(1)
			go func() {
				defer wg.Done()
				r.runJob(ctx, j)
			}()
		case j := <-r.pqueue:
			wg.Add(1)
			go func() {
				defer wg.Done()
				r.runPrefetch(ctx, j)
			}()
		}
	}
}

// alone reports whether no other gateway shares the metadata store.
func (r *Registry) alone(ctx context.Context) bool {
	if r.o.Peers == nil {
		return true
	}
	peers, err := r.o.Peers(ctx)
	if err != nil {
		r.log.Warn("asking for other gateways; attachments marked as under way stay so", "err", err)
		return false
	}
	return !peers
}

// markInterrupted marks the attachments whose attach or refresh was under
// way when the gateway stopped (a refresh resumes them), and the
// prefetches (prefetching again resumes them).
func (r *Registry) markInterrupted(ctx context.Context) {
	infos, err := r.List(ctx, "")
	if err != nil {
		r.log.Warn("listing sources", "err", err)
		return
	}
	for _, info := range infos {
		r.mu.Lock()
		sync := r.jobs[info.ID] == nil && (info.State == "importing" || info.State == "refreshing")
		pre := r.prefetches[info.ID] == nil && info.Prefetch != nil && info.Prefetch.State == PrefetchRunning
		r.mu.Unlock()
		if !sync && !pre {
			continue
		}
		err := r.update(ctx, info.ID, func(rec *record) {
			if sync {
				rec.State, rec.Error = "failed", "interrupted by a gateway restart; `nas source refresh` resumes it"
			}
			if pre && rec.Prefetch != nil {
				rec.Prefetch.State = PrefetchInterrupted
				rec.Prefetch.Error = "interrupted by a gateway restart; `nas source prefetch` resumes it"
			}
		})
		if err != nil {
			r.log.Warn("marking an interrupted source", "source", info.ID, "err", err)
		}
	}
}

// Close releases the open sources.
func (r *Registry) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, s := range r.open {
		if c, ok := s.(io.Closer); ok {
			c.Close()
		}
		delete(r.open, id)
	}
	return nil
}

func newID() string {
	var b [8]byte
	rand.Read(b[:])
	return "src_" + hex.EncodeToString(b[:])
}

// normPrefix adds the trailing "/" of a non-empty repository prefix.
func normPrefix(p string) (string, error) {
	if p != "" && !strings.HasSuffix(p, "/") {
		p += "/"
	}
	if len(p) > 512 {
		return "", fmt.Errorf("prefix of %d bytes: %w", len(p), ErrInvalid)
	}
	return p, nil
}

func overlaps(a, b string) bool { return strings.HasPrefix(a, b) || strings.HasPrefix(b, a) }

// Add attaches a source: it checks the spec, reaches the source once (a
// listing of one object, so a wrong endpoint, bucket or credential fails
// here), stores the attachment and queues the import of its listing. It
// returns at once; Wait waits for the import.
func (r *Registry) Add(ctx context.Context, s Spec) (*Info, error) {
	loc, err := ParseLocation(s.URL)
	if err != nil {
		return nil, err
	}
	if s.Prefix, err = normPrefix(s.Prefix); err != nil {
		return nil, err
	}
	repo, err := r.b.GetRepo(ctx, s.Repo)
	if err != nil {
		return nil, err
	}
	if s.Branch == "" {
		s.Branch = repo.DefaultBranch
	}
	if _, err := r.b.GetBranch(ctx, s.Repo, s.Branch); err != nil {
		return nil, err
	}
	if loc.Kind != KindS3 && (s.Endpoint != "" || s.AccessKey != "") {
		return nil, fmt.Errorf("a %s source takes no endpoint or credentials: %w", loc.Kind, ErrInvalid)
	}
	if loc.Kind != KindExec && len(s.Args) > 0 {
		return nil, fmt.Errorf("only an adapter (exec:) takes arguments: %w", ErrInvalid)
	}
	if (s.AccessKey == "") != (s.SecretKey == "") {
		return nil, fmt.Errorf("give both the access key and the secret key of the remote: %w", ErrInvalid)
	}
	res, err := r.b.List(ctx, s.Repo, s.Branch, branch.ListOptions{Prefix: s.Prefix, MaxKeys: 1})
	if err != nil {
		return nil, err
	}
	if len(res.Objects) > 0 {
		return nil, fmt.Errorf("%s/%s already holds objects under %q (attach to an empty prefix): %w", s.Repo, s.Branch, s.Prefix, ErrPrefixInUse)
	}
	rec := &record{Info: Info{ID: newID(), Repo: s.Repo, Branch: s.Branch, Prefix: s.Prefix, URL: loc.String(),
		Endpoint: s.Endpoint, Region: s.Region, Credentials: s.AccessKey != "", State: "importing",
		Created: time.Now().UTC(), Principal: s.Principal, WithMetadata: s.WithMetadata, Args: s.Args},
		AccessKey: s.AccessKey, SecretKey: s.SecretKey, SessionToken: s.SessionToken, VirtualHost: s.VirtualHost}
	src, err := r.openRecord(rec)
	if err != nil {
		return nil, err
	}
	closeSrc := func() {
		if c, ok := src.(io.Closer); ok {
			c.Close()
		}
	}
	if s3src, ok := src.(*S3); ok {
		if err := s3src.Probe(ctx); err != nil {
			closeSrc()
			return nil, err
		}
		rec.Versioned = s3src.DetectVersioning(ctx)
		s3src.c.Versioned = rec.Versioned
	}
	if _, ok := src.(*Git); ok {
		rec.Versioned = true // pinned to blobs, which never change
	}
	if x, ok := src.(*Exec); ok {
		// Pinned to the adapter's version tokens, whose old versions
		// are not kept: not versioned.
		if err := x.Probe(ctx); err != nil {
			closeSrc()
			return nil, err
		}
	}
	err = r.db.Update(ctx, func(txn kv.Txn) error {
		return txn.Scan(kv.Prefix([]byte(registryPrefix)), func(_, v []byte) error {
			var o record
			if err := json.Unmarshal(v, &o); err != nil {
				return nil
			}
			if o.Repo == rec.Repo && o.Branch == rec.Branch && overlaps(o.Prefix, rec.Prefix) {
				return fmt.Errorf("%s/%s: %q overlaps source %s at %q: %w", rec.Repo, rec.Branch, rec.Prefix, o.ID, o.Prefix, ErrPrefixInUse)
			}
			return nil
		})
	})
	if err == nil {
		err = r.put(ctx, rec)
	}
	if err != nil {
		closeSrc()
		return nil, err
	}
	r.mu.Lock()
	r.open[rec.ID] = src
	r.mu.Unlock()
	if _, err := r.enqueue(ctx, rec.ID, s.Principal); err != nil {
		return nil, err
	}
	info := rec.Info
	return &info, nil
}

// openRecord opens the source a record describes; it makes no request.
func (r *Registry) openRecord(rec *record) (Source, error) {
	loc, err := ParseLocation(rec.URL)
	if err != nil {
		return nil, err
	}
	switch loc.Kind {
	case KindDir:
		return OpenDir(loc.Path)
	case KindGit:
		if loc.URL != "" {
			return OpenGitURL(context.Background(), loc.URL, loc.Rev, r.o.GitMirrors)
		}
		return OpenGit(context.Background(), loc.Path, loc.Rev)
	case KindExec:
		prog, err := r.allowAdapter(loc.Path)
		if err != nil {
			return nil, err
		}
		return OpenExec(ExecConfig{Path: prog, Args: rec.Args, Timeout: r.o.AdapterTimeout, Log: r.log})
	}
	return NewS3(S3Config{Endpoint: rec.Endpoint, Region: rec.Region, Bucket: loc.Bucket, Prefix: loc.Prefix,
		AccessKey: rec.AccessKey, SecretKey: rec.SecretKey, SessionToken: rec.SessionToken,
		PathStyle: rec.Endpoint != "" && !rec.VirtualHost, Versioned: rec.Versioned,
		HTTPClient: r.o.HTTPClient, HeaderTimeout: r.o.HeaderTimeout, StallTimeout: r.o.StallTimeout, Retry: r.o.Retry})
}

// Source implements Opener: the open source of attachment id, or
// ErrRemoved.
func (r *Registry) Source(ctx context.Context, id string) (Source, error) {
	r.mu.Lock()
	src, ok := r.open[id]
	r.mu.Unlock()
	if ok {
		return src, nil
	}
	rec, err := r.get(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("source %s: %w", id, ErrRemoved)
	}
	if err != nil {
		return nil, err
	}
	src, err = r.openRecord(rec)
	if err != nil {
		return nil, fmt.Errorf("source %s: %v: %w", id, err, ErrUnavailable)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.open[id]; ok {
		if c, ok := src.(io.Closer); ok {
			c.Close()
		}
		return old, nil
	}
	r.open[id] = src
	return src, nil
}

func (r *Registry) get(ctx context.Context, id string) (*record, error) {
	var rec record
	err := r.db.View(ctx, func(rd kv.Reader) error {
		v, err := rd.Get(recordKey(id))
		if err != nil {
			return err
		}
		return json.Unmarshal(v, &rec)
	})
	if errors.Is(err, kv.ErrNotFound) {
		return nil, fmt.Errorf("source %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	return &rec, nil
}

func (r *Registry) put(ctx context.Context, rec *record) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return r.db.Update(ctx, func(txn kv.Txn) error { return txn.Set(recordKey(rec.ID), b) })
}

// update changes a stored record; ErrNotFound once it was removed.
func (r *Registry) update(ctx context.Context, id string, fn func(*record)) error {
	return r.db.Update(ctx, func(txn kv.Txn) error {
		v, err := txn.Get(recordKey(id))
		if errors.Is(err, kv.ErrNotFound) {
			return fmt.Errorf("source %s: %w", id, ErrNotFound)
		}
		if err != nil {
			return err
		}
		var rec record
		if err := json.Unmarshal(v, &rec); err != nil {
			return err
		}
		fn(&rec)
		b, err := json.Marshal(&rec)
		if err != nil {
			return err
		}
		return txn.Set(recordKey(id), b)
	})
}

// Get returns one attachment.
func (r *Registry) Get(ctx context.Context, id string) (*Info, error) {
	rec, err := r.get(ctx, id)
	if err != nil {
		return nil, err
	}
	return &rec.Info, nil
}

// List returns the attachments, of one repository when repo is not "", in
// ID order.
func (r *Registry) List(ctx context.Context, repo string) ([]Info, error) {
	out := []Info{}
	err := r.db.View(ctx, func(rd kv.Reader) error {
		return rd.Scan(kv.Prefix([]byte(registryPrefix)), func(_, v []byte) error {
			var rec record
			if err := json.Unmarshal(v, &rec); err != nil {
				return err
			}
			if repo == "" || rec.Repo == repo {
				out = append(out, rec.Info)
			}
			return nil
		})
	})
	return out, err
}

// Refresh queues a new listing of the source; it returns at once (Wait
// waits). A refresh already under way is returned instead of a second.
func (r *Registry) Refresh(ctx context.Context, id, principal string) (*Info, error) {
	r.mu.Lock()
	running := r.jobs[id] != nil
	r.mu.Unlock()
	if !running {
		// Visible at once, so a poller never takes the last outcome for
		// this one's.
		err := r.update(ctx, id, func(rec *record) {
			if rec.State != "importing" {
				rec.State = "refreshing"
			}
			rec.Error = ""
			rec.Listed, rec.Added, rec.Changed, rec.Removed, rec.Kept, rec.Skipped = 0, 0, 0, 0, 0, 0
			rec.Commit, rec.Commits = "", 0
		})
		if err != nil {
			return nil, err
		}
	}
	if _, err := r.enqueue(ctx, id, principal); err != nil {
		return nil, err
	}
	return r.Get(ctx, id)
}

// Wait waits until the attach or refresh of id under way (if any) ends,
// and returns the attachment as it then is.
func (r *Registry) Wait(ctx context.Context, id string) (*Info, error) {
	r.mu.Lock()
	j := r.jobs[id]
	r.mu.Unlock()
	if j != nil {
		select {
		case <-j.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if j.err != nil && !errors.Is(j.err, ErrNotFound) {
			info, err := r.Get(ctx, id)
			if err != nil {
				return nil, j.err
			}
			return info, j.err
		}
	}
	return r.Get(ctx, id)
}

// Remove detaches a source: its record and credentials are deleted, and
// with evict what was materialised from it too. Entries stay in the
// branches (history is immutable): materialised ones keep reading, others
// fail with ErrRemoved.
func (r *Registry) Remove(ctx context.Context, id string, evict bool) (*Info, error) {
	rec, err := r.get(ctx, id)
	if err != nil {
		return nil, err
	}
	// A prefetch stops first, so nothing it fetches lands after an evict.
	if j := r.prefetchOf(id); j != nil {
		j.cancel()
		select {
		case <-j.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if err := r.db.Update(ctx, func(txn kv.Txn) error { return txn.Delete(recordKey(id)) }); err != nil {
		return nil, err
	}
	r.mu.Lock()
	if s, ok := r.open[id]; ok {
		if c, ok := s.(io.Closer); ok {
			c.Close()
		}
		delete(r.open, id)
	}
	r.mu.Unlock()
	if evict {
		if err := r.m.Evict(ctx, id); err != nil {
			return nil, err
		}
	}
	return &rec.Info, nil
}

// enqueue queues a sync of id unless one is under way.
func (r *Registry) enqueue(ctx context.Context, id, principal string) (*job, error) {
	r.mu.Lock()
	if j := r.jobs[id]; j != nil {
		r.mu.Unlock()
		return j, nil
	}
	j := &job{id: id, principal: principal, done: make(chan struct{})}
	r.jobs[id] = j
	r.mu.Unlock()
	select {
	case r.queue <- j:
		return j, nil
	case <-ctx.Done():
		r.endJob(j, ctx.Err())
		return nil, ctx.Err()
	}
}

func (r *Registry) endJob(j *job, err error) {
	r.mu.Lock()
	delete(r.jobs, j.id)
	j.err = err
	r.mu.Unlock()
	close(j.done)
}

func (r *Registry) runJob(ctx context.Context, j *job) {
	err := r.update(ctx, j.id, func(rec *record) {
		if rec.State != "importing" {
			rec.State = "refreshing"
		}
		rec.Error = ""
	})
	if err == nil {
		err = r.sync(ctx, j.id, j.principal)
		uerr := r.update(context.WithoutCancel(ctx), j.id, func(rec *record) {
			rec.Synced = time.Now().UTC()
			if err != nil {
				rec.State, rec.Error = "failed", err.Error()
			} else {
				rec.State = "ready"
			}
		})
		if err == nil {
			err = uerr
		}
	}
	if err != nil && !errors.Is(err, ErrNotFound) {
		r.log.Warn("source sync failed", "source", j.id, "err", err)
	}
	r.endJob(j, err)
}
