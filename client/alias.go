package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
)

// Alias is a named gateway with the credentials to call it, kept in the
// user's alias file so a command can say `--alias NAME` instead of an
// endpoint and keys.
type Alias struct {
	Name         string `json:"name"`
	URL          string `json:"url"`
	AccessKey    string `json:"access_key"`
	SecretKey    string `json:"secret_key"`
	SessionToken string `json:"session_token,omitempty"`
}

// aliasFile is the file's layout: a version for later changes and the
// aliases by name.
type aliasFile struct {
	Version int              `json:"version"`
	Aliases map[string]Alias `json:"aliases"`
}

var aliasName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ErrNoAlias is returned for an alias the file does not hold.
var ErrNoAlias = errors.New("no such alias")

// AliasPath is where the aliases live: $NAS_CONFIG_DIR/aliases.json, else
// the user's configuration directory (XDG_CONFIG_HOME or ~/.config on
// Linux) under nas/.
func AliasPath() (string, error) {
	if d := os.Getenv("NAS_CONFIG_DIR"); d != "" {
		return filepath.Join(d, "aliases.json"), nil
	}
	d, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("alias file: %w", err)
	}
	return filepath.Join(d, "nas", "aliases.json"), nil
}

// LoadAliases reads the alias file at path; a missing file holds none.
// A file that others than its owner may read or write is refused, as ssh
// refuses such a key: the secrets in it may already be someone else's.
func LoadAliases(path string) (map[string]Alias, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]Alias{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("alias file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("alias file: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("alias file %s is accessible by others (mode %v): run chmod 600 %s", path, st.Mode().Perm(), path)
	}
	var af aliasFile
	if err := json.NewDecoder(f).Decode(&af); err != nil {
		return nil, fmt.Errorf("alias file %s: %w", path, err)
	}
	if af.Aliases == nil {
		af.Aliases = map[string]Alias{}
	}
	return af.Aliases, nil
}

// LookupAlias returns the alias name from the file at path.
func LookupAlias(path, name string) (Alias, error) {
	all, err := LoadAliases(path)
	if err != nil {
		return Alias{}, err
	}
	a, ok := all[name]
	if !ok {
		return Alias{}, fmt.Errorf("%w %q in %s", ErrNoAlias, name, path)
	}
	return a, nil
}

// SaveAlias adds or replaces a in the file at path, creating the file
// (0600) and its directory (0700) when needed.
func SaveAlias(path string, a Alias) error {
	if !aliasName.MatchString(a.Name) {
		return fmt.Errorf("alias name %q: want letters, digits, '.', '_' or '-' (at most 64)", a.Name)
	}
	if a.URL == "" || a.AccessKey == "" || a.SecretKey == "" {
		return fmt.Errorf("alias %s: a URL, an access key and a secret key are required", a.Name)
	}
	return editAliases(path, func(m map[string]Alias) error {
		m[a.Name] = a
		return nil
	})
}

// RemoveAlias deletes the alias name from the file at path.
func RemoveAlias(path, name string) error {
	return editAliases(path, func(m map[string]Alias) error {
		if _, ok := m[name]; !ok {
			return fmt.Errorf("%w %q in %s", ErrNoAlias, name, path)
		}
		delete(m, name)
		return nil
	})
}

// AliasNames returns the names in m, sorted.
func AliasNames(m map[string]Alias) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// editAliases applies fn to the file's aliases and writes the result
// atomically: a crash leaves the old file or the new one, never half.
func editAliases(path string, fn func(map[string]Alias) error) error {
	m, err := LoadAliases(path)
	if err != nil {
		return err
	}
	if err := fn(m); err != nil {
		return err
	}
	b, err := json.MarshalIndent(aliasFile{Version: 1, Aliases: m}, "", "  ")
	if err != nil {
		return fmt.Errorf("alias file: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("alias file: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".aliases-*")
	if err != nil {
		return fmt.Errorf("alias file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("alias file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("alias file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("alias file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("alias file: %w", err)
	}
	return nil
}
