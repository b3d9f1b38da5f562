package s3api

import (
	"net/http"
	"strings"

	"github.com/agentnas/nas/manifest"
)

// Retention classes over S3 look like user metadata too:
// x-amz-meta-nas-retention (normal, scratch or sensitive) and, for
// sensitive, x-amz-meta-nas-domain (the key domain). A write asks with
// them; the repository's rules may make it stricter, never laxer; HEAD
// and GET answer them. A sensitive version's bytes are sealed under its
// domain's key (branch.Sealing) as they arrive, so forgetting the domain
// destroys every copy of them at once.

// The metadata names of the retention class.
const (
	metaRetention = "nas-retention"
	metaDomain    = "nas-domain"
)

// takeRetentionMeta removes the retention names from e's metadata and
// returns what they ask for.
func takeRetentionMeta(e *manifest.Entry) (class, domain string) {
	for _, p := range takeMeta(e, metaRetention, metaDomain) {
		if p.Name == metaRetention {
			class = p.Value
		} else {
			domain = p.Value
		}
	}
	return class, domain
}

// retention sets e's retention class for a write of key by the request,
// and returns the key domain its bytes are sealed under ("" when it is
// not sensitive). A bad class or domain fails here, before the body.
func (s *Server) retention(req *request, key string, e *manifest.Entry) (string, error) {
	class, domain := takeRetentionMeta(e)
	class, domain, err := s.auth.Retention(req.ctx(), req.p, req.repo, key, class, domain)
	if err != nil {
		return "", err
	}
	e.Retention = class
	return domain, nil
}

// retentionHeaders answers e's retention class when it is not normal,
// and the key domain of a sealed e in repo (by its name in the
// repository it belongs to when that is another, a copy's source).
func retentionHeaders(h http.Header, repo string, e *manifest.Entry, c *manifest.Content) {
	if e.Retention == "" {
		return
	}
	h.Set("X-Amz-Meta-"+metaRetention, e.Retention)
	if c != nil && c.Seal != nil {
		h.Set("X-Amz-Meta-"+metaDomain, domainIn(repo, c.Seal.Domain))
	}
}

// domainIn is how a key domain (the keyring's name) reads in repo: by its
// own name when it is repo's.
func domainIn(repo, domain string) string {
	if d, ok := strings.CutPrefix(domain, repo+"/"); ok {
		return d
	}
	return domain
}
