package drift

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/reconcilekit/reconcilekit/compare"
	"github.com/reconcilekit/reconcilekit/internal/managedfields"
	"github.com/reconcilekit/reconcilekit/ownership"
)

// Taking over the fields of replaced field managers (the rule is on
// Replaces): this file rewrites metadata.managedFields so that the replaced
// managers' entries, or the part of them desired sets, become ours. The sets
// are decoded, merged and encoded with structured-merge-diff's fieldpath
// (through internal/managedfields, the library's one reader of
// managedFields, which also says which entries are taken), as client-go's
// csaupgrade does; unlike csaupgrade it also merges into an
// Update entry (Ensure writes Update operations), takes part of an entry,
// and merges a replaced Apply entry.

// takeover is what Replaces asks of one write.
type takeover struct {
	owner      string
	managers   []string
	apiVersion string // of the live object: only entries of this version are taken
	// query says which entries are taken: the replaced managers' of the
	// object itself in apiVersion, Update or Apply.
	query managedfields.Query
	// apply merges every taken entry into our Apply entry (EnsureApplied);
	// otherwise each goes to our entry of its own operation.
	apply bool
	// whole takes the replaced entries whole (the object is our Owner's);
	// otherwise only the fields desired sets.
	whole bool
}

// planTakeover returns what Replaces takes from live in this write, nil for
// nothing. When the object is the Owner's, the replaced entries are ours
// whole (whole), and the comparison must read them so (compare.Replaces).
func planTakeover(fieldOwner string, cfg *config, live client.Object, apiVersion string, apply bool) *takeover {
	if len(cfg.replaces) == 0 {
		return nil
	}
	t := newTakeover(fieldOwner, cfg.replaces, apiVersion, apply)
	t.whole = cfg.owner != nil && ownership.IsControlledBy(live, cfg.owner)
	return t
}

// newTakeover returns the takeover by owner of the entries of managers in
// apiVersion; apply merges them into our Apply entry.
func newTakeover(owner string, managers []string, apiVersion string, apply bool) *takeover {
	return &takeover{owner: owner, managers: managers, apiVersion: apiVersion, apply: apply,
		query: managedfields.Query{Owner: owner, Replaces: managedfields.NewManagers(managers...), APIVersion: apiVersion}}
}

// replaced reports whether e is an entry this takeover takes from.
func (t *takeover) replaced(e *metav1.ManagedFieldsEntry) bool {
	me := managedfields.Of(e)
	return t.query.Replaced(&me)
}

// managedFields returns live's managedFields with the takeover done, and
// whether it changed anything. desired is what the write sets and opts the
// options the write compared it with (for a partial takeover: what desired
// sets is what the comparison counts as set, list elements found by the
// comparison's KeyDefault rules).
func (t *takeover) managedFields(live, desired client.Object, opts []compare.Option) ([]metav1.ManagedFieldsEntry, bool, error) {
	entries := live.GetManagedFields()
	if !slices.ContainsFunc(entries, func(e metav1.ManagedFieldsEntry) bool { return t.replaced(&e) }) {
		return nil, false, nil
	}
	var keep func(fieldpath.Path) bool
	if !t.whole {
		content, typed, err := contentOf(desired)
		if err != nil {
			return nil, false, err
		}
		keys := managedfields.KeyDefaultsOf(opts)
		keep = func(p fieldpath.Path) bool { return managedfields.Sets(content, p, keys, typed) }
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
			taken = managedfields.Select(s, keep)
		}
		if taken.Empty() {
			out = append(out, e)
			continue
		}
		i := t.targetOf(e.Operation)
		into[i] = managedfields.Union(into[i], taken)
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
		// Our entry of the operation: the one Apply entry whatever its
		// version, or the Update entry of the object's version.
		mine := managedfields.Query{Owner: t.owner}
		j := slices.IndexFunc(out, func(e metav1.ManagedFieldsEntry) bool {
			me := managedfields.Of(&e)
			return mine.Own(&me) && e.Operation == op && (op == metav1.ManagedFieldsOperationApply || e.APIVersion == t.apiVersion)
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

// decodeEntry decodes an entry's fields; malformed input is an error,
// never a panic.
func decodeEntry(e *metav1.ManagedFieldsEntry) (*fieldpath.Set, error) {
	me := managedfields.Of(e)
	return managedfields.Decode(&me)
}

// encodeSet encodes the fields of an entry.
func encodeSet(s *fieldpath.Set) (*metav1.FieldsV1, error) {
	f, err := managedfields.Encode(s)
	if err != nil {
		return nil, fmt.Errorf("drift: encoding managed fields: %w", err)
	}
	return f, nil
}

// contentOf returns obj as JSON content, and whether it was converted from
// a Go struct (typed), where a zero value is unset.
func contentOf(obj client.Object) (map[string]any, bool, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.Object, false, nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, true, fmt.Errorf("drift: converting %T: %w", obj, err)
	}
	return m, true, nil
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
	if err := c.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, body), client.FieldOwner(t.owner)); err != nil {
		return fmt.Errorf("drift: taking over the fields of %q in %s: %w", t.managers, describe(live), err)
	}
	return nil
}
