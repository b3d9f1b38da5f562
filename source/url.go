package source

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
)

// Location is where a source's objects are: a bucket and prefix of an S3
// endpoint, a folder on the gateway's host, or a revision of a Git
// repository there.
type Location struct {
	Kind   string // KindS3, KindDir, KindGit or KindExec
	Bucket string // s3
	Prefix string // s3: "" or ending in "/"
	Path   string // dir, git, exec (the adapter program): absolute, cleaned
	URL    string // git: a remote repository (https:// or file://) instead of Path
	Rev    string // git: the revision ("HEAD" when not given)
}

// Kinds of Location.
const (
	KindS3  = "s3"
	KindDir = "dir"
	KindGit = "git"
	// KindExec is the data an adapter program shows (package adapter).
	KindExec = "exec"
)

// ParseLocation parses "s3://BUCKET[/PREFIX]", "dir:/ABSOLUTE/PATH"
// (also "file:///ABSOLUTE/PATH") or "git:/ABSOLUTE/PATH[@REV]" (the last
// "@" starts the revision). A non-empty S3 prefix gets a trailing
// "/", so s3://b/data and s3://b/data/ name the same objects. An adapter
// is "exec:/ABSOLUTE/PATH" (its arguments are given apart).
func ParseLocation(s string) (Location, error) {
	switch {
	case strings.HasPrefix(s, "s3://"):
		rest := s[len("s3://"):]
		bucket, prefix, _ := strings.Cut(rest, "/")
		if err := validBucket(bucket); err != nil {
			return Location{}, fmt.Errorf("source %q: %w", s, err)
		}
		if prefix != "" && !strings.HasSuffix(prefix, "/") {
			prefix += "/"
		}
		if strings.HasPrefix(prefix, "/") || strings.Contains(prefix, "//") {
			return Location{}, fmt.Errorf("source %q: empty segment in the prefix: %w", s, ErrInvalid)
		}
		return Location{Kind: KindS3, Bucket: bucket, Prefix: prefix}, nil
	case strings.HasPrefix(s, "dir:"), strings.HasPrefix(s, "file://"):
		p := strings.TrimPrefix(s, "dir:")
		if strings.HasPrefix(s, "file://") {
			u, err := url.Parse(s)
			if err != nil || u.Host != "" {
				return Location{}, fmt.Errorf("source %q: want file:///ABSOLUTE/PATH: %w", s, ErrInvalid)
			}
			p = u.Path
		}
		if p == "" || !filepath.IsAbs(p) {
			return Location{}, fmt.Errorf("source %q: a folder must be an absolute path (dir:/path/to/folder): %w", s, ErrInvalid)
		}
		return Location{Kind: KindDir, Path: filepath.Clean(p)}, nil
	case strings.HasPrefix(s, "git:"):
		return parseGit(s)
	case strings.HasPrefix(s, "exec:"):
		p := s[len("exec:"):]
		if !filepath.IsAbs(p) || strings.ContainsAny(p, "\x00\n") {
			return Location{}, fmt.Errorf("source %q: an adapter is the absolute path of a program on the gateway's host (exec:/path/to/adapter): %w", s, ErrInvalid)
		}
		return Location{Kind: KindExec, Path: filepath.Clean(p)}, nil
	}
	return Location{}, fmt.Errorf("source %q: want s3://BUCKET/PREFIX, dir:/ABSOLUTE/PATH, git:/ABSOLUTE/PATH@REV or exec:/ABSOLUTE/PATH: %w", s, ErrInvalid)
}

// parseGit parses "git:/ABSOLUTE/PATH[@REV]" or "git:URL[@REV]" (an
// https:// or file:// URL, which the gateway mirrors).
func parseGit(s string) (Location, error) {
	p, rev := strings.TrimPrefix(s, "git:"), "HEAD"
	if i := strings.LastIndexByte(p, '@'); i >= 0 {
		p, rev = p[:i], p[i+1:]
	}
	if rev == "" || len(rev) > 255 || strings.ContainsAny(rev, " \t\n\x00") || strings.HasPrefix(rev, "-") {
		return Location{}, fmt.Errorf("source %q: revision %q: %w", s, rev, ErrInvalid)
	}
	if strings.HasPrefix(p, "https://") || strings.HasPrefix(p, "file:///") {
		u, err := url.Parse(p)
		if err != nil || u.RawQuery != "" || u.Fragment != "" || (u.Scheme == "https" && u.Host == "") {
			return Location{}, fmt.Errorf("source %q: a Git URL is https://HOST/PATH or file:///PATH: %w", s, ErrInvalid)
		}
		if u.User != nil {
			return Location{}, fmt.Errorf("source %q: no credentials in a Git URL (only public repositories are mirrored): %w", s, ErrInvalid)
		}
		return Location{Kind: KindGit, URL: u.String(), Rev: rev}, nil
	}
	if p == "" || !filepath.IsAbs(p) {
		return Location{}, fmt.Errorf("source %q: a Git repository must be an absolute path on the gateway's host "+
			"(git:/path/to/repo@REV; clone a remote one there first): %w", s, ErrInvalid)
	}
	return Location{Kind: KindGit, Path: filepath.Clean(p), Rev: rev}, nil
}

// String returns the canonical form of l.
func (l Location) String() string {
	switch l.Kind {
	case KindDir:
		return "dir:" + l.Path
	case KindExec:
		return "exec:" + l.Path
	case KindGit:
		if l.URL != "" {
			return "git:" + l.URL + "@" + l.Rev
		}
		return "git:" + l.Path + "@" + l.Rev
	}
	return "s3://" + l.Bucket + "/" + l.Prefix
}

// validBucket accepts S3 bucket names, leniently (3-255 characters of
// letters, digits, '.', '-' and '_'), since S3-compatible stores differ.
func validBucket(b string) error {
	if len(b) < 3 || len(b) > 255 {
		return fmt.Errorf("bucket %q: must be 3-255 characters: %w", b, ErrInvalid)
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			return fmt.Errorf("bucket %q: unexpected %q: %w", b, c, ErrInvalid)
		}
	}
	return nil
}
