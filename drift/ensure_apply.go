package drift

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// EnsureApplied is [Ensure] through server-side apply: it applies desired as
// the field manager [WithFieldOwner] names (required: without it,
// [ErrNoFieldOwner]; see also [ForceOwnership]) when the object is missing
// or has drifted, and sends nothing when [Diff] finds no drift. With
// [Replaces], a drifted object's first apply is preceded by a patch of its
// managedFields that takes the replaced managers' fields over.
//
// Before applying, desired is converted to unstructured content and pruned of
// nulls, empty maps and lists, status and server-managed metadata, so the
// apply claims only the fields desired sets. A field our last apply set and
// desired no longer sets is drift (our Apply entry in managedFields says so),
// so the apply that releases it, and lets the server remove it, is sent
// right away. See "Ensure or EnsureApplied?" in the package documentation.
//
// On success desired holds the object as the server returned it.
func EnsureApplied(ctx context.Context, c client.Client, desired client.Object, opts ...Option) (out Outcome, err error) {
	defer func() { observeEnsure(c, desired, out, err) }()
	cfg := newConfig(opts)
	if err := cfg.check("ensure", desired); err != nil {
		return Outcome{}, err
	}
	want := desired
	if cfg.owner != nil {
		want = desired.DeepCopyObject().(client.Object)
		if err := setController(cfg.owner, want, c.Scheme()); err != nil {
			return Outcome{}, err
		}
	}
	live, err := getLive(ctx, c, desired)
	op := OperationCreated
	var cmpn Comparison
	switch {
	case apierrors.IsNotFound(err):
		cmpn = Comparison{Equal: true}
	case err != nil:
		return Outcome{}, err
	default:
		op = OperationUpdated
		gvk, err := apiutil.GVKForObject(live, c.Scheme())
		if err != nil {
			return Outcome{}, err
		}
		// Only our Apply entry: the apply releases what it no longer
		// sets; it cannot remove what our Update entry owns.
		cfg.diff.applyOnly, cfg.diff.apiVersion = true, gvk.GroupVersion().String()
		if _, isU := live.(runtime.Unstructured); isU {
			cfg.diff.kindType = c.Scheme().AllKnownTypes()[gvk]
		}
		take := planTakeover(cfg, live, cfg.diff.apiVersion, true)
		if cmpn, err = diff(&cfg.diff, want, live); err != nil {
			return Outcome{}, err
		}
		if cmpn.Equal {
			copyInto(desired, live)
			return Outcome{Operation: OperationUnchanged, Drift: cmpn}, nil
		}
		if err := checkHotLoop(ctx, c, cfg, live, cmpn); err != nil {
			copyInto(desired, live)
			return Outcome{Operation: OperationUnchanged, Drift: cmpn}, err
		}
		if take != nil {
			// An apply carries no managedFields: the takeover goes first,
			// on its own, so that the apply releases what it took.
			entries, changed, err := take.managedFields(live, want)
			if err != nil {
				return Outcome{}, err
			}
			if changed {
				if err := take.patchManagedFields(ctx, c, live, entries); err != nil {
					return Outcome{}, err
				}
			}
		}
	}
	u, err := applyContent(want, c.Scheme())
	if err != nil {
		return Outcome{}, err
	}
	applyOpts := []client.ApplyOption{client.FieldOwner(cfg.diff.fieldOwner)}
	if cfg.force {
		applyOpts = append(applyOpts, client.ForceOwnership)
	}
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), applyOpts...); err != nil {
		return Outcome{}, err
	}
	if err := fromUnstructured(u, desired); err != nil {
		return Outcome{}, err
	}
	return Outcome{Operation: op, Drift: cmpn}, nil
}

// applyContent turns desired into the pruned unstructured body of an apply.
func applyContent(desired client.Object, scheme *runtime.Scheme) (*unstructured.Unstructured, error) {
	gvk, err := apiutil.GVKForObject(desired, scheme)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if u, ok := desired.(*unstructured.Unstructured); ok {
		m = runtime.DeepCopyJSON(u.Object)
	} else if m, err = runtime.DefaultUnstructuredConverter.ToUnstructured(desired); err != nil {
		return nil, fmt.Errorf("drift: converting %T for apply: %w", desired, err)
	}
	delete(m, "status")
	if meta, ok := m["metadata"].(map[string]any); ok {
		for _, k := range []string{"resourceVersion", "uid", "generation", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields", "selfLink"} {
			delete(meta, k)
		}
	}
	prune(m)
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

// prune removes nulls and empty maps and lists, which mean "not set".
func prune(m map[string]any) {
	for k, v := range m {
		switch v := v.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			prune(v)
			if len(v) == 0 {
				delete(m, k)
			}
		case []any:
			for _, e := range v {
				if em, ok := e.(map[string]any); ok {
					prune(em)
				}
			}
			if len(v) == 0 {
				delete(m, k)
			}
		}
	}
}

func fromUnstructured(u *unstructured.Unstructured, dst client.Object) error {
	if du, ok := dst.(*unstructured.Unstructured); ok {
		du.Object = u.Object
		return nil
	}
	fresh, err := emptyLike(dst, nil)
	if err != nil {
		return err
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, fresh); err != nil {
		return fmt.Errorf("drift: reading the applied object into %T: %w", dst, err)
	}
	copyInto(dst, fresh)
	return nil
}
