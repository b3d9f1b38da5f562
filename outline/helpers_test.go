package outline

// Build outlines data, as BuildLines does once its lines are indexed.
func Build(name string, data []byte) *Outline {
	return BuildLines(name, NewLines(data))
}

// Render writes the whole outline as text.
func (o *Outline) Render() string {
	s, _ := o.Fit(-1)
	return s
}

// Fit is FitNeed without the tokens needed.
func (o *Outline) Fit(budget int) (s string, cut bool) {
	s, cut, _ = o.FitNeed(budget)
	return s, cut
}
