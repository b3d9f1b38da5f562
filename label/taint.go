package label

import "slices"

// Taint is a session's taint: the origins of what it has read (reviewed
// content adds none) and the highest sensitivity, in the scales' order.
// The zero Taint is a clean session.
type Taint struct {
	Origins     []string `json:"origins"`
	Sensitivity string   `json:"sensitivity,omitempty"`
}

// With is t after a read of content labelled l, and whether that grew it.
// Taint only grows.
func (t Taint) With(l Label) (Taint, bool) {
	l = l.Norm()
	grown := false
	if !l.Reviewed && !slices.Contains(t.Origins, l.Origin) {
		t.Origins = append(slices.Clone(t.Origins), l.Origin)
		slices.SortFunc(t.Origins, func(a, b string) int { return slices.Index(Origins, a) - slices.Index(Origins, b) })
		grown = true
	}
	if t.Sensitivity == "" || Above(l.Sensitivity, t.Sensitivity) {
		t.Sensitivity, grown = l.Sensitivity, true
	}
	return t, grown
}

// External reports whether the session has read unreviewed external
// content: property A of the Rule of Two.
func (t Taint) External() bool { return slices.Contains(t.Origins, External) }

// Clean reports whether the session has read nothing.
func (t Taint) Clean() bool { return len(t.Origins) == 0 && t.Sensitivity == "" }

// List is t as the Gate Card and the lease show it: its origins, then
// its sensitivity; empty for a clean session.
func (t Taint) List() []string {
	out := slices.Clone(t.Origins)
	if out == nil {
		out = []string{}
	}
	if t.Sensitivity != "" {
		out = append(out, t.Sensitivity)
	}
	return out
}

// Label is the label a session's writes inherit: the worst origin it
// has read (agent at least: the run wrote it) and the highest
// sensitivity (private at least, the default), never reviewed.
func (t Taint) Label() Label {
	l := Label{Origin: Agent, Sensitivity: t.Sensitivity}
	for _, o := range t.Origins {
		l.Origin = worse(Origins, l.Origin, o)
	}
	return l.Norm()
}
