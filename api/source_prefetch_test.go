package api_test

// The prefetch verbs join the fuzzed operations (appended, so the seeds'
// indexes into ops keep naming the same operations).
func init() { ops = append(ops, "source/prefetch", "source/status") }
