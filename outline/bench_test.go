package outline

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkMarkdownOutline builds and fits, in 400 tokens, the outline of
// a 10 MiB Markdown file shaped as bench's outline workload writes it:
// the in-process part of files/read's outline view.
//
//	go test -run '^$' -bench MarkdownOutline -benchtime 5x ./outline
func BenchmarkMarkdownOutline(b *testing.B) {
	var buf bytes.Buffer
	buf.WriteString("# Report\n\n")
	para := strings.Repeat("The measured values agree with the model within the stated error. ", 12) + "\n\n"
	for ch := 0; buf.Len() < 10<<20; ch++ {
		fmt.Fprintf(&buf, "## Chapter %d\n\n", ch)
		for s := 0; s < 8 && buf.Len() < 10<<20; s++ {
			fmt.Fprintf(&buf, "### Section %d.%d\n\n%s%s", ch, s, para, para)
		}
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if s, _ := Build("report.md", data).Fit(400); Tokens(s) > 400 {
			b.Fatalf("the outline fit in %d tokens", Tokens(s))
		}
	}
}

// BenchmarkFit fits, in 400 tokens, the outline of the same 10 MiB
// Markdown file, built once: the cost of fitting alone.
//
//	go test -run '^$' -bench Fit -benchtime 20x ./outline
func BenchmarkFit(b *testing.B) {
	var buf bytes.Buffer
	buf.WriteString("# Report\n\n")
	para := strings.Repeat("The measured values agree with the model within the stated error. ", 12) + "\n\n"
	for ch := 0; buf.Len() < 10<<20; ch++ {
		fmt.Fprintf(&buf, "## Chapter %d\n\n", ch)
		for s := 0; s < 8 && buf.Len() < 10<<20; s++ {
			fmt.Fprintf(&buf, "### Section %d.%d\n\n%s%s", ch, s, para, para)
		}
	}
	o := Build("report.md", buf.Bytes())
	for b.Loop() {
		if s, _ := o.Fit(400); Tokens(s) > 400 {
			b.Fatalf("the outline fit in %d tokens", Tokens(s))
		}
	}
}
