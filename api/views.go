package api

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/outline"
)

// view is one rendering of a file: lines start..end of it (0, 0: made
// from the whole file), and why it is not the view asked for.
type view struct {
	name       string
	content    string
	start, end int
	truncated  bool
	note       string
}

// checkRead checks a read's arguments and returns its token budget.
func checkRead(a *apiv1.FileReadRequest) (int, error) {
	if err := required("repo", a.Repo, "path", a.Path); err != nil {
		return 0, err
	}
	if a.View == "" {
		a.View = apiv1.ViewFull
	}
	switch {
	case a.View != apiv1.ViewFull && a.View != apiv1.ViewSection && a.View != apiv1.ViewLines && a.View != apiv1.ViewOutline:
		return 0, invalid(fmt.Sprintf("view %q: use outline, section, lines or full", a.View))
	case a.Range != nil && a.Section != "":
		return 0, invalid("give range or section, not both")
	case a.View == apiv1.ViewLines && a.Range == nil:
		return 0, invalid("view lines needs range {start_line, end_line}")
	case a.View == apiv1.ViewOutline && (a.Range != nil || a.Section != ""):
		return 0, invalid("view outline is of the whole file: it takes no range or section")
	case a.View == apiv1.ViewLines && a.Section != "", a.View == apiv1.ViewSection && a.Range != nil:
		return 0, invalid("view lines takes range, view section takes section")
	case a.View == apiv1.ViewSection && a.Section == "":
		return 0, invalid("view section needs section (a heading, symbol or key)")
	case a.BudgetTokens < 0 || a.BudgetTokens > apiv1.MaxBudgetTokens:
		return 0, invalid(fmt.Sprintf("budget_tokens must be between 1 and %d", apiv1.MaxBudgetTokens))
	case a.BudgetTokens == 0:
		return apiv1.DefaultBudgetTokens, nil
	}
	return a.BudgetTokens, nil
}

// choose returns the finest view that fits the budget, in the order
// full, then the section or lines asked for, then the outline, then the
// outline cut to fit (truncated). A range outside the file or an unknown
// section is an error, not a reason to degrade.
func choose(f *file, a *apiv1.FileReadRequest, budget int) (view, error) {
	var o *outline.Outline // built only when a section or the fallback needs it
	outlined := func() *outline.Outline {
		if o == nil {
			o = outline.BuildLines(a.Path, f.lines)
		}
		return o
	}
	var tried []view
	if a.View == apiv1.ViewFull {
		tried = append(tried, view{name: apiv1.ViewFull, content: string(f.data)})
	}
	if a.View != apiv1.ViewOutline && (a.Range != nil || a.Section != "") {
		v, err := part(f, outlined, a)
		if err != nil {
			return view{}, err
		}
		tried = append(tried, v)
	}
	for _, v := range tried {
		if outline.Tokens(v.content) <= budget {
			v.note = strings.TrimSuffix(degraded(tried[0], v, budget), "; ")
			return v, nil
		}
	}
	content, cut, need := outlined().FitNeed(budget)
	v := view{name: apiv1.ViewOutline, content: content, truncated: cut}
	if len(tried) > 0 {
		v.note = degraded(tried[0], v, budget)
	}
	if cut {
		v.note += fmt.Sprintf("the outline needs about %d tokens, over the budget of %d: it was cut, and its last line says where", need, budget)
	}
	v.note = strings.TrimSuffix(v.note, "; ")
	return v, nil
}

// degraded explains why got is returned instead of the view asked for.
func degraded(asked, got view, budget int) string {
	if asked.name == got.name {
		return ""
	}
	return fmt.Sprintf("view %s needs about %d tokens, over the budget of %d: returned the %s; ", asked.name, outline.Tokens(asked.content), budget, got.name)
}

// part is the section or line range a read names.
func part(f *file, outlined func() *outline.Outline, a *apiv1.FileReadRequest) (view, error) {
	v := view{name: apiv1.ViewLines}
	if a.Section != "" {
		it, ok := outlined().Section(a.Section)
		if !ok {
			return view{}, invalid(fmt.Sprintf("%s has no section %q (its outline lists them)", a.Path, a.Section))
		}
		v = view{name: apiv1.ViewSection, start: it.Start, end: it.End}
	} else {
		v.start, v.end = a.Range.StartLine, a.Range.EndLine
	}
	b, ok := f.lines.Slice(v.start, v.end)
	if !ok {
		return view{}, &Error{Status: http.StatusRequestedRangeNotSatisfiable, Code: apiv1.CodeInvalidRange,
			Message: fmt.Sprintf("lines %d-%d: %s has %d lines at %s", v.start, v.end, a.Path, f.lines.Count(), f.commit)}
	}
	v.content = string(b)
	return v, nil
}
