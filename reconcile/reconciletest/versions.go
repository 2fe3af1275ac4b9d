package reconciletest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Versions records every version of some objects that the API server
// stores, as its watches deliver them, so that a test can check what each
// version said against what the others were at that moment: "the parent
// was never Ready while its child was not available" holds only if it
// holds of every version of the parent, each against the child as stored
// just before it, not of the last ones a test happens to read.
//
// Build it with [RecordVersions] before the objects change. Versions are
// ordered by resourceVersion: within a kind, as the API server defines it;
// across kinds, the order of the etcd that stores them all (every cluster
// that does not split its resources over several etcd clusters, envtest
// included).
type Versions struct {
	scheme *runtime.Scheme

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced at each new version
	versions []Version     // in resourceVersion order
	err      error         // why a watch missed versions
}

// Version is one version of an object as the API server stored it.
type Version struct {
	// Kind is the object's kind.
	Kind schema.GroupVersionKind
	// Object is the object as stored; for a deletion, as it last was, with
	// the deletion's resourceVersion.
	Object client.Object
	// Deleted says the version is the object's deletion.
	Deleted bool
}

// key is an object's kind, namespace and name.
type versionKey struct {
	kind schema.GroupKind
	name types.NamespacedName
}

// RecordVersions starts a watch of each list's kind through c, with opts
// (client.InNamespace(ns) for a test's namespace), and records every
// version the API server stores from then on, the objects that exist
// already included, until the test ends. A watch that ends is started
// again from the last version it delivered; one the API server refuses
// (its versions compacted away) makes [Versions.Err] report the versions
// missed.
//
// It fails the test if a watch cannot start.
func RecordVersions(t testing.TB, c client.WithWatch, lists []client.ObjectList, opts ...client.ListOption) *Versions {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	v := &Versions{scheme: c.Scheme(), changed: make(chan struct{})}
	var wg sync.WaitGroup
	for _, list := range lists {
		w, err := c.Watch(ctx, list, opts...)
		if err != nil {
			cancel()
			wg.Wait()
			t.Fatalf("reconciletest: watch %T: %v", list, err)
		}
		wg.Go(func() { v.follow(ctx, c, list, opts, w) })
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
	return v
}

// follow records the events of w, and of the watches that follow it when
// it ends, until ctx ends.
func (v *Versions) follow(ctx context.Context, c client.WithWatch, list client.ObjectList, opts []client.ListOption, w watch.Interface) {
	last := ""
	for {
		for ev := range w.ResultChan() {
			switch ev.Type {
			case watch.Bookmark:
				continue
			case watch.Error:
				v.fail(fmt.Errorf("watch of %T: %w", list, apierrors.FromObject(ev.Object)))
				continue
			}
			obj, ok := ev.Object.(client.Object)
			if !ok {
				continue
			}
			last = obj.GetResourceVersion()
			v.add(obj, ev.Type == watch.Deleted)
		}
		w.Stop()
		if ctx.Err() != nil {
			return
		}
		again := append(slices.Clone(opts), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: last}})
		var err error
		if w, err = c.Watch(ctx, list, again...); err != nil {
			if ctx.Err() == nil {
				v.fail(fmt.Errorf("watch of %T again from resourceVersion %q: %w", list, last, err))
			}
			return
		}
	}
}

func (v *Versions) fail(err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.err = errors.Join(v.err, err)
}

// add records a version in resourceVersion order.
func (v *Versions) add(obj client.Object, deleted bool) {
	gvk, err := apiutil.GVKForObject(obj, v.scheme)
	if err != nil {
		v.fail(fmt.Errorf("the kind of %T: %w", obj, err))
		return
	}
	ver := Version{Kind: gvk, Object: obj, Deleted: deleted}
	v.mu.Lock()
	defer v.mu.Unlock()
	i, err := v.position(obj.GetResourceVersion())
	if err != nil {
		v.err = errors.Join(v.err, err)
		return
	}
	v.versions = slices.Insert(v.versions, i, ver)
	close(v.changed)
	v.changed = make(chan struct{})
}

// position is where a version of rv goes: after every version at or
// before it (a watch delivers each kind in order; the kinds interleave).
func (v *Versions) position(rv string) (int, error) {
	for i := len(v.versions); i > 0; i-- {
		c, err := resourceversion.CompareResourceVersion(v.versions[i-1].Object.GetResourceVersion(), rv)
		if err != nil {
			return 0, fmt.Errorf("reconciletest: resourceVersions that do not compare: %w", err)
		}
		if c <= 0 {
			return i, nil
		}
	}
	return 0, nil
}

// Err reports what the recording missed: a watch the API server ended with
// an error, or that could not start again. Nil means every version stored
// since the recording started is recorded.
func (v *Versions) Err() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.err
}

// keyOf is the kind, namespace and name of obj.
func (v *Versions) keyOf(obj client.Object) (versionKey, error) {
	gvk, err := apiutil.GVKForObject(obj, v.scheme)
	if err != nil {
		return versionKey{}, fmt.Errorf("reconciletest: the kind of %T: %w", obj, err)
	}
	return versionKey{gvk.GroupKind(), client.ObjectKeyFromObject(obj)}, nil
}

func (v *Versions) matches(ver Version, k versionKey) bool {
	return ver.Kind.GroupKind() == k.kind && client.ObjectKeyFromObject(ver.Object) == k.name
}

// Of returns the recorded versions of the object of obj's kind, namespace
// and name, oldest first (a deletion included, then the versions of an
// object created again under the name).
func (v *Versions) Of(obj client.Object) ([]Version, error) {
	k, err := v.keyOf(obj)
	if err != nil {
		return nil, err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []Version
	for _, ver := range v.versions {
		if v.matches(ver, k) {
			out = append(out, ver)
		}
	}
	return out, nil
}

// Before returns the object of obj's kind, namespace and name as the API
// server stored it just before resourceVersion rv: its last recorded
// version older than rv, and false when there was none or it was a
// deletion.
func (v *Versions) Before(obj client.Object, rv string) (client.Object, bool, error) {
	k, err := v.keyOf(obj)
	if err != nil {
		return nil, false, err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	var last *Version
	for i := range v.versions {
		ver := &v.versions[i]
		c, err := resourceversion.CompareResourceVersion(ver.Object.GetResourceVersion(), rv)
		if err != nil {
			return nil, false, fmt.Errorf("reconciletest: %w", err)
		}
		if c >= 0 {
			break
		}
		if v.matches(*ver, k) {
			last = ver
		}
	}
	if last == nil || last.Deleted {
		return nil, false, nil
	}
	return last.Object, true, nil
}

// Wait waits until a version of obj at or after obj's own resourceVersion
// is recorded: after a test read obj (a wait for a condition), the watch
// may not have delivered that version yet. It returns ctx's error if it
// ends first, or what [Versions.Err] reports.
func (v *Versions) Wait(ctx context.Context, obj client.Object) error {
	k, err := v.keyOf(obj)
	if err != nil {
		return err
	}
	rv := obj.GetResourceVersion()
	for {
		v.mu.Lock()
		changed, recErr := v.changed, v.err
		for _, ver := range slices.Backward(v.versions) {
			if !v.matches(ver, k) {
				continue
			}
			if c, err := resourceversion.CompareResourceVersion(ver.Object.GetResourceVersion(), rv); err == nil && c >= 0 {
				v.mu.Unlock()
				return nil
			}
			break
		}
		v.mu.Unlock()
		if recErr != nil {
			return recErr
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("reconciletest: no version of %s %s at or after resourceVersion %s recorded: %w", k.kind.Kind, k.name, rv, context.Cause(ctx))
		case <-changed:
		}
	}
}

// ConditionTrueOnlyWhen checks every recorded version of parent (its kind,
// namespace and name) whose condition conditionType is True at the
// parent's generation (the condition's observedGeneration, or when it has
// none the status's, is the version's metadata.generation) against child
// as the API server stored it just before that version: child must have
// existed then, and ok must accept it (return nil). A condition written at
// an older generation and stored again with a new spec says nothing of the
// new generation, and is not checked.
//
// It returns how many versions of parent it checked, and an error naming
// each one that broke the rule, what the child was then and why ok refused
// it; an error of the recording ([Versions.Err]) too, since a version
// missed may be the one that broke it. A test asserts that checked is not
// zero, or it may pass having checked nothing:
//
//	versions := reconciletest.RecordVersions(t, c, []client.ObjectList{&v1.WebsiteList{}, &appsv1.DeploymentList{}}, client.InNamespace(ns))
//	... // create the Website, change it, wait until it is Ready; versions.Wait(ctx, site)
//	checked, err := versions.ConditionTrueOnlyWhen(site, "Ready", deployment, func(obj client.Object) error {
//		h, err := health.Of(obj) // Current: available at its own generation
//		if err == nil && h.Status != health.Current {
//			err = fmt.Errorf("%s", h)
//		}
//		return err
//	})
//	if err != nil || checked == 0 {
//		t.Errorf("checked %d versions: %v", checked, err)
//	}
func (v *Versions) ConditionTrueOnlyWhen(parent client.Object, conditionType string, child client.Object, ok func(child client.Object) error) (checked int, err error) {
	versions, err := v.Of(parent)
	if err != nil {
		return 0, err
	}
	childKey, err := v.keyOf(child)
	if err != nil {
		return 0, err
	}
	var errs []error
	for _, ver := range versions {
		if ver.Deleted || !trueAtGeneration(ver.Object, conditionType) {
			continue
		}
		checked++
		rv := ver.Object.GetResourceVersion()
		was, found, err := v.Before(child, rv)
		switch {
		case err != nil:
			errs = append(errs, err)
		case !found:
			errs = append(errs, fmt.Errorf("%s %s said %s=True at generation %d (resourceVersion %s) when its %s %s did not exist",
				ver.Kind.Kind, client.ObjectKeyFromObject(ver.Object), conditionType, ver.Object.GetGeneration(), rv, childKey.kind.Kind, childKey.name))
		default:
			if reason := ok(was); reason != nil {
				errs = append(errs, fmt.Errorf("%s %s said %s=True at generation %d (resourceVersion %s) when its %s %s was at generation %d (resourceVersion %s): %w",
					ver.Kind.Kind, client.ObjectKeyFromObject(ver.Object), conditionType, ver.Object.GetGeneration(), rv,
					childKey.kind.Kind, childKey.name, was.GetGeneration(), was.GetResourceVersion(), reason))
			}
		}
	}
	if recErr := v.Err(); recErr != nil {
		errs = append(errs, fmt.Errorf("reconciletest: the recording missed versions: %w", recErr))
	}
	return checked, errors.Join(errs...)
}

// trueAtGeneration reports whether obj's status.conditions hold
// conditionType True, observed at obj's generation.
func trueAtGeneration(obj client.Object, conditionType string) bool {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return false
	}
	status, _ := u["status"].(map[string]any)
	list, _ := status["conditions"].([]any)
	for _, item := range list {
		c, _ := item.(map[string]any)
		if c["type"] != conditionType {
			continue
		}
		if c["status"] != string(metav1.ConditionTrue) {
			return false
		}
		observed, _ := c["observedGeneration"].(int64)
		if observed == 0 {
			observed, _ = status["observedGeneration"].(int64)
		}
		return observed == 0 || observed == obj.GetGeneration()
	}
	return false
}
