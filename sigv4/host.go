package sigv4

import (
	"net"
	"strings"
)

// VirtualHostBucket returns the bucket a Host header names under one of
// domains ("BUCKET.DOMAIN", port ignored, case folded), or "" for a
// path-style request. It is the one rule by which the S3 edge routes a
// request and SigV2 builds the resource it signs, so the two never
// disagree.
func VirtualHostBucket(host string, domains []string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.ToLower(host)
	for _, d := range domains {
		if b, ok := strings.CutSuffix(host, "."+d); ok && b != "" {
			return b
		}
	}
	return ""
}
