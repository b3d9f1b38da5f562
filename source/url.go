package source

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
)

// Location is where a source's objects are: a bucket and prefix of an S3
// endpoint, or a folder on the gateway's host.
type Location struct {
	Kind   string // KindS3 or KindDir
	Bucket string // s3
	Prefix string // s3: "" or ending in "/"
	Path   string // dir: absolute, cleaned
}

// Kinds of Location.
const (
	KindS3  = "s3"
	KindDir = "dir"
)

// ParseLocation parses "s3://BUCKET[/PREFIX]" or "dir:/ABSOLUTE/PATH"
// (also "file:///ABSOLUTE/PATH"). A non-empty S3 prefix gets a trailing
// "/", so s3://b/data and s3://b/data/ name the same objects.
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
	}
	return Location{}, fmt.Errorf("source %q: want s3://BUCKET/PREFIX or dir:/ABSOLUTE/PATH: %w", s, ErrInvalid)
}

// String returns the canonical form of l.
func (l Location) String() string {
	if l.Kind == KindDir {
		return "dir:" + l.Path
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
