package mcpserver

import (
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentnas/nas/apiv1"
)

// readSchema is nas_read's input schema as inferred from ReadInput, plus
// what struct tags cannot say: the views there are and the bounds of
// budget_tokens, so a host can check a call before it is sent.
func readSchema() *jsonschema.Schema {
	s, err := jsonschema.For[ReadInput](nil)
	if err != nil {
		// ReadInput is a fixed struct of plain fields: inference cannot
		// fail unless the code is wrong, as AddTool's own panics assume.
		panic(fmt.Sprintf("mcpserver: infer nas_read's schema: %v", err))
	}
	s.Properties["view"].Enum = []any{apiv1.ViewFull, apiv1.ViewSection, apiv1.ViewLines, apiv1.ViewOutline}
	lo, hi := 0.0, float64(apiv1.MaxBudgetTokens)
	s.Properties["budget_tokens"].Minimum, s.Properties["budget_tokens"].Maximum = &lo, &hi
	return s
}
