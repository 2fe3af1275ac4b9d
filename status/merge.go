package status

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
)

// This file holds the JSON-level pieces of [Writer]: objects are compared and
// patched in the form the API server sees (encoding/json of the object), so
// the writer works for any typed or unstructured object.

// toJSONMap returns the JSON form of v as a map. Numbers stay exact
// (json.Number).
func toJSONMap(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return decodeJSONMap(b)
}

// decodeJSONMap decodes the JSON object b, numbers as json.Number.
func decodeJSONMap(b []byte) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return nil, err
	}
	return m, nil
}

// mergeDiff returns the JSON merge patch (RFC 7386) that turns before into
// after, or an empty map when they are equal. Lists are replaced whole, as
// merge patches require.
func mergeDiff(before, after map[string]any) map[string]any {
	patch := map[string]any{}
	for k, av := range after {
		bv, ok := before[k]
		if ok && reflect.DeepEqual(av, bv) {
			continue
		}
		am, aIsMap := av.(map[string]any)
		bm, bIsMap := bv.(map[string]any)
		if ok && aIsMap && bIsMap {
			if sub := mergeDiff(bm, am); len(sub) > 0 {
				patch[k] = sub
			}
			continue
		}
		patch[k] = av
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			patch[k] = nil
		}
	}
	return patch
}

// mergeApply applies a JSON merge patch (RFC 7386) to doc and returns the
// result; doc is not modified.
func mergeApply(doc, patch map[string]any) map[string]any {
	out := make(map[string]any, len(doc)+len(patch))
	for k, v := range doc {
		out[k] = v
	}
	for k, pv := range patch {
		if pv == nil {
			delete(out, k)
			continue
		}
		if pm, ok := pv.(map[string]any); ok {
			dm, _ := out[k].(map[string]any)
			out[k] = mergeApply(dm, pm)
			continue
		}
		out[k] = pv
	}
	return out
}

// conditionEdits are the changes one writer made to status.conditions,
// keyed by condition type, so that they can be re-applied on top of a fresher
// copy of the object without touching conditions of other types.
type conditionEdits struct {
	set    []map[string]any // new or changed conditions, in the object's order
	remove []string         // types that were removed
}

// edits are all the changes one writer made to an object's status.
type edits struct {
	conditions conditionEdits
	// rest is the merge patch of status without the conditions field, or,
	// when conditions are not a list of typed conditions, with it.
	rest map[string]any
}

// jsonConditions returns the conditions of a JSON status keyed by type, and
// false when the field holds something else than a list of objects with a
// string type.
func jsonConditions(status map[string]any) ([]map[string]any, bool) {
	raw, ok := status["conditions"]
	if !ok || raw == nil {
		return nil, true
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, false
	}
	out := make([]map[string]any, 0, len(list))
	for _, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			return nil, false
		}
		if _, ok := m["type"].(string); !ok {
			return nil, false
		}
		out = append(out, m)
	}
	return out, true
}

func conditionIndex(conds []map[string]any, t string) int {
	for i, c := range conds {
		if c["type"] == t {
			return i
		}
	}
	return -1
}

// diffEdits returns the edits that turn the status before into after.
func diffEdits(before, after map[string]any) edits {
	bc, bok := jsonConditions(before)
	ac, aok := jsonConditions(after)
	if !bok || !aok {
		return edits{rest: mergeDiff(before, after)}
	}
	var e edits
	for _, c := range ac {
		i := conditionIndex(bc, c["type"].(string))
		if i < 0 || !reflect.DeepEqual(bc[i], c) {
			e.conditions.set = append(e.conditions.set, c)
		}
	}
	for _, c := range bc {
		if t := c["type"].(string); conditionIndex(ac, t) < 0 {
			e.conditions.remove = append(e.conditions.remove, t)
		}
	}
	e.rest = mergeDiff(withoutConditions(before), withoutConditions(after))
	return e
}

func withoutConditions(status map[string]any) map[string]any {
	if _, ok := status["conditions"]; !ok {
		return status
	}
	out := make(map[string]any, len(status))
	for k, v := range status {
		if k != "conditions" {
			out[k] = v
		}
	}
	return out
}

// apply returns status with the edits applied on top. A condition this
// writer set keeps the LastTransitionTime already in status when its status
// there is the same, so that a retry does not invent a transition.
func (e edits) apply(status map[string]any) (map[string]any, error) {
	out := mergeApply(status, e.rest)
	if len(e.conditions.set) == 0 && len(e.conditions.remove) == 0 {
		return out, nil
	}
	conds, ok := jsonConditions(out)
	if !ok {
		return nil, fmt.Errorf("status.conditions on the server is not a list of conditions")
	}
	for _, t := range e.conditions.remove {
		if i := conditionIndex(conds, t); i >= 0 {
			conds = append(conds[:i:i], conds[i+1:]...)
		}
	}
	for _, c := range e.conditions.set {
		i := conditionIndex(conds, c["type"].(string))
		if i < 0 {
			conds = append(conds, c)
			continue
		}
		merged := make(map[string]any, len(c))
		for k, v := range c {
			merged[k] = v
		}
		if conds[i]["status"] == c["status"] {
			if ltt, ok := conds[i]["lastTransitionTime"]; ok {
				merged["lastTransitionTime"] = ltt
			}
		}
		conds[i] = merged
	}
	list := make([]any, len(conds))
	for i, c := range conds {
		list[i] = c
	}
	if len(list) == 0 {
		delete(out, "conditions")
	} else {
		out["conditions"] = list
	}
	return out, nil
}
