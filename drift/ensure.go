package drift

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/reconcilekit/reconcilekit/compare"
	"github.com/reconcilekit/reconcilekit/diet"
	"github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/ownership"
)

// Operation says what Ensure did. Its values complete the sentence
// "the object was ...", like controllerutil.OperationResult.
type Operation string

const (
	// OperationCreated means the object did not exist and was created.
	OperationCreated Operation = "created"
	// OperationUpdated means the object drifted and the drift was written.
	OperationUpdated Operation = "updated"
	// OperationUnchanged means the object had no drift (or a hot loop
	// stopped the write) and nothing was written.
	OperationUnchanged Operation = "unchanged"
)

// Outcome is what a [Writer]'s Ensure, EnsureMutate, EnsureApplied or
// EnsureApplyConfiguration did and why.
type Outcome struct {
	// Operation is what was done.
	Operation Operation
	// Drift is the comparison of desired with the live object that led to
	// the operation. It is Equal when the object was created or had no
	// drift. When it is not Equal, its Paths and Report say what was
	// written (OperationUpdated) or, when HotLoops held the write back
	// (OperationUnchanged with a [*HotLoopError]), what would have been.
	Drift compare.Comparison
}

func (w *Writer) ensure(ctx context.Context, desired client.Object, opts []Option) (out Outcome, err error) {
	cfg, err := w.start("ensure", desired, opts)
	if err != nil {
		return Outcome{}, err
	}
	defer func() { observeEnsure(w.client, desired, out, err) }()
	c := w.client
	live, err := w.getLive(ctx, desired)
	if apierrors.IsNotFound(err) {
		return create(ctx, c, w.fieldOwner, cfg, desired)
	}
	if err != nil {
		return Outcome{}, err
	}
	want := desired
	if cfg.owner != nil {
		want = desired.DeepCopyObject().(client.Object)
		if err := setController(cfg.owner, want, c.Scheme()); err != nil {
			return Outcome{}, err
		}
	}
	return w.patchDrift(ctx, cfg, desired, want, live)
}

func (w *Writer) ensureMutate(ctx context.Context, obj client.Object, mutate func() error, opts []Option) (out Outcome, err error) {
	cfg, err := w.start("ensure", obj, opts)
	if err != nil {
		return Outcome{}, err
	}
	defer func() { observeEnsure(w.client, obj, out, err) }()
	c := w.client
	key := client.ObjectKeyFromObject(obj)
	live, err := w.getLive(ctx, obj)
	if apierrors.IsNotFound(err) {
		if err := callMutate(mutate, key, obj); err != nil {
			return Outcome{}, err
		}
		return create(ctx, c, w.fieldOwner, cfg, obj)
	}
	if err != nil {
		return Outcome{}, err
	}
	copyInto(obj, w.copyLive(live))
	if err := callMutate(mutate, key, obj); err != nil {
		return Outcome{}, err
	}
	want := obj
	if cfg.owner != nil {
		want = obj.DeepCopyObject().(client.Object)
		if err := setController(cfg.owner, want, c.Scheme()); err != nil {
			return Outcome{}, w.foreignOr(live, err)
		}
	}
	return w.patchDrift(ctx, cfg, obj, want, live)
}

func callMutate(mutate func() error, key client.ObjectKey, obj client.Object) error {
	if err := mutate(); err != nil {
		return err
	}
	if client.ObjectKeyFromObject(obj) != key {
		return fmt.Errorf("drift: mutate changed the object key from %s to %s", key, client.ObjectKeyFromObject(obj))
	}
	return nil
}

// getLive reads the live version of desired into a fresh object of its
// type, as c has it (a cached client: the cache's own object, not a copy,
// which nothing here may change or hand out; see [Writer.Ensure]). An
// object its cache keeps in part (package diet) is read whole from
// APIReader, or refused without one.
func (w *Writer) getLive(ctx context.Context, desired client.Object) (client.Object, error) {
	return w.readLive(ctx, desired, func() (client.Object, error) { return emptyLike(desired, w.client.Scheme()) })
}

// readLive is getLive with the objects to read into made by empty.
func (w *Writer) readLive(ctx context.Context, desired client.Object, empty func() (client.Object, error)) (client.Object, error) {
	if desired.GetName() == "" {
		return nil, fmt.Errorf("drift: ensure %T: desired has no name", desired)
	}
	live, err := empty()
	if err != nil {
		return nil, err
	}
	key := client.ObjectKeyFromObject(desired)
	if err := w.client.Get(ctx, key, live, client.UnsafeDisableDeepCopy); err != nil {
		return live, err
	}
	if !diet.IsPartial(live) {
		return live, nil
	}
	if w.APIReader == nil {
		return nil, errors.Permanent(fmt.Errorf("drift: ensure %s: %w: set the Writer's APIReader to read it whole", describe(desired), diet.ErrPartial))
	}
	whole, err := empty()
	if err != nil {
		return nil, err
	}
	if err := w.APIReader.Get(ctx, key, whole); err != nil {
		return whole, err
	}
	if diet.IsPartial(whole) {
		return nil, errors.Permanent(fmt.Errorf("drift: ensure %s: %w, and so is what APIReader read: set it to a reader of the API server (a manager's GetAPIReader())", describe(desired), diet.ErrPartial))
	}
	return whole, nil
}

func emptyLike(obj client.Object, scheme *runtime.Scheme) (client.Object, error) {
	if _, ok := obj.(*unstructured.Unstructured); ok {
		gvk, err := apiutil.GVKForObject(obj, scheme)
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		return u, nil
	}
	t := reflect.TypeOf(obj)
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("drift: %T is not a pointer to a struct", obj)
	}
	return reflect.New(t.Elem()).Interface().(client.Object), nil
}

// copyLive returns a copy of live (the cache's own object) for a caller,
// its kind set as a cached read with a copy sets it (the cache's own
// object carries none).
func (w *Writer) copyLive(live client.Object) client.Object {
	out := live.DeepCopyObject().(client.Object)
	if out.GetObjectKind().GroupVersionKind().Empty() {
		if gvk, err := apiutil.GVKForObject(out, w.client.Scheme()); err == nil {
			out.GetObjectKind().SetGroupVersionKind(gvk)
		}
	}
	return out
}

// copyInto makes dst hold src's content; both have the same type.
func copyInto(dst, src client.Object) {
	if du, ok := dst.(*unstructured.Unstructured); ok {
		du.Object = src.(*unstructured.Unstructured).Object
		return
	}
	reflect.ValueOf(dst).Elem().Set(reflect.ValueOf(src).Elem())
}

func create(ctx context.Context, c client.Client, fieldOwner string, cfg *config, desired client.Object) (Outcome, error) {
	obj := desired.DeepCopyObject().(client.Object)
	clearStatus(obj)
	if cfg.owner != nil {
		if err := setController(cfg.owner, obj, c.Scheme()); err != nil {
			return Outcome{}, err
		}
	}
	if err := c.Create(ctx, obj, client.FieldOwner(fieldOwner)); err != nil {
		return Outcome{}, err
	}
	copyInto(desired, obj)
	return Outcome{Operation: OperationCreated, Drift: compare.Comparison{Equal: true}}, nil
}

// clearStatus drops status from an object about to be created: status is
// written through the status subresource only.
func clearStatus(obj client.Object) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		delete(u.Object, "status")
		return
	}
	v := reflect.ValueOf(obj).Elem()
	t := v.Type()
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name == "status" {
			v.Field(i).SetZero()
			return
		}
	}
}

// patchDrift compares want with live and patches the drift. On return
// target holds the live object after any write.
func (w *Writer) patchDrift(ctx context.Context, cfg *config, target, want, live client.Object) (Outcome, error) {
	c := w.client
	gvk, err := apiutil.GVKForObject(live, c.Scheme())
	if err != nil {
		return Outcome{}, err
	}
	_, isU := live.(runtime.Unstructured)
	smp := !isU && builtIn(gvk)
	take := planTakeover(w.fieldOwner, cfg, live, gvk.GroupVersion().String(), false)
	var extra []compare.Option
	if smp {
		extra = append(extra, compare.StrategicMerge())
	}
	if take != nil && take.whole {
		extra = append(extra, compare.Replaces(take.managers...))
	}
	opts := w.compareOptions(cfg, extra...)
	cmpn, err := compare.Diff(want, live, opts...)
	if err != nil {
		return Outcome{}, err
	}
	if cmpn.Equal {
		copyInto(target, w.copyLive(live))
		return Outcome{Operation: OperationUnchanged, Drift: cmpn}, nil
	}
	if err := w.checkHotLoop(ctx, live, cmpn); err != nil {
		copyInto(target, w.copyLive(live))
		return Outcome{Operation: OperationUnchanged, Drift: cmpn}, err
	}
	if err := w.refuseForeign(cfg, want, live); err != nil {
		return Outcome{Operation: OperationUnchanged, Drift: cmpn}, err
	}
	merged := live.DeepCopyObject().(client.Object)
	if err := compare.Overlay(want.DeepCopyObject(), merged, opts...); err != nil {
		return Outcome{}, err
	}
	// The takeover travels in the same patch: the whole managedFields list,
	// which only the lock keeps from dropping a concurrent writer's entry.
	lock := false
	if take != nil {
		entries, changed, err := take.managedFields(live, want, opts)
		if err != nil {
			return Outcome{}, err
		}
		if changed {
			merged.SetManagedFields(entries)
			lock = true
		}
	}
	patch, err := patchFor(cfg, smp, live, merged, lock)
	if err != nil {
		return Outcome{}, err
	}
	if err := c.Patch(ctx, merged, patch, client.FieldOwner(w.fieldOwner)); err != nil {
		return Outcome{}, err
	}
	copyInto(target, merged)
	return Outcome{Operation: OperationUpdated, Drift: cmpn}, nil
}

// patchFor chooses the patch from live to merged: strategic merge for
// built-in typed objects (smp), whose Go types carry the merge keys,
// and JSON merge otherwise (custom resources do not accept strategic merge patches). A JSON
// merge patch that carries a list replaces the whole list, elements another
// writer added since live was read included, so such a patch always carries
// the optimistic lock: it fails with a Conflict instead of dropping them.
// lock asks for the lock too (merged's managedFields changed: a list that
// both kinds of patch replace whole).
func patchFor(cfg *config, smp bool, live, merged client.Object, lock bool) (client.Patch, error) {
	var opts []client.MergeFromOption
	lock = lock || cfg.optimisticLock
	if lock {
		opts = append(opts, client.MergeFromWithOptimisticLock{})
	}
	if smp {
		return client.StrategicMergeFrom(live, opts...), nil
	}
	patch := client.MergeFromWithOptions(live, opts...)
	if !lock {
		data, err := patch.Data(merged)
		if err != nil {
			return nil, err
		}
		if carriesList(data) {
			patch = client.MergeFromWithOptions(live, client.MergeFromWithOptimisticLock{})
		}
	}
	return patch, nil
}

// carriesList reports whether a JSON document holds an array anywhere.
func carriesList(data []byte) bool {
	var doc any
	if json.Unmarshal(data, &doc) != nil {
		return true // cannot tell: lock
	}
	var walk func(any) bool
	walk = func(v any) bool {
		switch v := v.(type) {
		case []any:
			return true
		case map[string]any:
			for _, e := range v {
				if walk(e) {
					return true
				}
			}
		}
		return false
	}
	return walk(doc)
}

func builtIn(gvk schema.GroupVersionKind) bool {
	return clientgoscheme.Scheme.Recognizes(gvk)
}

// setController sets owner as the controller of obj, with the typed errors
// of package ownership (a cross-namespace or cluster-scoped mismatch is
// permanent; another controller is matched by *ownership.AlreadyOwnedError).
func setController(owner, obj client.Object, scheme *runtime.Scheme) error {
	if err := ownership.SetController(owner, obj, scheme); err != nil {
		return fmt.Errorf("drift: set controller of %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}
