// Package memory is the file format of agent memory and the layout of an
// Agent Home: what a note is on disk, where it lives, and how it is
// checked. It holds no storage and no state; the gateway reads and writes
// notes through its one door like any other file, and a note is a plain
// file that any reader can open with no memory layer at all.
//
// Vocabulary:
//
//	Home        agents/ROLE: a role's directory (Home)
//	Note        HOME/memory/notes/ID.md, or HOME/memory/quarantine/ID.md
//	            for a note written by a tainted session (recallable,
//	            never autoloaded)
//	ID          mem_ and lowercase letters and digits (NewID: 16 random
//	            base32 characters, 80 bits, unguessable)
//	Recall test HOME/recall-tests.yaml: queries and the note IDs each
//	            must recall (the Home's golden recall tests)
//
// A note is Markdown with YAML front matter, in this order and shape:
//
//	---
//	id: mem_4kq2
//	kind: semantic
//	subject: customer/acme
//	valid_from: 2026-10-02
//	valid_to: null
//	confidence: 0.8
//	origin: agent
//	reviewed: true
//	sources:
//	  - nas://home-box/agents/cleo/journal/2026-10-02.md@9f2c1de#L12-L18
//	supersedes: [mem_1xa9]
//	---
//	Acme renewed for 24 months; the champion moved from Dana to Luis.
//
// The body is every byte after the closing "---" line, kept as it is.
// Invariants: a note is never overwritten (a new fact supersedes old
// ones); Parse never panics, whatever the input, and everything it
// accepts passes Validate and renders back to a note that parses equal.
//
// The package is safe for concurrent use.
package memory
