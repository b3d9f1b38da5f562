package search

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// Limits of what is indexed and answered.
const (
	// MaxFileBytes is the largest file indexed; larger ones are skipped.
	MaxFileBytes = 1 << 20
	// MaxSnippetLines is the most lines of a snippet: the best line and
	// one on either side.
	MaxSnippetLines = 3
	// MaxSnippetBytes bounds a snippet's bytes; a window over it shrinks
	// to the best line, which is cut at a character boundary.
	MaxSnippetBytes = 1024
	// maxCommits is how many complete commits recipe.json remembers;
	// older ones are forgotten (their documents stay and serve a later
	// build of them).
	maxCommits = 64
)

// bleveVersion is the version of github.com/blevesearch/bleve/v2 in
// go.mod (a test checks it): a new one means a rebuild.
const bleveVersion = "v2.6.3"

// analyzer and scoring are the bleve settings of the body field.
const (
	analyzer = "standard"
	scoring  = "bm25"
)

// Recipe says how an index is made: the same recipe over the same
// commits makes the same index.
type Recipe struct {
	Indexer  string            `json:"indexer"`
	Version  string            `json:"version"`
	Settings map[string]string `json:"settings"`
}

// current is the recipe of this build.
func current() Recipe {
	return Recipe{Indexer: "bleve", Version: bleveVersion, Settings: map[string]string{
		"analyzer":       analyzer,
		"scoring":        scoring,
		"max_file_bytes": strconv.Itoa(MaxFileBytes),
		"text":           "utf-8 without NUL",
		"quarantine":     "memory/quarantine/ segment",
		"mapping":        "2", // the document fields: key, dirs, body, quarantine, kind
	}}
}

func (r Recipe) equal(o Recipe) bool {
	return r.Indexer == o.Indexer && r.Version == o.Version && maps.Equal(r.Settings, o.Settings)
}

// Info is an index at one complete commit: its recipe and inputs.
type Info struct {
	Repo    string
	Commit  string
	Recipe  Recipe
	Files   int   // text files of the commit, indexed
	Skipped int   // other entries of the commit
	Bytes   int64 // bytes of the text files
	BuiltAt time.Time
	Build   time.Duration // how long bringing the index to the commit took
}

// state is recipe.json: the recipe and the complete commits, oldest
// first. About 200 bytes per commit, at most maxCommits of them.
type state struct {
	Recipe  Recipe        `json:"recipe"`
	Commits []commitStats `json:"commits"`
}

// commitStats is one complete commit's inputs.
type commitStats struct {
	Commit    string    `json:"commit"`
	Files     int       `json:"files"`
	Skipped   int       `json:"skipped"`
	Bytes     int64     `json:"bytes"`
	BuiltAt   time.Time `json:"built_at"`
	BuildSecs float64   `json:"build_seconds"`
}

func (c commitStats) info(repo string, r Recipe) Info {
	return Info{Repo: repo, Commit: c.Commit, Recipe: r, Files: c.Files, Skipped: c.Skipped, Bytes: c.Bytes,
		BuiltAt: c.BuiltAt, Build: time.Duration(c.BuildSecs * float64(time.Second))}
}

// loadState reads dir's recipe.json; ok is false when there is none or
// it does not decode or its recipe is not r (the index must be rebuilt).
func loadState(dir string, r Recipe) (st state, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(dir, "recipe.json"))
	if os.IsNotExist(err) {
		return state{Recipe: r}, false, nil
	}
	if err != nil {
		return st, false, fmt.Errorf("read recipe: %w", err)
	}
	if json.Unmarshal(b, &st) != nil || !st.Recipe.equal(r) {
		return state{Recipe: r}, false, nil
	}
	return st, true, nil
}

// save writes st to dir's recipe.json atomically (temporary file,
// fsync, rename).
func (st *state) save(dir string) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, "recipe.json.tmp")
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("write recipe: %w", err)
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, "recipe.json"))
	}
	if err != nil {
		return fmt.Errorf("write recipe: %w", err)
	}
	return nil
}

// find returns the stats of commit c, if complete.
func (st *state) find(c string) (commitStats, bool) {
	for _, s := range st.Commits {
		if s.Commit == c {
			return s, true
		}
	}
	return commitStats{}, false
}

// add remembers a complete commit, forgetting the oldest beyond
// maxCommits.
func (st *state) add(s commitStats) {
	st.Commits = append(st.Commits, s)
	if n := len(st.Commits); n > maxCommits {
		st.Commits = append([]commitStats(nil), st.Commits[n-maxCommits:]...)
	}
}
