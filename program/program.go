package program

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrRefused is returned by Allow for a program outside the folder, or
// no program at all.
var ErrRefused = errors.New("program: refused")

// Allow returns the real path of path when it is a regular, executable
// file inside folder (symbolic links resolved first, so none leads out
// of it); what names the folder in the error is folder as given.
func Allow(folder, path string) (string, error) {
	refuse := func(why string) (string, error) {
		return "", fmt.Errorf("%s: %w", why, ErrRefused)
	}
	dir, err := filepath.EvalSymlinks(folder)
	if err != nil {
		return refuse(fmt.Sprintf("the folder: %v", err))
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return refuse(err.Error())
	}
	if rel, err := filepath.Rel(dir, real); err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
		return refuse(fmt.Sprintf("not in the folder %s", folder))
	}
	fi, err := os.Stat(real)
	if err != nil {
		return refuse(err.Error())
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return refuse("not an executable file")
	}
	return real, nil
}

// Env is the environment a program runs in: the gateway's, less what
// holds the gateway's own credentials (NAS_*, AWS_*, in any case).
func Env() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if u := strings.ToUpper(name); strings.HasPrefix(u, "NAS_") || strings.HasPrefix(u, "AWS_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}
