// Package search is the full-text index of a repository's committed
// files. The index is a derivative, never the truth: it records the
// recipe that made it and the commits it covers (recipe.json), can be
// deleted and rebuilt at any time, and every hit is checked against the
// commit asked about before it is answered, so a stale or damaged index
// can lose hits but never invent one.
//
// Vocabulary:
//   - Service: the indexes of every repository, under one directory.
//   - index: one bleve index per repository, serving every branch and
//     commit of it.
//   - document: one (key, content) pair. Its ID is the content's
//     identity (64 hex digits: the SHA-256 of the entry's chunk list, or
//     of its content reference) followed by ":" and the key, so a file
//     that did not change between commits is indexed once, and a key
//     whose content changed has one document per content.
//   - complete commit: one every entry of which has a document (a text
//     document, or a marker that says it was skipped). Bringing the
//     index to a commit C indexes only what it lacks: the difference
//     from a complete commit when there is one, else C's whole tree,
//     skipping documents already present.
//   - text file: valid UTF-8 without NUL bytes, of at most MaxFileBytes.
//     Other entries (binary, larger, lazy entries of an attached source
//     not yet local) are counted as skipped and never read again.
//   - hit: a document that matched and whose (key, identity) is the
//     commit's entry for the key; its snippet is the best matching
//     line(s) of the file (see MaxSnippetLines, MaxSnippetBytes).
//
// A query at C over-fetches from the index and keeps only documents of
// C (checked with one tree lookup each), of keys the caller's filter
// matches (its view), under the prefix, and, unless asked for,
// outside quarantine (a key with a memory/quarantine/ segment).
//
// Scores are bleve's BM25 over the whole index: term statistics (how
// many documents hold a word, document lengths) include documents the
// caller cannot see and documents of other commits. A caller can thus
// learn a little about the frequency of its query's words in hidden
// files through the scores of the hits it sees; never their names,
// keys, count or content. Hidden documents are never returned and never
// charged or recorded as denials.
//
// Layout on disk, one directory per repository under the Service's:
//
//	DIR/<repo>/recipe.json  the recipe and the complete commits (state)
//	DIR/<repo>/bleve/       the bleve index (scorch)
//
// A recipe.json whose recipe differs from this build's (another bleve
// version, analyzer or size cap) or that does not decode means the
// index is dropped and built anew on first use.
//
// Concurrency: queries and builds of any repositories run concurrently;
// at most one build per repository runs at a time, and callers that
// want the same commit wait for it rather than build it again. Delete
// and Close wait for the queries and builds in flight.
package search
