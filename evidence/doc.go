// Package evidence formats and parses evidence pointers: names of exact
// lines of a file at a commit, which a reader can cite and anyone holding
// read access can check later, however the branch moved since.
//
// Vocabulary:
//
//	Pointer   nas://REPO/PATH@COMMIT#Lx-Ly  (lines x to y, 1-based, inclusive)
//	Hash      the SHA-256 (hex) of the exact bytes of those lines
//
// Syntax. REPO is a repository (bucket) name and holds no '/'. PATH is
// everything between the first '/' after REPO and the first '@'; COMMIT is
// lowercase hex up to '#'; the fragment is Lx-Ly (Lx alone means Lx-Lx on
// input; String always writes Lx-Ly).
//
// Escaping. PATH is written with percent-escapes (%XX, uppercase hex on
// output, either case on input) for '%', '@', '#', space, control
// characters (below U+0020 and U+007F) and every byte that is not part of
// valid UTF-8; every other character, '/' and non-ASCII letters included,
// is written as it is. So a path may hold any bytes, a pointer is always
// valid UTF-8 with exactly one unescaped '@' and '#', and
// Parse(p.String()) == p for every valid p. Parse accepts needless escapes
// and lowercase hex; String writes the one canonical form.
//
// Lines (counted by package outline's Lines). A file's lines are separated by "\n"; a final "\n" ends the last
// line and does not start another, so "a\nb\n" and "a\nb" both have two
// lines and an empty file has none. The bytes of lines x..y run from the
// first byte of line x through the "\n" ending line y, when there is one.
//
// The package holds no state and is safe for concurrent use.
package evidence
