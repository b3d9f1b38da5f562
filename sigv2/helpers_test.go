package sigv2

import (
	"context"
	"fmt"
	"time"

	"github.com/agentnas/nas/sigv4"
)

// The credentials of testdata/botocore_vectors.py.
const (
	ownerAK     = "AKIAIOSFODNN7EXAMPLE"
	ownerSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	leaseAK     = "ASIATEMPORARY0000001"
	leaseSecret = "lease/secret/0123456789"
	leaseToken  = "token.with+slash/and=eq"
)

// vectorDate is the Date botocore signed the header vectors with, and
// vectorExpires the Expires of the presigned ones.
var (
	vectorDate    = time.Date(2007, 3, 27, 19, 36, 42, 0, time.UTC)
	vectorExpires = time.Unix(1175139620, 0)
)

// keys is a SecretLookup over the two test credentials; the lease key
// needs its token, the owner's takes none.
type keys struct{}

func (keys) LookupSecret(_ context.Context, ak, token string) (string, error) {
	switch {
	case ak == ownerAK && token == "":
		return ownerSecret, nil
	case ak == leaseAK && token == leaseToken:
		return leaseSecret, nil
	case ak == leaseAK:
		return "", fmt.Errorf("token %q: %w", token, sigv4.ErrInvalidToken)
	}
	return "", fmt.Errorf("%s: %w", ak, sigv4.ErrUnknownKey)
}

// at returns a verifier whose clock reads t, with nas.test as its
// virtual-host domain.
func at(t time.Time) *Verifier {
	return &Verifier{Now: func() time.Time { return t }, Domains: []string{"nas.test"}}
}
