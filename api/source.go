package api

// sourceRoutes returns the control-API verbs of lazy sources (source/add,
// source/list, source/refresh, source/remove).
func (h *Handler) sourceRoutes() map[string]verb {
	return map[string]verb{}
}
