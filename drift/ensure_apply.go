package drift

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/reconcilekit/reconcilekit/compare"
)

func (w *Writer) ensureApplied(ctx context.Context, desired client.Object, opts []Option) (out Outcome, err error) {
	cfg, err := w.start("ensure", desired, opts)
	if err != nil {
		return Outcome{}, err
	}
	defer func() { observeEnsure(w.client, desired, out, err) }()
	c := w.client
	want := desired
	if cfg.owner != nil {
		want = desired.DeepCopyObject().(client.Object)
		if err := setController(cfg.owner, want, c.Scheme()); err != nil {
			return Outcome{}, err
		}
	}
	live, err := w.getLive(ctx, desired)
	out, applied, err := w.applyDrift(ctx, cfg, want, live, err, func() (*unstructured.Unstructured, error) {
		return applyContent(want, c.Scheme())
	})
	switch {
	case applied != nil:
		if err := fromUnstructured(applied, desired); err != nil {
			return Outcome{}, err
		}
	case out.Operation == OperationUnchanged:
		// live is the cache's own object: desired gets a copy.
		copyInto(desired, w.copyLive(live))
	}
	return out, err
}

// applyDrift is the apply path of EnsureApplied and EnsureApplyConfiguration:
// it compares want with live (read with getErr) and, when live is missing or
// drifted, applies body(), the request's content, as the Writer's field
// owner. It returns the object the server returned, or nil when it sent no
// apply (no drift, a hot loop held the write back, or an error).
func (w *Writer) applyDrift(ctx context.Context, cfg *config, want, live client.Object, getErr error, body func() (*unstructured.Unstructured, error)) (Outcome, *unstructured.Unstructured, error) {
	c := w.client
	op := OperationCreated
	var cmpn compare.Comparison
	switch {
	case apierrors.IsNotFound(getErr):
		cmpn = compare.Comparison{Equal: true}
	case getErr != nil:
		return Outcome{}, nil, getErr
	default:
		op = OperationUpdated
		gvk, err := apiutil.GVKForObject(live, c.Scheme())
		if err != nil {
			return Outcome{}, nil, err
		}
		// Only our Apply entry: the apply releases what it no longer
		// sets; it cannot remove what our Update entry owns.
		extra := []compare.Option{compare.OnlyApplied()}
		take := planTakeover(w.fieldOwner, cfg, live, gvk.GroupVersion().String(), true)
		if take != nil && take.whole {
			extra = append(extra, compare.Replaces(take.managers...))
		}
		opts := w.compareOptions(cfg, extra...)
		if cmpn, err = compare.Diff(want, live, opts...); err != nil {
			return Outcome{}, nil, err
		}
		if cmpn.Equal {
			return Outcome{Operation: OperationUnchanged, Drift: cmpn}, nil, nil
		}
		if err := w.checkHotLoop(ctx, live, cmpn); err != nil {
			return Outcome{Operation: OperationUnchanged, Drift: cmpn}, nil, err
		}
		if err := w.refuseForeign(cfg, want, live); err != nil {
			return Outcome{Operation: OperationUnchanged, Drift: cmpn}, nil, err
		}
		if take != nil {
			// An apply carries no managedFields: the takeover goes first,
			// on its own, so that the apply releases what it took.
			entries, changed, err := take.managedFields(live, want, opts)
			if err != nil {
				return Outcome{}, nil, err
			}
			if changed {
				if err := take.patchManagedFields(ctx, c, live, entries); err != nil {
					return Outcome{}, nil, err
				}
			}
		}
	}
	u, err := body()
	if err != nil {
		return Outcome{}, nil, err
	}
	applyOpts := []client.ApplyOption{client.FieldOwner(w.fieldOwner)}
	if cfg.force {
		applyOpts = append(applyOpts, client.ForceOwnership)
	}
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), applyOpts...); err != nil {
		return Outcome{}, nil, err
	}
	return Outcome{Operation: op, Drift: cmpn}, u, nil
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
