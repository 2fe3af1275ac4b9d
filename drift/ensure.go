package drift

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

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

// Outcome is what [Ensure] and its variants did and why.
type Outcome struct {
	// Operation is what was done.
	Operation Operation
	// Drift is the comparison of desired with the live object that led to
	// the operation: its Paths and Report say what was (or, when a hot loop
	// stopped the write, would have been) patched. Equal for created and
	// unchanged objects.
	Drift Comparison
}

// Ensure makes the live object have every field desired sets, writing only
// when something drifted and then only the drifted fields.
//
// It gets the live object by desired's namespace and name. When there is
// none, it creates desired (with a controller reference when given an
// [Owner]). Otherwise it compares with [Diff] rules: no drift means no write
// at all, so fields the server defaulted and fields other writers own are
// never touched; drift means one patch carrying only the drifted desired
// fields, and removing the list elements and map entries Ensure wrote
// before that desired no longer sets (a strategic merge patch for built-in
// types, a JSON merge patch for custom resources and unstructured objects;
// see [OptimisticLock]). Status is
// never compared or written. Every write carries the field owner
// [WithFieldOwner] names; without one Ensure sends nothing and returns
// [ErrNoFieldOwner]. With [Replaces], the patch also takes over the fields
// of the managers the operator replaces.
//
// On success desired holds the object as the server returned it, as after
// client.Create. With [DetectHotLoops], a drift that keeps coming back is
// not patched and Ensure returns a [*HotLoopError] with OperationUnchanged.
func Ensure(ctx context.Context, c client.Client, desired client.Object, opts ...Option) (out Outcome, err error) {
	defer func() { observeEnsure(c, desired, out, err) }()
	cfg := newConfig(opts)
	if err := cfg.check("ensure", desired); err != nil {
		return Outcome{}, err
	}
	live, err := getLive(ctx, c, desired)
	if apierrors.IsNotFound(err) {
		return create(ctx, c, cfg, desired)
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
	return patchDrift(ctx, c, cfg, desired, want, live)
}

// EnsureMutate is [Ensure] for code migrating from
// controllerutil.CreateOrUpdate: obj needs only its namespace and name;
// mutate sets the fields the caller wants, on the live object when there is
// one. mutate must not change the name or namespace.
//
// Unlike CreateOrUpdate it does not write when mutate changed nothing the
// live object lacks (defaulted fields that mutate overwrote with their zero
// value count as unchanged), and when it writes, it patches only the
// drifted fields. A field mutate sets to its zero value is not drift: to
// clear a field, use a pointer or [Own]. Like Ensure it requires
// [WithFieldOwner] and honours [Replaces].
func EnsureMutate(ctx context.Context, c client.Client, obj client.Object, mutate func() error, opts ...Option) (out Outcome, err error) {
	defer func() { observeEnsure(c, obj, out, err) }()
	cfg := newConfig(opts)
	if err := cfg.check("ensure", obj); err != nil {
		return Outcome{}, err
	}
	key := client.ObjectKeyFromObject(obj)
	live, err := getLive(ctx, c, obj)
	if apierrors.IsNotFound(err) {
		if err := callMutate(mutate, key, obj); err != nil {
			return Outcome{}, err
		}
		return create(ctx, c, cfg, obj)
	}
	if err != nil {
		return Outcome{}, err
	}
	copyInto(obj, live.DeepCopyObject().(client.Object))
	if err := callMutate(mutate, key, obj); err != nil {
		return Outcome{}, err
	}
	want := obj
	if cfg.owner != nil {
		want = obj.DeepCopyObject().(client.Object)
		if err := setController(cfg.owner, want, c.Scheme()); err != nil {
			return Outcome{}, err
		}
	}
	return patchDrift(ctx, c, cfg, obj, want, live)
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

// getLive reads the live version of desired into a fresh object of its type.
func getLive(ctx context.Context, c client.Client, desired client.Object) (client.Object, error) {
	if desired.GetName() == "" {
		return nil, fmt.Errorf("drift: ensure %T: desired has no name", desired)
	}
	live, err := emptyLike(desired, c.Scheme())
	if err != nil {
		return nil, err
	}
	return live, c.Get(ctx, client.ObjectKeyFromObject(desired), live)
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

// copyInto makes dst hold src's content; both have the same type.
func copyInto(dst, src client.Object) {
	if du, ok := dst.(*unstructured.Unstructured); ok {
		du.Object = src.(*unstructured.Unstructured).Object
		return
	}
	reflect.ValueOf(dst).Elem().Set(reflect.ValueOf(src).Elem())
}

func create(ctx context.Context, c client.Client, cfg *config, desired client.Object) (Outcome, error) {
	obj := desired.DeepCopyObject().(client.Object)
	clearStatus(obj)
	if cfg.owner != nil {
		if err := setController(cfg.owner, obj, c.Scheme()); err != nil {
			return Outcome{}, err
		}
	}
	if err := c.Create(ctx, obj, writeOpts[client.CreateOption](cfg)...); err != nil {
		return Outcome{}, err
	}
	copyInto(desired, obj)
	return Outcome{Operation: OperationCreated, Drift: Comparison{Equal: true}}, nil
}

// writeOpts returns the field owner option as the option type a write call
// takes.
func writeOpts[T any](cfg *config) []T {
	return []T{any(client.FieldOwner(cfg.diff.fieldOwner)).(T)}
}

// clearStatus drops status from an object about to be created: status is
// written through the status subresource only.
func clearStatus(obj client.Object) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		delete(u.Object, "status")
		return
	}
	v := reflect.ValueOf(obj).Elem()
	if i, ok := infoFor(v.Type()).byName["status"]; ok {
		f := v.Field(infoFor(v.Type()).fields[i].index)
		f.Set(reflect.Zero(f.Type()))
	}
}

// patchDrift compares want with live and patches the drift. On return
// target holds the live object after any write.
func patchDrift(ctx context.Context, c client.Client, cfg *config, target, want, live client.Object) (Outcome, error) {
	gvk, err := apiutil.GVKForObject(live, c.Scheme())
	if err != nil {
		return Outcome{}, err
	}
	_, isU := live.(runtime.Unstructured)
	cfg.diff.apiVersion, cfg.diff.smp = gvk.GroupVersion().String(), !isU && builtIn(gvk)
	if isU {
		cfg.diff.kindType = c.Scheme().AllKnownTypes()[gvk]
	}
	take := planTakeover(cfg, live, cfg.diff.apiVersion, false)
	cmpn, err := diff(&cfg.diff, want, live)
	if err != nil {
		return Outcome{}, err
	}
	if cmpn.Equal {
		copyInto(target, live)
		return Outcome{Operation: OperationUnchanged, Drift: cmpn}, nil
	}
	if err := checkHotLoop(ctx, c, cfg, live, cmpn); err != nil {
		copyInto(target, live)
		return Outcome{Operation: OperationUnchanged, Drift: cmpn}, err
	}
	merged := live.DeepCopyObject().(client.Object)
	if err := overlay(&cfg.diff, want, merged); err != nil {
		return Outcome{}, err
	}
	// The takeover travels in the same patch: the whole managedFields list,
	// which only the lock keeps from dropping a concurrent writer's entry.
	lock := false
	if take != nil {
		entries, changed, err := take.managedFields(live, want)
		if err != nil {
			return Outcome{}, err
		}
		if changed {
			merged.SetManagedFields(entries)
			lock = true
		}
	}
	patch, err := patchFor(cfg, live, merged, lock)
	if err != nil {
		return Outcome{}, err
	}
	if err := c.Patch(ctx, merged, patch, writeOpts[client.PatchOption](cfg)...); err != nil {
		return Outcome{}, err
	}
	copyInto(target, merged)
	return Outcome{Operation: OperationUpdated, Drift: cmpn}, nil
}

// overlay writes desired's drifted fields into merged, a copy of the live
// object, so a patch from live to merged carries exactly the drift.
func overlay(cfg *diffConfig, desired, merged client.Object) error {
	p, err := operands(desired.DeepCopyObject(), merged)
	if err != nil {
		return err
	}
	p.owners(cfg, merged)
	w := newWalker(cfg, &p, true, true, nil)
	w.root(&p)
	return nil
}

// patchFor chooses the patch from live to merged: strategic merge for
// built-in typed objects (cfg.diff.smp), whose Go types carry the merge keys,
// and JSON merge otherwise (custom resources do not accept strategic merge patches). A JSON
// merge patch that carries a list replaces the whole list, elements another
// writer added since live was read included, so such a patch always carries
// the optimistic lock: it fails with a Conflict instead of dropping them.
// lock asks for the lock too (merged's managedFields changed: a list that
// both kinds of patch replace whole).
func patchFor(cfg *config, live, merged client.Object, lock bool) (client.Patch, error) {
	var opts []client.MergeFromOption
	lock = lock || cfg.optimisticLock
	if lock {
		opts = append(opts, client.MergeFromWithOptimisticLock{})
	}
	if cfg.diff.smp {
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
