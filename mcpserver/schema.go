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
	s := inferSchema[ReadInput]()
	s.Properties["view"].Enum = []any{apiv1.ViewFull, apiv1.ViewSection, apiv1.ViewLines, apiv1.ViewOutline}
	lo, hi := 0.0, float64(apiv1.MaxBudgetTokens)
	s.Properties["budget_tokens"].Minimum, s.Properties["budget_tokens"].Maximum = &lo, &hi
	return s
}

// inferSchema is the input schema the SDK would infer for T, for a tool
// that adds what struct tags cannot say (enums, bounds).
func inferSchema[T any]() *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		// Inputs are fixed structs of plain fields: inference cannot fail
		// unless the code is wrong, as AddTool's own panics assume.
		panic(fmt.Sprintf("mcpserver: infer the schema of %T: %v", *new(T), err))
	}
	return s
}
