// Package outline describes a file without a model: a deterministic
// outline (its structure with line ranges), named sections that resolve to
// line ranges, and a token estimate, for budgeted reads.
//
// Vocabulary:
//
//	Format   how a file is read, chosen by its name's extension (Detect)
//	Item     one named part of a file: a heading, key, symbol, with lines
//	Outline  a file's format, size in lines and bytes, notes and items
//	Section  an item found by name, as a line range
//	Lines    the line index: "\n"-separated, 1-based, a final "\n" starts
//	         no new line (the lines evidence pointers name)
//
// What each format yields:
//
//	markdown  headings (ATX and setext; goldmark parses, so a '#' inside a
//	          code block is not one), a heading running to the next heading
//	          of the same or a higher level
//	json      keys of the top object and of objects directly in it, with
//	          the lines of their values; a top array says its length
//	yaml      keys of the first document's top mapping and of mappings
//	          directly in it; a key runs to the next key of its level
//	csv       the header's columns and the number of rows after it
//	go        functions, methods (Type.Method), types, consts and vars
//	          (go/parser), with their doc comments
//	python    top-level def, async def and class, with their decorators:
//	          a line scanner, not a parser, so a top-level statement at
//	          column 0 inside a triple-quoted string can end an item early
//	text      the first lines and the line count (any other extension,
//	          and any format whose parser refused the file)
//	binary    the size only (a NUL byte or invalid UTF-8 in the first
//	          8 KiB)
//
// Everything here is a pure function of the path and the bytes: the same
// input always gives the same outline, so an outline needs no cache and
// is never "generated". Safe for concurrent use.
package outline
