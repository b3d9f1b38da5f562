package branch

// SetFoldHook makes Commit call f between sealing and folding.
func SetFoldHook(s *Service, f func()) { s.foldHook = f }
