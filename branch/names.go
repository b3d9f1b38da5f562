package branch

import (
	"fmt"
	"strings"
)

// ValidBranchName reports whether name is segments of [a-z0-9][a-z0-9._-]*
// joined by "/", at most 255 bytes.
func ValidBranchName(name string) error {
	if name == "" || len(name) > 255 {
		return fmt.Errorf("branch %q: must be 1-255 bytes: %w", name, ErrInvalidName)
	}
	for _, seg := range strings.Split(name, "/") {
		if seg == "" {
			return fmt.Errorf("branch %q: empty segment: %w", name, ErrInvalidName)
		}
		for i := 0; i < len(seg); i++ {
			c := seg[i]
			ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || i > 0 && (c == '.' || c == '_' || c == '-')
			if !ok {
				return fmt.Errorf("branch %q: segments are [a-z0-9][a-z0-9._-]*: %w", name, ErrInvalidName)
			}
		}
	}
	return nil
}

// ValidRepoName reports whether name is a valid S3 bucket name: 3-63
// characters of lower-case letters, digits, '.' and '-', starting and ending
// with a letter or digit, no "..", and not an IP address.
func ValidRepoName(name string) error {
	if len(name) < 3 || len(name) > 63 {
		return fmt.Errorf("repository %q: must be 3-63 characters: %w", name, ErrInvalidName)
	}
	dots := 0
	allDigitsOrDots := true
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z':
			allDigitsOrDots = false
		case c >= '0' && c <= '9':
		case c == '.' || c == '-':
			if i == 0 || i == len(name)-1 {
				return fmt.Errorf("repository %q: must start and end with a letter or digit: %w", name, ErrInvalidName)
			}
			if c == '.' {
				dots++
				if name[i-1] == '.' || name[i-1] == '-' || name[i+1] == '-' {
					return fmt.Errorf("repository %q: bad dot placement: %w", name, ErrInvalidName)
				}
			} else {
				allDigitsOrDots = false
			}
		default:
			return fmt.Errorf("repository %q: only a-z, 0-9, '.' and '-' are allowed: %w", name, ErrInvalidName)
		}
	}
	if allDigitsOrDots && dots == 3 {
		return fmt.Errorf("repository %q: must not look like an IP address: %w", name, ErrInvalidName)
	}
	return nil
}
