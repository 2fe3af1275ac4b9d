package track

import (
	"cmp"
	"fmt"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/reconcilekit/reconcilekit/errors"
)

// ErrInvalidTracker is matched (errors.Is) by the error of a [Tracker] that
// cannot work: no reader, no scheme, or a type given to [Tracker.Enqueue]
// that the scheme does not know. [Tracker.Validate] returns it, and so does
// every [Reads.Get] of such a Tracker, classed permanent, before it reads
// anything.
var ErrInvalidTracker = errors.New("track: invalid Tracker")

// Reference names an object a reconciler reads: its group, kind, namespace
// (empty for a cluster-scoped object) and name. The version does not
// matter: a change seen through any version is a change.
type Reference struct {
	Group, Kind, Namespace, Name string
}

// GroupKind returns the group and kind of the referenced object.
func (r Reference) GroupKind() schema.GroupKind {
	return schema.GroupKind{Group: r.Group, Kind: r.Kind}
}

// String names the object as an error message does: `Secret "team-a/creds"`,
// `Certificate.cert-manager.io "team-a/web"`.
func (r Reference) String() string {
	key := r.Name
	if r.Namespace != "" {
		key = r.Namespace + "/" + key
	}
	return fmt.Sprintf("%s %q", r.GroupKind().String(), key)
}

// Tracker records which objects each reconcile read, and wakes the
// reconciled objects (the referrers) when an object they read changes,
// appears or goes away. Build it with [New]; one Tracker per controller,
// since it enqueues the names of that controller's objects.
//
// A reconcile reads through a [Reads] that [Tracker.For] opens; the watch
// of each referenced kind gets the handler [Tracker.Enqueue] returns. The
// Tracker remembers, per referrer, exactly what its last reconcile read:
// what a reconcile stops reading is forgotten when it ends ([Reads.Done]),
// and so is everything a deleted referrer read ([Tracker.Forget], which a
// reconcile.Loop calls for you). Memory is proportional to the references
// held, nothing more.
//
// For the kinds it watches, a Tracker keeps a copy of each object it read
// while some referrer reads it, and serves it again until the watch reports
// a change: a reconcile that reads what did not change sends no request.
// So the watch needs no data: watch a referenced kind metadata-only
// (builder.WatchesMetadata), read through the API reader, and the process
// holds the data of the objects its reconciles read, not of every object of
// the kind (the package documentation measures both).
//
// A Tracker is safe for concurrent use.
type Tracker struct {
	reader client.Reader
	scheme *runtime.Scheme

	mu sync.Mutex
	// refs holds, for each referenced object, who reads it and its copy.
	refs map[Reference]*referenced
	// referrers holds, for each referrer, what it reads: a slice, since a
	// referrer reads a few objects (a map of one costs ten times as much).
	referrers map[types.NamespacedName][]Reference
	// watched are the kinds a handler of Enqueue watches.
	watched map[schema.GroupKind]bool
	// setup is the first error of Enqueue.
	setup error
}

// referenced is what the Tracker holds of one referenced object.
type referenced struct {
	referrers map[types.NamespacedName]struct{}
	// copy is the object as last read, while its kind is watched and no
	// event has come since; nil otherwise.
	copy client.Object
	// events counts the watch events of the object, so that a read that
	// an event overtook is not kept as a copy.
	events uint64
}

// New returns a Tracker that reads referenced objects with reader and names
// their kinds with scheme. The reader is usually the manager's API reader
// (mgr.GetAPIReader()) for kinds watched metadata-only, so that no informer
// caches every object of the kind; the manager's client suits a kind its
// cache holds anyway. The scheme is the manager's (mgr.GetScheme()).
func New(reader client.Reader, scheme *runtime.Scheme) *Tracker {
	return &Tracker{reader: reader, scheme: scheme}
}

// Validate reports what keeps the Tracker from working: no reader, no
// scheme, or a type [Tracker.Enqueue] was given that the scheme does not
// know. The error wraps [ErrInvalidTracker] and is classed permanent. Every
// [Reads.Get] validates first; call Validate after setting up the
// controller to fail early.
func (t *Tracker) Validate() error {
	switch {
	case t == nil:
		return errors.Permanent(fmt.Errorf("%w: nil", ErrInvalidTracker))
	case t.reader == nil:
		return errors.Permanent(fmt.Errorf("%w: no reader: build it with track.New(mgr.GetAPIReader(), mgr.GetScheme())", ErrInvalidTracker))
	case t.scheme == nil:
		return errors.Permanent(fmt.Errorf("%w: no scheme: build it with track.New(mgr.GetAPIReader(), mgr.GetScheme())", ErrInvalidTracker))
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.setup
}

// For opens the record of one reconcile of the referrer (the reconciled
// object's namespace and name): what it reads through the returned [Reads]
// becomes what the referrer reads. Call it at the start of the reconcile and
// [Reads.Done] at its end:
//
//	reads := r.Refs.For(req.NamespacedName)
//	defer reads.Done()
//
// A reconcile that reads nothing (its object is gone) leaves the referrer
// reading nothing: the Tracker forgets it.
func (t *Tracker) For(referrer types.NamespacedName) *Reads {
	return &Reads{t: t, referrer: referrer}
}

// Forget drops everything the referrer reads: a deleted object wakes on
// nothing. A reconcile.Loop calls it when its object is gone; a reconciler
// of its own that calls [Tracker.For] at the start of every reconcile needs
// no Forget (the reconcile of a gone object reads nothing). A nil Tracker
// forgets nothing.
func (t *Tracker) Forget(referrer types.NamespacedName) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, ref := range t.referrers[referrer] {
		t.drop(ref, referrer)
	}
	delete(t.referrers, referrer)
}

// Len returns how many objects the Tracker holds as read by some referrer
// (each with at most one copy): what it remembers, which the referrers'
// reconciles bound and their deletion forgets (see [Tracker.Forget]).
func (t *Tracker) Len() int {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.refs)
}

// Referrers returns, sorted, the referrers that read obj: its namespace and
// name, and its kind (from the scheme, or from obj's apiVersion and kind
// when set, as on a metadata-only or unstructured object).
func (t *Tracker) Referrers(obj client.Object) []types.NamespacedName {
	ref, err := t.referenceOf(obj, schema.GroupKind{})
	if err != nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.refs[ref]
	if r == nil {
		return nil
	}
	out := make([]types.NamespacedName, 0, len(r.referrers))
	for n := range r.referrers {
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b types.NamespacedName) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// referenceOf returns obj's reference: its kind from its apiVersion and kind
// when set, else from the scheme, else fallback.
func (t *Tracker) referenceOf(obj client.Object, fallback schema.GroupKind) (Reference, error) {
	return t.referenceAt(obj, client.ObjectKeyFromObject(obj), fallback)
}

// referenceAt returns the reference of the object of obj's kind at key.
func (t *Tracker) referenceAt(obj client.Object, key client.ObjectKey, fallback schema.GroupKind) (Reference, error) {
	gk := obj.GetObjectKind().GroupVersionKind().GroupKind()
	if gk.Kind == "" && t.scheme != nil {
		gvk, err := apiutil.GVKForObject(obj, t.scheme)
		switch {
		case err == nil:
			gk = gvk.GroupKind()
		case fallback.Kind == "":
			return Reference{}, err
		}
	}
	if gk.Kind == "" {
		gk = fallback
	}
	return Reference{Group: gk.Group, Kind: gk.Kind, Namespace: key.Namespace, Name: key.Name}, nil
}

// add records that referrer reads ref, and returns what is held of ref.
// The caller holds t.mu.
func (t *Tracker) add(ref Reference, referrer types.NamespacedName) *referenced {
	if t.refs == nil {
		t.refs = map[Reference]*referenced{}
		t.referrers = map[types.NamespacedName][]Reference{}
		trackers.Add(t)
	}
	r := t.refs[ref]
	if r == nil {
		r = &referenced{referrers: map[types.NamespacedName]struct{}{}}
		t.refs[ref] = r
	}
	r.referrers[referrer] = struct{}{}
	if mine := t.referrers[referrer]; !slices.Contains(mine, ref) {
		t.referrers[referrer] = append(mine, ref)
	}
	return r
}

// drop records that referrer no longer reads ref, and forgets ref (its
// copy included) when nobody does. The caller holds t.mu and removes ref
// from t.referrers[referrer] itself.
func (t *Tracker) drop(ref Reference, referrer types.NamespacedName) {
	r := t.refs[ref]
	if r == nil {
		return
	}
	delete(r.referrers, referrer)
	if len(r.referrers) == 0 {
		delete(t.refs, ref)
	}
}
