package outline

// Tokens estimates how many tokens a model's tokenizer makes of s: one per
// four bytes, rounded up (ceil(len/4)). Tokenizers differ between models,
// so this is an estimate, not a count: it is near the mark for English
// prose, while code, numbers and non-Latin scripts often cost more tokens
// than it says. It is deterministic, so the same content always costs the
// same against a budget.
func Tokens(s string) int {
	return len(s)/4 + min(len(s)%4, 1)
}
