package bare_test

import (
	"encoding/json"
	"fmt"

	"github.com/reconcilekit/reconcilekit/examples/at/bench/bare"
)

// The status patch the bare At sends when an At goes from RUNNING to DONE:
// what changed, as the library's status writer sends it.
func ExampleMergeDiff() {
	running := map[string]any{"phase": "RUNNING", "podName": "hello-1a2b3c4d", "observedGeneration": 1,
		"conditions": []any{map[string]any{"type": "Reconciling", "status": "True"}}}
	done := map[string]any{"phase": "DONE", "podName": "hello-1a2b3c4d", "observedGeneration": 1, "outcome": "Succeeded",
		"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}
	patch, _ := json.Marshal(bare.MergeDiff(running, done))
	fmt.Println(string(patch))
	// Output:
	// {"conditions":[{"status":"True","type":"Ready"}],"outcome":"Succeeded","phase":"DONE"}
}
