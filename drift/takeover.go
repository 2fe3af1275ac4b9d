package drift

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/reconcilekit/reconcilekit/compare"
	"github.com/reconcilekit/reconcilekit/ownership"
	"github.com/reconcilekit/reconcilekit/tracing"
)

// Taking over the fields of replaced field managers (the rule is on
// Replaces): this file rewrites metadata.managedFields so that the replaced
// managers' entries, or the part of them desired sets, become ours. The sets
// are decoded, merged and encoded with structured-merge-diff's fieldpath,
// as client-go's csaupgrade does; unlike csaupgrade it also merges into an
// Update entry (Ensure writes Update operations), takes part of an entry,
// and merges a replaced Apply entry.

// takeover is what Replaces asks of one write.
type takeover struct {
	owner      string
	managers   []string
	apiVersion string // of the live object: only entries of this version are taken
	// apply merges every taken entry into our Apply entry (EnsureApplied);
	// otherwise each goes to our entry of its own operation.
	apply bool
	// whole takes the replaced entries whole (the object is our Owner's);
	// otherwise only the fields desired sets.
	whole bool
}

// planTakeover returns what Replaces takes from live in this write, nil for
// nothing. When the object is the Owner's, the replaced entries are ours
// whole (whole), and the comparison must read them so (compare.Replaced).
func planTakeover(fieldOwner string, cfg *config, live client.Object, apiVersion string, apply bool) *takeover {
	if len(cfg.replaces) == 0 {
		return nil
	}
	t := &takeover{owner: fieldOwner, managers: cfg.replaces, apiVersion: apiVersion, apply: apply}
	t.whole = cfg.owner != nil && ownership.IsControlledBy(live, cfg.owner)
	return t
}

// replaced reports whether e is an entry this takeover takes from.
func (t *takeover) replaced(e *metav1.ManagedFieldsEntry) bool {
	return e.Manager != t.owner && slices.Contains(t.managers, e.Manager) && e.Subresource == "" &&
		e.APIVersion == t.apiVersion &&
		(e.Operation == metav1.ManagedFieldsOperationUpdate || e.Operation == metav1.ManagedFieldsOperationApply)
}

// managedFields returns live's managedFields with the takeover done, and
// whether it changed anything. desired is what the write sets (for a
// partial takeover).
func (t *takeover) managedFields(live, desired client.Object) ([]metav1.ManagedFieldsEntry, bool, error) {
	entries := live.GetManagedFields()
	if !slices.ContainsFunc(entries, func(e metav1.ManagedFieldsEntry) bool { return t.replaced(&e) }) {
		return nil, false, nil
	}
	var keep func(fieldpath.Path) bool
	if !t.whole {
		content, err := contentOf(desired)
		if err != nil {
			return nil, false, err
		}
		keep = func(p fieldpath.Path) bool { return setIn(content, p) }
	}
	return takeOver(entries, t, keep)
}

// takeOver moves what keep selects (nil: everything) of the replaced
// entries into ours, and reports whether anything moved. An entry that
// does not decode stops the takeover: nothing moves.
func takeOver(entries []metav1.ManagedFieldsEntry, t *takeover, keep func(fieldpath.Path) bool) ([]metav1.ManagedFieldsEntry, bool, error) {
	var into [2]*fieldpath.Set // by targetOf
	var when [2]*metav1.Time
	out := make([]metav1.ManagedFieldsEntry, 0, len(entries)+1)
	for _, e := range entries {
		if !t.replaced(&e) {
			out = append(out, e)
			continue
		}
		s, err := decodeEntry(&e)
		if err != nil {
			return nil, false, nil
		}
		taken := s
		if keep != nil {
			taken = selectPaths(s, keep)
		}
		if taken.Empty() {
			out = append(out, e)
			continue
		}
		i := t.targetOf(e.Operation)
		into[i] = union(into[i], taken)
		if e.Time != nil && (when[i] == nil || when[i].Before(e.Time)) {
			when[i] = e.Time
		}
		if rest := s.Difference(taken); !rest.Empty() {
			if e.FieldsV1, err = encodeSet(rest); err != nil {
				return nil, false, err
			}
			out = append(out, e)
		}
	}
	moved := false
	for i, op := range targets {
		if into[i] == nil {
			continue
		}
		moved = true
		j := slices.IndexFunc(out, func(e metav1.ManagedFieldsEntry) bool {
			return e.Manager == t.owner && e.Operation == op && e.Subresource == "" &&
				(op == metav1.ManagedFieldsOperationApply || e.APIVersion == t.apiVersion)
		})
		if j < 0 {
			fields, err := encodeSet(into[i])
			if err != nil {
				return nil, false, err
			}
			out = append(out, metav1.ManagedFieldsEntry{Manager: t.owner, Operation: op, APIVersion: t.apiVersion,
				Time: when[i], FieldsType: "FieldsV1", FieldsV1: fields})
			continue
		}
		if out[j].APIVersion != t.apiVersion {
			// Our one Apply entry records another version: its paths
			// cannot be merged with these.
			return nil, false, nil
		}
		ours, err := decodeEntry(&out[j])
		if err != nil {
			return nil, false, nil
		}
		if out[j].FieldsV1, err = encodeSet(ours.Union(into[i])); err != nil {
			return nil, false, err
		}
	}
	return out, moved, nil
}

// targets are the operations of the entries a takeover merges into, in the
// order of targetOf's indexes.
var targets = [2]metav1.ManagedFieldsOperationType{metav1.ManagedFieldsOperationApply, metav1.ManagedFieldsOperationUpdate}

// targetOf returns the index in targets of our entry that takes a replaced
// entry of operation op.
func (t *takeover) targetOf(op metav1.ManagedFieldsOperationType) int {
	if t.apply || op == metav1.ManagedFieldsOperationApply {
		return 0
	}
	return 1
}

// errBadFields stands for a panic while parsing managedFields.
var errBadFields = errors.New("drift: malformed managedFields")

// decodeEntry parses one entry's fields with structured-merge-diff;
// malformed input is an error, never a panic.
func decodeEntry(e *metav1.ManagedFieldsEntry) (s *fieldpath.Set, err error) {
	defer func() {
		if r := recover(); r != nil { // malformed input must not take the reconciler down
			s, err = nil, errBadFields
		}
	}()
	s = &fieldpath.Set{}
	raw := e.FieldsV1.GetRawBytes()
	if len(raw) == 0 {
		return s, nil
	}
	if err := s.FromJSON(bytes.NewReader(raw)); err != nil {
		return nil, err
	}
	return s, nil
}

func union(a, b *fieldpath.Set) *fieldpath.Set {
	if a == nil {
		return b
	}
	return a.Union(b)
}

func encodeSet(s *fieldpath.Set) (*metav1.FieldsV1, error) {
	raw, err := s.ToJSON()
	if err != nil {
		return nil, fmt.Errorf("drift: encoding managed fields: %w", err)
	}
	return &metav1.FieldsV1{Raw: raw}, nil
}

// selectPaths returns the members of s that keep selects.
func selectPaths(s *fieldpath.Set, keep func(fieldpath.Path) bool) *fieldpath.Set {
	var paths []fieldpath.Path
	s.Iterate(func(p fieldpath.Path) {
		if keep(p) {
			paths = append(paths, p.Copy())
		}
	})
	return fieldpath.NewSet(paths...)
}

// contentOf returns obj as JSON content.
func contentOf(obj client.Object) (map[string]any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.Object, nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("drift: converting %T: %w", obj, err)
	}
	return m, nil
}

// setIn reports whether the JSON content sets the field, list element or
// map entry at p to something other than a zero value: null, "", 0, false
// and empty lists and maps do not count (desired's zero values are unset,
// see compare.Diff), so a partial takeover takes less, never more. A list
// element is found by its key fields (a missing field a KeyDefault of
// compare.KubernetesRules names has its default: a protocol is TCP, as the
// API defaults it) or its value.
func setIn(content any, p fieldpath.Path) bool {
	v := content
	for _, pe := range p {
		switch {
		case pe.FieldName != nil:
			m, _ := v.(map[string]any)
			v = m[*pe.FieldName]
		case pe.Key != nil:
			v = elementOf(v, func(e any) bool {
				m, ok := e.(map[string]any)
				if !ok {
					return false
				}
				for _, f := range *pe.Key {
					if !keyMatches(f.Name, f.Value.Unstructured(), m[f.Name]) {
						return false
					}
				}
				return true
			})
		case pe.Value != nil:
			want := (*pe.Value).Unstructured()
			v = elementOf(v, func(e any) bool { return scalarEqual(want, e) })
		case pe.Index != nil:
			l, _ := v.([]any)
			v = nil
			if *pe.Index < len(l) {
				v = l[*pe.Index]
			}
		default:
			return false
		}
		if v == nil {
			return false
		}
	}
	return !isZeroJSON(v)
}

// keyMatches reports whether a list element's key field name, whose value
// in the element is got (nil when missing), has the value want of a
// managedFields key; a missing or empty field a KeyDefault of the built-in
// rules names has its default.
func keyMatches(name string, want, got any) bool {
	if got == nil || got == "" {
		for _, r := range compare.KubernetesRules() {
			if kd, ok := r.(compare.KeyDefault); ok && kd.Field == name {
				return want == kd.Value
			}
		}
	}
	return scalarEqual(want, got)
}

// scalarEqual compares JSON scalars; numbers compare by value whatever
// their Go type.
func scalarEqual(x, y any) bool {
	if fx, ok := number(x); ok {
		fy, ok := number(y)
		return ok && fx == fy
	}
	switch x := x.(type) {
	case nil:
		return y == nil
	case string:
		y, ok := y.(string)
		return ok && x == y
	case bool:
		y, ok := y.(bool)
		return ok && x == y
	}
	return false
}

func number(v any) (float64, bool) {
	switch v := v.(type) {
	case int64:
		return float64(v), true
	case int:
		return float64(v), true
	case int32:
		return float64(v), true
	case float64:
		return v, true
	}
	return 0, false
}

// elementOf returns the element of the JSON list v that matches, or nil.
func elementOf(v any, match func(any) bool) any {
	l, _ := v.([]any)
	for _, e := range l {
		if match(e) {
			return e
		}
	}
	return nil
}

func isZeroJSON(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return v == ""
	case bool:
		return !v
	case int64:
		return v == 0
	case float64:
		return v == 0
	case map[string]any:
		return len(v) == 0
	case []any:
		return len(v) == 0
	}
	return false
}

// patchManagedFields sends a JSON patch of live's managedFields alone,
// locked by its resourceVersion the way csaupgrade.UpgradeManagedFieldsPatch
// does it (a "replace" of the resourceVersion, so a concurrent write makes
// the server answer 409 Conflict rather than refuse the patch as invalid).
func (t *takeover) patchManagedFields(ctx context.Context, c client.Client, live client.Object, entries []metav1.ManagedFieldsEntry) error {
	body, err := json.Marshal([]map[string]any{
		{"op": "replace", "path": "/metadata/managedFields", "value": entries},
		{"op": "replace", "path": "/metadata/resourceVersion", "value": live.GetResourceVersion()},
	})
	if err != nil {
		return err
	}
	obj := live.DeepCopyObject().(client.Object)
	if tracing.Recording(ctx) {
		ctx = tracing.Operation(ctx, "drift.Replaces", driftWriteKey.String("managedFields"))
	}
	if err := c.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, body), client.FieldOwner(t.owner)); err != nil {
		return fmt.Errorf("drift: taking over the fields of %q in %s: %w", t.managers, describe(live), err)
	}
	return nil
}
