// Package glob matches object keys against lease path globs. It is a leaf:
// the lease model, listings that seek only a lease's key ranges, and
// clients that show a lease's directories all use the same rules.
//
// A leading "/" means the repository root and is dropped (keys never start
// with it); "*" matches any run of bytes without "/", "?" one byte other
// than "/", "**" any run of bytes including "/" (possibly empty). Every
// other byte matches itself: keys are raw bytes, so "..", "//" and "%2F" in
// a glob or a key are literal, never a way out of a prefix.
package glob
