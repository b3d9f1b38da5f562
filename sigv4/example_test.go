package sigv4_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"

	"github.com/agentnas/nas/checksum"
	"github.com/agentnas/nas/sigv4"
)

type secrets map[string]string

func (s secrets) LookupSecret(_ context.Context, ak, token string) (string, error) {
	if sk, ok := s[ak]; ok && token == "" {
		return sk, nil
	}
	return "", sigv4.ErrUnknownKey
}

// A PUT handler authenticates the request, streams the verified payload to
// storage while hashing it, and commits only after Body reached io.EOF and
// the checksums (including trailers of aws-chunked bodies) matched.
func Example() {
	v := &sigv4.Verifier{Lookup: secrets{"AKIDEXAMPLE": "secret"}}
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		res, err := v.Verify(r.Context(), r) // ErrMissingAuth: anonymous
		if err != nil {
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
		sums, err := checksum.FromRequest(r.Header)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f, err := os.CreateTemp("", "upload")
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		defer os.Remove(f.Name())
		defer f.Close()
		if _, err := io.Copy(io.MultiWriter(f, sums.Writer()), res.Body); err != nil {
			status := http.StatusBadRequest
			if errors.Is(err, sigv4.ErrSignatureMismatch) {
				status = http.StatusForbidden
			}
			http.Error(w, err.Error(), status)
			return
		}
		if err := sums.Verify(res.Trailer()); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		// Commit f; store sums.Value() and the hex of sums.MD5() as the ETag.
		w.WriteHeader(http.StatusOK)
	})
}
