package track_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/track"
)

// fakeWorld is a fake API server holding objs, whose Gets are counted.
type fakeWorld struct {
	c    client.Client
	gets int
}

func newFakeWorld(objs ...client.Object) *fakeWorld {
	w := &fakeWorld{}
	w.c = interceptor.NewClient(fake.NewClientBuilder().WithObjects(objs...).Build(), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			w.gets++
			return c.Get(ctx, key, obj, opts...)
		},
	})
	return w
}

func secret(ns, name, value string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Data:       map[string][]byte{"v": []byte(value)},
	}
}

// queue is a workqueue that records what a handler adds.
type queue struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request]
	added []types.NamespacedName
}

func (q *queue) Add(r reconcile.Request) { q.added = append(q.added, r.NamespacedName) }

func (q *queue) take() []types.NamespacedName {
	out := q.added
	q.added = nil
	return out
}

func key(ns, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: ns, Name: name}
}

// read runs one reconcile of referrer that reads the named Secrets.
func read(t *testing.T, tr *track.Tracker, referrer types.NamespacedName, secrets ...string) []error {
	t.Helper()
	reads := tr.For(referrer)
	defer reads.Done()
	var errs []error
	for _, name := range secrets {
		var s corev1.Secret
		errs = append(errs, reads.Get(t.Context(), key("refs", name), &s))
	}
	return errs
}

func TestAChangeEnqueuesExactlyWhatReadIt(t *testing.T) {
	w := newFakeWorld(secret("refs", "a", "1"), secret("refs", "b", "1"))
	tr := track.New(w.c, clientgoscheme.Scheme)
	h := tr.Enqueue(&corev1.Secret{})
	read(t, tr, key("x", "one"), "a")
	read(t, tr, key("x", "two"), "a", "b")
	read(t, tr, key("y", "three"), "b")

	q := &queue{}
	changed := func(name, rv string) []types.NamespacedName {
		t.Helper()
		old, new := secret("refs", name, "1"), secret("refs", name, "2")
		old.ResourceVersion, new.ResourceVersion = "1", rv
		h.Update(t.Context(), event.UpdateEvent{ObjectOld: old, ObjectNew: new}, q)
		got := q.take()
		return sortKeys(got)
	}
	if diff := cmp.Diff([]types.NamespacedName{key("x", "one"), key("x", "two")}, changed("a", "2")); diff != "" {
		t.Errorf("a changed: enqueued (-want +got):\n%s", diff)
	}
	if got := changed("a", "1"); len(got) != 0 {
		t.Errorf("a resync (same resourceVersion) enqueued %v; want nothing", got)
	}
	h.Create(t.Context(), event.CreateEvent{Object: secret("refs", "nobody-reads-it", "")}, q)
	if got := q.take(); len(got) != 0 {
		t.Errorf("an object nobody reads enqueued %v", got)
	}
	// two stops reading a: a's change no longer wakes it.
	read(t, tr, key("x", "two"), "b")
	if diff := cmp.Diff([]types.NamespacedName{key("x", "one")}, changed("a", "3")); diff != "" {
		t.Errorf("a changed after two stopped reading it: enqueued (-want +got):\n%s", diff)
	}
	// three is deleted: forgotten.
	tr.Forget(key("y", "three"))
	h.Delete(t.Context(), event.DeleteEvent{Object: secret("refs", "b", "")}, q)
	if diff := cmp.Diff([]types.NamespacedName{key("x", "two")}, sortKeys(q.take())); diff != "" {
		t.Errorf("b deleted: enqueued (-want +got):\n%s", diff)
	}
	// A metadata-only event names its kind itself.
	meta := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "refs", Name: "b"}}
	h.Generic(t.Context(), event.GenericEvent{Object: meta}, q)
	if diff := cmp.Diff([]types.NamespacedName{key("x", "two")}, q.take()); diff != "" {
		t.Errorf("b's metadata event: enqueued (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]types.NamespacedName{key("x", "two")}, tr.Referrers(secret("refs", "b", ""))); diff != "" {
		t.Errorf("Referrers(b) (-want +got):\n%s", diff)
	}
}

func sortKeys(keys []types.NamespacedName) []types.NamespacedName {
	out := slices.Clone(keys)
	slices.SortFunc(out, func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) })
	return out
}

func TestAReadOfWhatDidNotChangeSendsNoRequest(t *testing.T) {
	w := newFakeWorld(secret("refs", "a", "1"))
	tr := track.New(w.c, clientgoscheme.Scheme)
	h := tr.Enqueue(&corev1.Secret{})
	for range 3 {
		read(t, tr, key("x", "one"), "a")
	}
	if w.gets != 1 {
		t.Errorf("3 reconciles of an unchanged Secret sent %d GETs; want 1", w.gets)
	}
	// A change: the next read goes to the server, and sees the new data.
	s := secret("refs", "a", "2")
	if err := w.c.Update(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	h.Update(t.Context(), event.UpdateEvent{ObjectOld: secret("refs", "a", ""), ObjectNew: s}, &queue{})
	reads := tr.For(key("x", "one"))
	var got corev1.Secret
	if err := reads.Get(t.Context(), key("refs", "a"), &got); err != nil {
		t.Fatal(err)
	}
	reads.Done()
	if w.gets != 2 || string(got.Data["v"]) != "2" {
		t.Errorf("after a change: %d GETs, v=%q; want 2 and the new data", w.gets, got.Data["v"])
	}
	// A copy is served to the same type only; another type reads through.
	reads = tr.For(key("x", "one"))
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("Secret")
	if err := reads.Get(t.Context(), key("refs", "a"), u); err != nil {
		t.Fatal(err)
	}
	reads.Done()
	if w.gets != 3 {
		t.Errorf("an unstructured read of a copy kept typed: %d GETs; want 3", w.gets)
	}
	// An unwatched kind is never served from a copy: nothing would tell it
	// changed.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "refs", Name: "c"}}
	if err := w.c.Create(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	before := w.gets
	for range 2 {
		reads := tr.For(key("x", "one"))
		if err := reads.Get(t.Context(), key("refs", "c"), &corev1.ConfigMap{}); err != nil {
			t.Fatal(err)
		}
		reads.Done()
	}
	if w.gets-before != 2 {
		t.Errorf("two reads of an unwatched ConfigMap sent %d GETs; want 2", w.gets-before)
	}
}

// TestAReadAnEventOvertookIsNotKept: an event that arrives while a read is
// on its way may carry a newer object than the read returns; the read's
// result must not be served again as current.
func TestAReadAnEventOvertookIsNotKept(t *testing.T) {
	var tr *track.Tracker
	var h handler.EventHandler
	gets := 0
	c := interceptor.NewClient(fake.NewClientBuilder().WithObjects(secret("refs", "a", "1")).Build(), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			gets++
			err := c.Get(ctx, key, obj, opts...)
			if gets == 1 { // the watch reports a change while the first read returns
				h.Update(ctx, event.UpdateEvent{ObjectOld: secret("refs", "a", ""), ObjectNew: secret("refs", "a", "")}, &queue{})
			}
			return err
		},
	})
	tr = track.New(c, clientgoscheme.Scheme)
	h = tr.Enqueue(&corev1.Secret{})
	read(t, tr, key("x", "one"), "a")
	read(t, tr, key("x", "one"), "a")
	if gets != 2 {
		t.Errorf("%d GETs; want 2: the first read, overtaken by an event, was kept as current", gets)
	}
}

func TestAMissingReference(t *testing.T) {
	for _, tt := range []struct {
		name      string
		watched   bool
		wantClass errors.Class
	}{
		{name: "of a watched kind: permanent, its creation wakes the referrer", watched: true, wantClass: errors.ClassPermanent},
		{name: "of a kind nothing watches: transient, retried", wantClass: errors.ClassTransient},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tr := track.New(newFakeWorld().c, clientgoscheme.Scheme)
			if tt.watched {
				tr.Enqueue(&corev1.Secret{})
			}
			err := read(t, tr, key("x", "one"), "creds")[0]
			var missing *track.MissingError
			if !errors.As(err, &missing) || !apierrors.IsNotFound(err) {
				t.Fatalf("err = %v; want a *track.MissingError that is also NotFound", err)
			}
			if class, _ := errors.Classify(err); class != tt.wantClass {
				t.Errorf("class %s; want %s", class, tt.wantClass)
			}
			want := track.Reference{Kind: "Secret", Namespace: "refs", Name: "creds"}
			if missing.Reference != want || missing.Referrer != key("x", "one") {
				t.Errorf("missing %v read by %v; want %v read by x/one", missing.Reference, missing.Referrer, want)
			}
			if got, want := errors.Message(err), `Secret "refs/creds" not found`; got != want {
				t.Errorf("message %q; want %q", got, want)
			}
			if got := errors.Reason(err); got != track.ReasonReferenceNotFound {
				t.Errorf("reason %q; want %q", got, track.ReasonReferenceNotFound)
			}
			// Missing, it is still recorded: its creation wakes the referrer.
			if diff := cmp.Diff([]types.NamespacedName{key("x", "one")}, tr.Referrers(secret("refs", "creds", ""))); diff != "" {
				t.Errorf("referrers of the missing Secret (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTrackRecordsWithoutReading(t *testing.T) {
	w := newFakeWorld()
	tr := track.New(w.c, clientgoscheme.Scheme)
	h := tr.Enqueue(&corev1.Secret{})
	reads := tr.For(key("x", "one"))
	if err := reads.Track(secret("elsewhere", "in-the-way", "")); err != nil {
		t.Fatal(err)
	}
	reads.Done()
	q := &queue{}
	h.Delete(t.Context(), event.DeleteEvent{Object: secret("elsewhere", "in-the-way", "")}, q)
	if diff := cmp.Diff([]types.NamespacedName{key("x", "one")}, q.take()); diff != "" || w.gets != 0 {
		t.Errorf("%d GETs; deletion enqueued (-want +got):\n%s", w.gets, diff)
	}
}

func TestAnInvalidTrackerReadsNothing(t *testing.T) {
	unknown := runtime.NewScheme() // knows no Secret
	for _, tt := range []struct {
		name string
		tr   func() *track.Tracker
	}{
		{name: "no reader", tr: func() *track.Tracker { return track.New(nil, clientgoscheme.Scheme) }},
		{name: "no scheme", tr: func() *track.Tracker { return track.New(newFakeWorld().c, nil) }},
		{name: "a kind the scheme does not know", tr: func() *track.Tracker {
			tr := track.New(newFakeWorld().c, unknown)
			tr.Enqueue(&corev1.Secret{})
			return tr
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tr := tt.tr()
			err := tr.Validate()
			if !errors.Is(err, track.ErrInvalidTracker) {
				t.Fatalf("Validate() = %v; want ErrInvalidTracker", err)
			}
			if class, _ := errors.Classify(err); class != errors.ClassPermanent {
				t.Errorf("Validate's error is %s; want permanent", class)
			}
			if err := read(t, tr, key("x", "one"), "a")[0]; !errors.Is(err, track.ErrInvalidTracker) {
				t.Errorf("Get = %v; want ErrInvalidTracker", err)
			}
		})
	}
	if err := track.New(newFakeWorld().c, clientgoscheme.Scheme).Validate(); err != nil {
		t.Errorf("a Tracker built right: Validate() = %v", err)
	}
	var nilTracker *track.Tracker
	nilTracker.Forget(key("x", "one")) // a Loop without References
	if err := nilTracker.Validate(); !errors.Is(err, track.ErrInvalidTracker) {
		t.Errorf("nil Tracker: Validate() = %v", err)
	}
}

func TestGetRefusesANilObject(t *testing.T) {
	tr := track.New(newFakeWorld().c, clientgoscheme.Scheme)
	reads := tr.For(key("x", "one"))
	defer reads.Done()
	var s *corev1.Secret
	if err := reads.Get(t.Context(), key("refs", "a"), s); err == nil {
		t.Error("Get into a nil *Secret: no error")
	}
	if err := reads.Track(nil); err == nil {
		t.Error("Track(nil): no error")
	}
}
