package label

import (
	"errors"
	"fmt"
	"slices"
)

// ErrInvalid is a label, taint or rule that is not one.
var ErrInvalid = errors.New("invalid label")

// The origins, least trusted last.
const (
	Owner    = "owner"
	Agent    = "agent"
	External = "external"
)

// The sensitivities, most sensitive last.
const (
	Public  = "public"
	Private = "private"
	Secret  = "secret"
)

// Origins and Sensitivities are the two scales, in order.
var (
	Origins       = []string{Owner, Agent, External}
	Sensitivities = []string{Public, Private, Secret}
)

// Label is an entry's trust labels. Empty fields are the defaults, owner
// and private: Norm fills them in.
type Label struct {
	Origin      string `json:"origin"`
	Sensitivity string `json:"sensitivity"`
	Reviewed    bool   `json:"reviewed"`
}

// Norm is l with its defaults filled in.
func (l Label) Norm() Label {
	if l.Origin == "" {
		l.Origin = Owner
	}
	if l.Sensitivity == "" {
		l.Sensitivity = Private
	}
	return l
}

// Validate checks that l's fields name points of the scales (or are
// empty, the defaults).
func (l Label) Validate() error {
	if l.Origin != "" && !slices.Contains(Origins, l.Origin) {
		return fmt.Errorf("%w: origin %q (want one of %v)", ErrInvalid, l.Origin, Origins)
	}
	if l.Sensitivity != "" && !slices.Contains(Sensitivities, l.Sensitivity) {
		return fmt.Errorf("%w: sensitivity %q (want one of %v)", ErrInvalid, l.Sensitivity, Sensitivities)
	}
	return nil
}

// Join is the union of a and b: the worse origin, the higher
// sensitivity, reviewed only when both are.
func Join(a, b Label) Label {
	a, b = a.Norm(), b.Norm()
	return Label{Origin: worse(Origins, a.Origin, b.Origin), Sensitivity: worse(Sensitivities, a.Sensitivity, b.Sensitivity),
		Reviewed: a.Reviewed && b.Reviewed}
}

// Raise is l with its origin raised to at least origin and its
// sensitivity to at least sensitivity; an empty one leaves that scale
// alone (unlike Join, for which empty is the default).
func Raise(l Label, origin, sensitivity string) Label {
	l = l.Norm()
	if origin != "" {
		l.Origin = worse(Origins, l.Origin, origin)
	}
	if sensitivity != "" {
		l.Sensitivity = worse(Sensitivities, l.Sensitivity, sensitivity)
	}
	return l
}

// worse is the later of x and y on scale.
func worse(scale []string, x, y string) string {
	if slices.Index(scale, y) > slices.Index(scale, x) {
		return y
	}
	return x
}

// Above reports whether sensitivity s is above ceiling c (empty: the
// default, private).
func Above(s, c string) bool {
	return slices.Index(Sensitivities, Label{Sensitivity: s}.Norm().Sensitivity) >
		slices.Index(Sensitivities, Label{Sensitivity: c}.Norm().Sensitivity)
}

// AtLeast reports whether sensitivity s is at least threshold t.
func AtLeast(s, t string) bool { return !Above(t, s) }

// Encode is l's canonical bytes: a version, the origin's and the
// sensitivity's positions on their scales, and the reviewed flag.
func Encode(l Label) []byte {
	l = l.Norm()
	r := byte(0)
	if l.Reviewed {
		r = 1
	}
	return []byte{1, byte(slices.Index(Origins, l.Origin)), byte(slices.Index(Sensitivities, l.Sensitivity)), r}
}

// Decode reads Encode's bytes.
func Decode(b []byte) (Label, error) {
	if len(b) != 4 || b[0] != 1 || int(b[1]) >= len(Origins) || int(b[2]) >= len(Sensitivities) || b[3] > 1 {
		return Label{}, fmt.Errorf("%w: %d encoded bytes", ErrInvalid, len(b))
	}
	return Label{Origin: Origins[b[1]], Sensitivity: Sensitivities[b[2]], Reviewed: b[3] == 1}, nil
}

// Of is *l, or the default (zero) label for nil: what an entry without
// labels carries.
func Of(l *Label) Label {
	if l == nil {
		return Label{}
	}
	return *l
}
