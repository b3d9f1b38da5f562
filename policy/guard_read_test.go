package policy

import (
	"testing"

	"github.com/agentnas/nas/label"
)

// TestCompletesByRead: only egress, B and unreviewed external content
// together complete A+B+C on a read.
func TestCompletesByRead(t *testing.T) {
	ext := label.Label{Origin: label.External}
	for _, tc := range []struct {
		g       *Guard
		ceiling string
		egress  bool
		l       label.Label
		want    bool
	}{
		{nil, "", true, ext, true},
		{nil, "secret", true, ext, true},
		{nil, "", false, ext, false},
		{nil, "public", true, ext, false},
		{&Guard{SensitiveAt: label.Secret}, "private", true, ext, false},
		{nil, "", true, label.Label{Origin: label.External, Reviewed: true}, false},
		{nil, "", true, label.Label{Origin: label.Agent}, false},
	} {
		if got, why := tc.g.CompletesByRead(tc.ceiling, tc.egress, tc.l); got != tc.want || got && why == "" {
			t.Errorf("%+v: %v %q, want %v", tc, got, why, tc.want)
		}
	}
}
