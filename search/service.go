package search

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/mapping"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/manifest"
)

// Service is the full-text indexes of every repository, kept under one
// directory. It is safe for concurrent use; Close closes every index.
type Service struct {
	dir    string
	b      *branch.Service
	recipe Recipe

	mu     sync.Mutex // guards repos and closed, and creating and removing the repositories' directories
	repos  map[string]*index
	closed bool
}

// index is one repository's bleve index and its state.
type index struct {
	repo, dir string
	build     chan struct{}   // holds a token while a build runs: one at a time
	life      context.Context // cancelled by close: builds in flight stop
	stop      context.CancelFunc

	mu  sync.RWMutex // guards idx against close: held shared by queries and builds
	idx bleve.Index  // nil once closed

	stmu sync.Mutex // guards st
	st   state
}

// New returns the indexes kept under dir, of the repositories of b. It
// opens nothing: an index is opened, or built, when first used.
func New(dir string, b *branch.Service) *Service {
	return &Service{dir: dir, b: b, recipe: current(), repos: map[string]*index{}}
}

// Close closes every index; builds in flight stop and queries finish
// first. Later calls answer ErrClosed.
func (s *Service) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	var errs []error
	for name, x := range s.repos {
		errs = append(errs, x.close())
		delete(s.repos, name)
	}
	return errors.Join(errs...)
}

// repoDir is the directory of repo's index; a name that is not one
// plain path element is refused.
func (s *Service) repoDir(repo string) (string, error) {
	if repo == "" || !filepath.IsLocal(repo) || strings.ContainsAny(repo, `/\`) || repo == "." {
		return "", fmt.Errorf("%w: repository %q", ErrInvalid, repo)
	}
	return filepath.Join(s.dir, repo), nil
}

// get returns repo's open index, opening it (creating it when create)
// first; nil, nil when there is none and create is false.
func (s *Service) get(repo string, create bool) (*index, error) {
	dir, err := s.repoDir(repo)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	if x := s.repos[repo]; x != nil {
		return x, nil
	}
	if _, err := os.Stat(dir); !create && os.IsNotExist(err) {
		return nil, nil
	}
	x, err := open(repo, dir, s.recipe)
	if err != nil {
		return nil, fmt.Errorf("open the index of %s: %w", repo, err)
	}
	s.repos[repo] = x
	return x, nil
}

// open opens the index in dir, or makes a new one when there is none,
// its recipe is not r, or it does not open: it is a derivative.
func open(repo, dir string, r Recipe) (*index, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	st, ok, err := loadState(dir, r)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "bleve")
	var idx bleve.Index
	if ok {
		idx, err = bleve.Open(path)
	}
	if !ok || err != nil {
		st = state{Recipe: r}
		if err := os.RemoveAll(path); err != nil {
			return nil, err
		}
		if idx, err = bleve.New(path, newMapping()); err != nil {
			return nil, err
		}
		if err := st.save(dir); err != nil {
			idx.Close()
			return nil, err
		}
	}
	life, stop := context.WithCancel(context.Background())
	return &index{repo: repo, dir: dir, build: make(chan struct{}, 1), life: life, stop: stop, idx: idx, st: st}, nil
}

// newMapping maps documents: key and dirs (every "a/", "a/b/" prefix
// of the key ending in "/") as single terms, body analysed with
// positions (phrases, snippet locations), quarantine, and kind ("text"
// or "skip", the only stored field).
func newMapping() mapping.IndexMapping {
	term := func(store bool) *mapping.FieldMapping {
		f := bleve.NewKeywordFieldMapping()
		f.Store, f.IncludeInAll, f.IncludeTermVectors, f.DocValues = store, false, false, false
		return f
	}
	body := bleve.NewTextFieldMapping()
	body.Analyzer, body.Store, body.IncludeInAll, body.IncludeTermVectors, body.DocValues = analyzer, false, false, true, false
	quarantine := bleve.NewBooleanFieldMapping()
	quarantine.Store, quarantine.IncludeInAll, quarantine.DocValues = false, false, false
	doc := bleve.NewDocumentStaticMapping()
	doc.AddFieldMappingsAt("key", term(false))
	doc.AddFieldMappingsAt("dirs", term(false))
	doc.AddFieldMappingsAt("kind", term(true))
	doc.AddFieldMappingsAt("body", body)
	doc.AddFieldMappingsAt("quarantine", quarantine)
	im := bleve.NewIndexMapping()
	im.DefaultMapping, im.DefaultAnalyzer, im.ScoringModel = doc, analyzer, scoring
	im.IndexDynamic, im.StoreDynamic, im.DocValuesDynamic = false, false, false
	return im
}

// close stops x's builds, waits for its queries and closes it.
func (x *index) close() error {
	x.stop()
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.idx == nil {
		return nil
	}
	err := x.idx.Close()
	x.idx = nil
	return err
}

// Delete removes repo's index; the next query builds it anew.
func (s *Service) Delete(repo string) error {
	dir, err := s.repoDir(repo)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if x := s.repos[repo]; x != nil {
		delete(s.repos, repo)
		if err := x.close(); err != nil {
			return err
		}
	}
	return os.RemoveAll(dir)
}

// Rebuild deletes repo's index and builds it anew at commit c, which
// branch br has seen.
func (s *Service) Rebuild(ctx context.Context, repo, br string, c manifest.CommitID) (Info, error) {
	if err := s.Delete(repo); err != nil {
		return Info{}, err
	}
	return s.Ensure(ctx, repo, br, c)
}

// Status lists the complete commits of repo's index, newest first
// (none when it has no index).
func (s *Service) Status(repo string) ([]Info, error) {
	x, err := s.get(repo, false)
	if x == nil || err != nil {
		return []Info{}, err
	}
	x.stmu.Lock()
	defer x.stmu.Unlock()
	out := make([]Info, 0, len(x.st.Commits))
	for _, c := range slices.Backward(x.st.Commits) {
		out = append(out, c.info(repo, x.st.Recipe))
	}
	return out, nil
}

// Ensure brings repo's index to commit c, which branch br has seen (its
// tree is walked through br when the index holds no commit yet), and
// returns the index at c.
func (s *Service) Ensure(ctx context.Context, repo, br string, c manifest.CommitID) (Info, error) {
	var info Info
	err := s.with(repo, func(x *index) error {
		var err error
		info, err = x.ensure(ctx, s.b, br, c)
		return err
	})
	return info, err
}

// with calls fn with repo's index (created if need be), once more with
// the new index when a Delete closed it under fn.
func (s *Service) with(repo string, fn func(*index) error) error {
	for range 2 {
		x, err := s.get(repo, true)
		if err != nil {
			return err
		}
		if err = fn(x); !errors.Is(err, errStale) {
			return err
		}
	}
	return ErrClosed
}

// errStale is returned by an index closed by Delete under its caller.
var errStale = errors.New("search: index deleted under the call")
