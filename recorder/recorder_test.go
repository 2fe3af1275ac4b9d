package recorder

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	crrecorder "sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/internal/metricstest"
)

// A Recorder is what client-go's and controller-runtime's recorder
// interfaces ask for, and a manager runnable that runs on every replica.
var (
	_ events.EventRecorder                   = (*Recorder)(nil)
	_ crrecorder.EventRecorder               = (*Recorder)(nil)
	_ interface{ NeedLeaderElection() bool } = (*Recorder)(nil)
)

// t0 is the fake clock's start.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// call is one write a Recorder sent.
type call struct {
	verb      string // "create" or "patch"
	namespace string
	name      string
	event     *eventsv1.Event // what was created (a copy)
	patch     string          // what was patched
}

// recording is a fake API server for events that records every write.
// fail, when set, decides the error of each write before the fake
// client sees it (n counts the writes from 0); nil lets the fake client
// answer.
type recording struct {
	mu    sync.Mutex
	calls []call
	fail  func(n int, c call) error
	// store is the fake client behind, which keeps the events.
	store client.WithWatch
}

func newScheme(t testing.TB) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// newRecording returns the recording and a client writing to it.
func newRecording(t testing.TB) (*recording, client.Client) {
	t.Helper()
	rec := &recording{store: fake.NewClientBuilder().WithScheme(newScheme(t)).Build()}
	return rec, interceptor.NewClient(rec.store, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			ev := obj.(*eventsv1.Event)
			return rec.do(call{verb: "create", namespace: ev.Namespace, name: ev.Name, event: ev.DeepCopy()},
				func() error { return c.Create(ctx, obj, opts...) })
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			data, err := patch.Data(obj)
			if err != nil {
				return err
			}
			if patch.Type() != types.StrategicMergePatchType {
				return fmt.Errorf("patch of type %s, want %s", patch.Type(), types.StrategicMergePatchType)
			}
			return rec.do(call{verb: "patch", namespace: obj.GetNamespace(), name: obj.GetName(), patch: string(data)},
				func() error { return c.Patch(ctx, obj, patch, opts...) })
		},
	})
}

// writes counts the writes of a client that keeps nothing.
type writes struct{ creates, patches atomic.Int64 }

// nullClient returns a client that accepts every write of an event and
// keeps nothing, and the count of its writes.
func nullClient(t testing.TB) (client.Client, *writes) {
	t.Helper()
	w := &writes{}
	return interceptor.NewClient(fake.NewClientBuilder().WithScheme(newScheme(t)).Build(), interceptor.Funcs{
		Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
			w.creates.Add(1)
			return nil
		},
		Patch: func(context.Context, client.WithWatch, client.Object, client.Patch, ...client.PatchOption) error {
			w.patches.Add(1)
			return nil
		},
	}), w
}

func (r *recording) do(c call, write func() error) error {
	r.mu.Lock()
	n := len(r.calls)
	r.calls = append(r.calls, c)
	fail := r.fail
	r.mu.Unlock()
	if fail != nil {
		if err := fail(n, c); err != nil {
			return err
		}
	}
	return write()
}

// take returns the writes recorded since the last take.
func (r *recording) take() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.calls
	r.calls = nil
	return out
}

// verbs is the verbs and names of calls: "create a.1", "patch a.1 2".
func verbs(calls []call) []string {
	var out []string
	for _, c := range calls {
		s := c.verb + " " + c.namespace + "/" + c.name
		if c.event != nil && c.event.Series != nil {
			s += fmt.Sprintf(" series=%d", c.event.Series.Count)
		}
		if c.patch != "" {
			s += " " + c.patch
		}
		out = append(out, s)
	}
	return out
}

// newTest returns a Recorder on a recording, with a fake clock at t0 and
// retries 1 ms apart on the real clock.
func newTest(t *testing.T) (*Recorder, *recording, *clocktesting.FakeClock) {
	t.Helper()
	rec, c := newRecording(t)
	r := New(c, "test-controller")
	fc := clocktesting.NewFakeClock(t0)
	r.Clock = fc
	r.sleep = time.Millisecond
	return r, rec, fc
}

// drain sends the queued events one after the other, in this goroutine.
// Retries wait on r's clock: only a test with a real clock may retry.
func drain(ctx context.Context, r *Recorder) {
	for {
		select {
		case q := <-r.queue:
			r.sendInOrder(ctx, q)
		default:
			return
		}
	}
}

func pod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), ResourceVersion: "7"}}
}

// name is the event name client-go gives an event on obj at t.
func name(obj string, t time.Time) string { return fmt.Sprintf("%s.%x", obj, t.UnixNano()) }

// micro is the wire form of a MicroTime.
func micro(t time.Time) string { return t.UTC().Format(metav1.RFC3339Micro) }

func seriesPatchOf(count int, last time.Time) string {
	return fmt.Sprintf(`{"series":{"count":%d,"lastObservedTime":"%s"}}`, count, micro(last))
}

// TestRepeatsBecomeOneSeries: the first event is created, the second
// patches it into a series of 2, the next ones are only counted, and the
// count is written once the series has been idle for the finish window;
// then the key starts afresh.
func TestRepeatsBecomeOneSeries(t *testing.T) {
	ctx := t.Context()
	r, rec, fc := newTest(t)
	p := pod("web")
	var times []time.Time
	for i := range 4 {
		times = append(times, fc.Now())
		r.Eventf(p, nil, corev1.EventTypeNormal, "Synced", "Sync", "synced %d", i)
		drain(ctx, r)
		fc.Step(time.Second)
	}
	first := "ns/" + name("web", times[0])
	want := []string{
		"create " + first,
		"patch " + first + " " + seriesPatchOf(2, times[1]),
	}
	calls := rec.take()
	if diff := cmp.Diff(want, verbs(calls)); diff != "" {
		t.Fatalf("writes of four repeats (-want +got):\n%s", diff)
	}
	// The patch is the one client-go computes for the same event.
	ev := calls[0].event.DeepCopy()
	ev.Series = &eventsv1.EventSeries{Count: 2, LastObservedTime: metav1.MicroTime{Time: times[1]}}
	if got, want := calls[1].patch, clientGoPatch(t, ev); got != want {
		t.Errorf("series patch %s, client-go's %s", got, want)
	}

	fc.Step(r.finish - 2*time.Second) // the last repeat is 1 s short of the window
	r.finishSeries(ctx)
	if got := rec.take(); len(got) != 0 {
		t.Fatalf("a series idle for less than the window was written: %v", verbs(got))
	}
	fc.Step(2 * time.Second)
	r.finishSeries(ctx)
	if diff := cmp.Diff([]string{"patch " + first + " " + seriesPatchOf(4, times[3])}, verbs(rec.take())); diff != "" {
		t.Fatalf("the end of the series (-want +got):\n%s", diff)
	}
	var stored eventsv1.Event
	if err := rec.store.Get(ctx, client.ObjectKey{Namespace: "ns", Name: name("web", times[0])}, &stored); err != nil {
		t.Fatal(err)
	}
	if stored.Series == nil || stored.Series.Count != 4 || stored.Note != "synced 0" {
		t.Errorf("stored event: series %+v, note %q; want count 4 and the first note", stored.Series, stored.Note)
	}

	now := fc.Now()
	r.Eventf(p, nil, corev1.EventTypeNormal, "Synced", "Sync", "synced again")
	drain(ctx, r)
	if diff := cmp.Diff([]string{"create ns/" + name("web", now)}, verbs(rec.take())); diff != "" {
		t.Errorf("after the series ended (-want +got):\n%s", diff)
	}
}

// clientGoPatch is client-go's createPatchBytesForSeries of ev.
func clientGoPatch(t *testing.T, ev *eventsv1.Event) string {
	t.Helper()
	old := ev.DeepCopy()
	old.Series = nil
	oldData, err := json.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	newData, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldData, newData, eventsv1.Event{})
	if err != nil {
		t.Fatal(err)
	}
	return string(patch)
}

// TestDistinctKeysStayApart: events that differ in anything client-go's
// key holds are each created; those that differ in the note or the
// annotations only are one series.
func TestDistinctKeysStayApart(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "uid-web", ResourceVersion: "7"}}
	other := func(f func(*corev1.Pod)) *corev1.Pod {
		p := pod("web")
		f(p)
		return p
	}
	type ev struct {
		regarding, related  runtime.Object
		typ, reason, action string
		note                string
		annotations         map[string]string
	}
	base := ev{regarding: pod("web"), typ: corev1.EventTypeNormal, reason: "Synced", action: "Sync", note: "a"}
	for _, tc := range []struct {
		name   string
		second func(e ev) ev
		series bool
	}{
		{"same key", func(e ev) ev { return e }, true},
		{"another note", func(e ev) ev { e.note = "b"; return e }, true},
		{"annotations", func(e ev) ev { e.annotations = map[string]string{"a": "b"}; return e }, true},
		{"type", func(e ev) ev { e.typ = corev1.EventTypeWarning; return e }, false},
		{"reason", func(e ev) ev { e.reason = "Failed"; return e }, false},
		{"action", func(e ev) ev { e.action = "Delete"; return e }, false},
		{"regarding name", func(e ev) ev { e.regarding = pod("db"); return e }, false},
		{"regarding namespace", func(e ev) ev { e.regarding = other(func(p *corev1.Pod) { p.Namespace = "ns2" }); return e }, false},
		{"regarding kind", func(e ev) ev { e.regarding = cm; return e }, false},
		{"regarding uid", func(e ev) ev { e.regarding = other(func(p *corev1.Pod) { p.UID = "uid-2" }); return e }, false},
		{"regarding resourceVersion", func(e ev) ev { e.regarding = other(func(p *corev1.Pod) { p.ResourceVersion = "8" }); return e }, false},
		{"related added", func(e ev) ev { e.related = cm; return e }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			r, rec, fc := newTest(t)
			send := func(e ev) {
				r.AnnotatedEventf(e.regarding, e.related, e.annotations, e.typ, e.reason, e.action, "%s", e.note)
				drain(ctx, r)
				fc.Step(time.Millisecond)
			}
			send(base)
			send(tc.second(base))
			got := verbs(rec.take())
			if len(got) != 2 {
				t.Fatalf("two events sent %v, want two writes", got)
			}
			if isSeries := strings.HasPrefix(got[1], "patch "); isSeries != tc.series {
				t.Errorf("second event joined the first's series: %v, want %v (writes %v)", isSeries, tc.series, got)
			}
		})
	}
	t.Run("related changed", func(t *testing.T) {
		ctx := t.Context()
		r, rec, _ := newTest(t)
		r.Eventf(pod("web"), pod("a"), corev1.EventTypeNormal, "Synced", "Sync", "a")
		r.Eventf(pod("web"), pod("b"), corev1.EventTypeNormal, "Synced", "Sync", "a")
		drain(ctx, r)
		for _, c := range rec.take() {
			if c.verb != "create" {
				t.Errorf("an event related to another object joined a series: %v", verbs([]call{c}))
			}
		}
	})
}

// TestSameEventAsClientGo: the event a Recorder creates is the one
// client-go's broadcaster creates for the same call, but for its name and
// time, and the patch of a repeat is the same.
func TestSameEventAsClientGo(t *testing.T) {
	ctx := t.Context()
	s := newScheme(t)
	sink := &memorySink{keep: true}
	b := events.NewBroadcaster(sink)
	if err := b.StartRecordingToSinkWithContext(ctx); err != nil {
		t.Fatal(err)
	}
	defer b.Shutdown()
	theirs := b.NewRecorder(s, "test-controller")
	r, rec, fc := newTest(t)
	annotations := map[string]string{"reconcilekit.io/trace": "1"}
	for _, er := range []interface {
		AnnotatedEventf(regarding, related runtime.Object, annotations map[string]string, eventtype, reason, action, note string, args ...any)
	}{theirs.(events.AnnotatedEventRecorder), r} {
		for range 2 {
			er.AnnotatedEventf(pod("web"), pod("db"), annotations, corev1.EventTypeWarning, "Failed", "Sync", "failed %d times: %s", 3, "timeout")
		}
	}
	drain(ctx, r)
	fc.Step(time.Second)
	waitFor(t, func() bool { return sink.len() == 2 })

	mine := rec.take()
	if len(mine) != 2 || mine[0].verb != "create" || mine[1].verb != "patch" {
		t.Fatalf("writes %v, want a create and a patch", verbs(mine))
	}
	got, want := mine[0].event, sink.created()
	ignore := cmpopts.IgnoreFields(eventsv1.Event{}, "Name", "EventTime")
	if diff := cmp.Diff(want, got, ignore); diff != "" {
		t.Errorf("created event (-client-go +Recorder):\n%s", diff)
	}
	stamp := regexp.MustCompile(`"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z"`)
	theirPatch := stamp.ReplaceAllString(sink.patched(), `"T"`)
	if got := stamp.ReplaceAllString(mine[1].patch, `"T"`); got != theirPatch || !strings.Contains(got, `"count":2`) {
		t.Errorf("patch of the repeat: client-go %s, Recorder %s (times masked)", theirPatch, got)
	}
}

// memorySink is an events.EventSink that accepts everything; when keep is
// set, it keeps the first event created and the last patch.
type memorySink struct {
	keep  bool
	mu    sync.Mutex
	n     int
	first *eventsv1.Event
	patch string
}

func (s *memorySink) Create(_ context.Context, ev *eventsv1.Event) (*eventsv1.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	if s.keep && s.first == nil {
		s.first = ev.DeepCopy()
	}
	return ev, nil
}

func (s *memorySink) Update(_ context.Context, ev *eventsv1.Event) (*eventsv1.Event, error) {
	return ev, nil
}

func (s *memorySink) Patch(_ context.Context, ev *eventsv1.Event, data []byte) (*eventsv1.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	if s.keep {
		s.patch = string(data)
	}
	return ev, nil
}

func (s *memorySink) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

func (s *memorySink) created() *eventsv1.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.first
}

func (s *memorySink) patched() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.patch
}

// waitFor polls cond for up to 10 s.
func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestSingleEventsAreForgottenAfterTheWindow: a single event is kept for
// the finish window, so that a repeat within it patches it; after it, a
// repeat is a new event.
func TestSingleEventsAreForgottenAfterTheWindow(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after time.Duration
		verb  string
	}{
		{"within the window", finishTime - time.Second, "patch"},
		{"at the window", finishTime, "patch"}, // client-go: strictly before now-6m
		{"after the window", finishTime + time.Second, "create"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			r, rec, fc := newTest(t)
			r.Eventf(pod("web"), nil, corev1.EventTypeNormal, "Synced", "Sync", "a")
			drain(ctx, r)
			fc.Step(tc.after)
			r.finishSeries(ctx)
			r.Eventf(pod("web"), nil, corev1.EventTypeNormal, "Synced", "Sync", "a")
			drain(ctx, r)
			calls := rec.take()
			if len(calls) != 2 || calls[1].verb != tc.verb {
				t.Errorf("a repeat %v after: %v, want a %s", tc.after, verbs(calls), tc.verb)
			}
		})
	}
}

// TestPatchOfAGoneEventCreatesIt: when the patch of a repeat finds no
// event, the repeat is created as the series, under the first event's name
// and time, with its own note.
func TestPatchOfAGoneEventCreatesIt(t *testing.T) {
	ctx := t.Context()
	r, rec, fc := newTest(t)
	r.Eventf(pod("web"), nil, corev1.EventTypeNormal, "Synced", "Sync", "first")
	drain(ctx, r)
	first := rec.take()[0].event
	if err := rec.store.Delete(ctx, first.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	fc.Step(time.Second)
	r.Eventf(pod("web"), nil, corev1.EventTypeNormal, "Synced", "Sync", "second")
	drain(ctx, r)
	calls := rec.take()
	want := []string{
		"patch ns/" + first.Name + " " + seriesPatchOf(2, t0.Add(time.Second)),
		"create ns/" + first.Name + " series=2",
	}
	if diff := cmp.Diff(want, verbs(calls)); diff != "" {
		t.Fatalf("writes (-want +got):\n%s", diff)
	}
	got := calls[1].event
	if !got.EventTime.Equal(&first.EventTime) || got.Note != "second" {
		t.Errorf("created again with eventTime %v and note %q, want the first's time %v and the note at hand", got.EventTime, got.Note, first.EventTime)
	}
}

// TestRefreshWritesSeriesAgain: every refresh writes the count of each
// series; one whose event is gone is created again by its next
// occurrence (client-go creates it at once, from its copy).
func TestRefreshWritesSeriesAgain(t *testing.T) {
	ctx := t.Context()
	r, rec, fc := newTest(t)
	r.Eventf(pod("single"), nil, corev1.EventTypeNormal, "Synced", "Sync", "a")
	for range 3 {
		r.Eventf(pod("web"), nil, corev1.EventTypeNormal, "Synced", "Sync", "a")
		fc.Step(time.Second)
	}
	drain(ctx, r)
	webName := name("web", t0)
	rec.take()
	r.refreshSeries(ctx)
	if diff := cmp.Diff([]string{"patch ns/" + webName + " " + seriesPatchOf(3, t0.Add(2*time.Second))}, verbs(rec.take())); diff != "" {
		t.Fatalf("refresh (-want +got):\n%s", diff)
	}

	if err := rec.store.Delete(ctx, &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: webName}}); err != nil {
		t.Fatal(err)
	}
	r.refreshSeries(ctx)
	if got := verbs(rec.take()); len(got) != 1 || !strings.HasPrefix(got[0], "patch") {
		t.Fatalf("refresh of a gone event: %v, want one patch and no create", got)
	}
	r.refreshSeries(ctx)
	if got := verbs(rec.take()); len(got) != 0 {
		t.Fatalf("refresh of a series known to be gone: %v, want nothing", got)
	}
	r.Eventf(pod("web"), nil, corev1.EventTypeNormal, "Synced", "Sync", "a")
	drain(ctx, r)
	if got := verbs(rec.take()); len(got) != 2 || got[1] != "create ns/"+webName+" series=4" {
		t.Fatalf("next occurrence of a gone series: %v, want a patch then its create with count 4", got)
	}
}

// TestFinishRetriesAfterATransportError: a series whose final count could
// not be written for a transport error is written at the next round; one
// the server refuses is forgotten.
func TestFinishRetriesAfterATransportError(t *testing.T) {
	for _, tc := range []struct {
		name    string
		err     error
		retried bool
	}{
		{"transport error", &url.Error{Op: "Patch", URL: "https://api", Err: errors.New("connection refused")}, true},
		{"refused", apierrors.NewForbidden(schema.GroupResource{Group: "events.k8s.io", Resource: "events"}, "x", errors.New("no")), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			r, rec, fc := newTest(t)
			r.Eventf(pod("web"), nil, corev1.EventTypeNormal, "Synced", "Sync", "a")
			r.Eventf(pod("web"), nil, corev1.EventTypeNormal, "Synced", "Sync", "a")
			drain(ctx, r)
			rec.take()
			rec.fail = func(int, call) error { return tc.err }
			fc.Step(finishTime + time.Second)
			r.finishSeries(ctx)
			rec.fail = nil
			r.finishSeries(ctx)
			got := len(rec.take())
			if want := map[bool]int{true: 2, false: 1}[tc.retried]; got != want {
				t.Errorf("%d writes of the final count, want %d", got, want)
			}
		})
	}
}

// TestRetryRules: client-go's rules: a transport error is tried again, up
// to 12 tries; a request the server refused is not, but for the create of
// a series that finds its event created meanwhile; a request that cannot
// be built is not.
func TestRetryRules(t *testing.T) {
	transport := &url.Error{Op: "Post", URL: "https://api", Err: errors.New("connection refused")}
	gr := schema.GroupResource{Group: "events.k8s.io", Resource: "events"}
	for _, tc := range []struct {
		name   string
		repeat bool // the event is the second of a series: patched
		fail   func(n int, c call) error
		want   int // writes
	}{
		{"success", false, nil, 1},
		{"transport error, always", false, func(int, call) error { return transport }, maxTriesPerEvent},
		{"transport error, twice", false, func(n int, _ call) error {
			if n < 2 {
				return transport
			}
			return nil
		}, 3},
		{"unexpected object", false, func(n int, _ call) error {
			if n < 1 {
				return &apierrors.UnexpectedObjectError{}
			}
			return nil
		}, 2},
		{"invalid", false, func(int, call) error {
			return apierrors.NewInvalid(schema.GroupKind{Group: "events.k8s.io", Kind: "Event"}, "x", nil)
		}, 1},
		{"already exists", false, func(int, call) error { return apierrors.NewAlreadyExists(gr, "x") }, 1},
		{"request construction", false, func(int, call) error { return &rest.RequestConstructionError{Err: errors.New("bad")} }, 1},
		{"series: patch not found, create already exists, patch again", true, func(n int, c call) error {
			switch n {
			case 0:
				return apierrors.NewNotFound(gr, c.name)
			case 1:
				return apierrors.NewAlreadyExists(gr, c.name)
			}
			return nil
		}, 3},
		{"series: refused", true, func(int, call) error { return apierrors.NewForbidden(gr, "x", errors.New("no")) }, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			r, rec, _ := newTest(t)
			r.Clock = nil // retries sleep r.sleep, 1 ms, on the real clock
			if tc.repeat {
				r.Eventf(pod("web"), nil, corev1.EventTypeNormal, "Synced", "Sync", "a")
				drain(ctx, r)
				rec.take()
			}
			rec.fail = tc.fail
			r.Eventf(pod("web"), nil, corev1.EventTypeNormal, "Synced", "Sync", "a")
			drain(ctx, r)
			if got := rec.take(); len(got) != tc.want {
				t.Errorf("%d writes, want %d: %v", len(got), tc.want, verbs(got))
			}
		})
	}
}

// TestRetriesGiveUpWhenTheContextEnds: a Recorder waiting to try again
// gives up when its context is done.
func TestRetriesGiveUpWhenTheContextEnds(t *testing.T) {
	r, rec, fc := newTest(t)
	r.sleep = time.Hour
	rec.fail = func(int, call) error { return errors.New("connection refused") }
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	r.Eventf(pod("web"), nil, corev1.EventTypeNormal, "Synced", "Sync", "a")
	go func() {
		defer close(done)
		drain(ctx, r)
	}()
	waitFor(t, fc.HasWaiters) // asleep before the second try
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("still trying after the context ended")
	}
	if got := rec.take(); len(got) != 1 {
		t.Errorf("%d writes, want 1", len(got))
	}
}

// TestDropsWhenTheQueueIsFull: 1,000 events wait to be sent; the next is
// dropped, counted, and leaves no trace in the series: its repeat is
// created.
func TestDropsWhenTheQueueIsFull(t *testing.T) {
	ctx := t.Context()
	c, w := nullClient(t)
	r := New(c, "test-controller")
	before := metricstest.Value(t, "reconcilekit_recorder_dropped_events_total", nil)
	for i := range maxQueuedEvents {
		r.Eventf(pod(fmt.Sprint("p", i)), nil, corev1.EventTypeNormal, "Synced", "Sync", "a")
	}
	if r.dropped.Load() != 0 {
		t.Fatalf("%d dropped of %d", r.dropped.Load(), maxQueuedEvents)
	}
	r.Eventf(pod("last"), nil, corev1.EventTypeNormal, "Synced", "Sync", "a")
	if got := r.dropped.Load(); got != 1 {
		t.Fatalf("%d dropped, want 1", got)
	}
	if got := metricstest.Value(t, "reconcilekit_recorder_dropped_events_total", nil) - before; got != 1 {
		t.Errorf("reconcilekit_recorder_dropped_events_total grew by %v, want 1", got)
	}
	drain(ctx, r)
	if got := w.creates.Load(); got != maxQueuedEvents {
		t.Fatalf("%d sent, want %d", got, maxQueuedEvents)
	}
	r.Eventf(pod("last"), nil, corev1.EventTypeNormal, "Synced", "Sync", "a")
	drain(ctx, r)
	if creates, patches := w.creates.Load(), w.patches.Load(); creates != maxQueuedEvents+1 || patches != 0 {
		t.Errorf("the repeat of a dropped event: %d creates and %d patches in all, want %d and 0", creates, patches, maxQueuedEvents+1)
	}
}

// TestWhatIsNotSent: client-go's checks: an event of another type than
// Normal or Warning, or about an object without a reference, is not sent;
// a related object without a reference is left out.
func TestWhatIsNotSent(t *testing.T) {
	ctx := t.Context()
	r, rec, _ := newTest(t)
	r.Eventf(pod("web"), nil, "Info", "Synced", "Sync", "a")
	r.Eventf(nil, nil, corev1.EventTypeNormal, "Synced", "Sync", "a")
	r.Eventf(&unknown{}, nil, corev1.EventTypeNormal, "Synced", "Sync", "a")
	drain(ctx, r)
	if got := rec.take(); len(got) != 0 {
		t.Fatalf("sent %v, want nothing", verbs(got))
	}
	r.Eventf(pod("web"), &unknown{}, corev1.EventTypeNormal, "Synced", "Sync", "ratio %d%%", 100)
	drain(ctx, r)
	got := rec.take()
	if len(got) != 1 || got[0].event.Related != nil || got[0].event.Note != "ratio 100%" {
		t.Errorf("sent %v, want the event without its related object, note as Sprintf makes it", verbs(got))
	}
}

// unknown is a type no scheme knows.
type unknown struct{ metav1.ObjectMeta }

func (u *unknown) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }
func (u *unknown) DeepCopyObject() runtime.Object   { return &unknown{*u.DeepCopy()} }

// TestNilAndZeroRecordersDoNothing: Eventf on a nil or zero Recorder does
// nothing; Validate and Start refuse them.
func TestNilAndZeroRecordersDoNothing(t *testing.T) {
	var nilRecorder *Recorder
	nilRecorder.Eventf(pod("web"), nil, corev1.EventTypeNormal, "Synced", "Sync", "a")
	nilRecorder.AnnotatedEventf(pod("web"), nil, nil, corev1.EventTypeNormal, "Synced", "Sync", "a")
	var zero Recorder
	zero.Eventf(pod("web"), nil, corev1.EventTypeNormal, "Synced", "Sync", "a")
	for _, r := range []*Recorder{nilRecorder, &zero} {
		if err := r.Validate(); !errors.Is(err, ErrInvalidRecorder) || !strings.Contains(err.Error(), "not built by recorder.New") {
			t.Errorf("Validate: %v, want ErrInvalidRecorder saying it was not built by New", err)
		}
		if err := r.Start(t.Context()); !errors.Is(err, ErrInvalidRecorder) || !permanent(err) {
			t.Errorf("Start: %v, want ErrInvalidRecorder, permanent", err)
		}
	}
	var rec events.EventRecorder = nilRecorder
	rec.Eventf(pod("web"), nil, corev1.EventTypeNormal, "Synced", "Sync", "a")
}

// permanent reports whether err is classed permanent (terminal for
// controller-runtime: a manager does not retry a Runnable's error).
func permanent(err error) bool {
	c, _ := errors.Classify(err)
	return c == errors.ClassPermanent
}

// TestValidateNamesEachMistake: Validate names every mistake of a Recorder
// built by New (no client, a scheme without Events, no field owner, and
// several at once), wrapping ErrInvalidRecorder, and ErrNoFieldOwner for an
// empty name; Start returns the same error, permanent, and starts nothing;
// Eventf drops the event instead of sending or panicking.
func TestValidateNamesEachMistake(t *testing.T) {
	rec, c := newRecording(t)
	bare := fake.NewClientBuilder().WithScheme(runtime.NewScheme()).Build()
	for _, tc := range []struct {
		name         string
		r            *Recorder
		want         []string
		noFieldOwner bool
	}{
		{"nil client", New(nil, "test-controller"), []string{"no client"}, false},
		{"scheme without events", New(bare, "test-controller"), []string{"does not know events.k8s.io/v1 Event"}, false},
		{"no field owner", New(c, ""), []string{"no field owner"}, true},
		{"no client, no field owner", New(nil, ""), []string{"no client", "no field owner"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.r.Validate()
			if !errors.Is(err, ErrInvalidRecorder) || errors.Is(err, errors.ErrNoFieldOwner) != tc.noFieldOwner {
				t.Errorf("Validate: %v, want ErrInvalidRecorder (and ErrNoFieldOwner: %v)", err, tc.noFieldOwner)
			}
			for _, want := range tc.want {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("Validate: %v, want it to say %q", err, want)
				}
			}
			if err := tc.r.Start(t.Context()); !errors.Is(err, ErrInvalidRecorder) || !permanent(err) {
				t.Errorf("Start: %v, want the error of Validate, permanent", err)
			}
			tc.r.Eventf(pod("web"), nil, corev1.EventTypeNormal, "Synced", "Sync", "a")
			if n := len(tc.r.queue); n != 0 {
				t.Errorf("%d events queued by a Recorder that cannot send, want 0", n)
			}
		})
	}
	if got := rec.take(); len(got) != 0 {
		t.Errorf("sent %v, want nothing", verbs(got))
	}
	if err := New(c, "test-controller").Validate(); err != nil {
		t.Errorf("Validate of a Recorder set right: %v", err)
	}
}

// TestStartsOnce: a second Start of a Recorder is refused, permanent; the
// first goes on until its context ends.
func TestStartsOnce(t *testing.T) {
	_, c := newRecording(t)
	started := New(c, "test-controller")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- started.Start(ctx) }()
	waitFor(t, func() bool {
		started.mu.Lock()
		defer started.mu.Unlock()
		return started.started
	})
	if err := started.Start(t.Context()); !errors.Is(err, ErrInvalidRecorder) || !permanent(err) {
		t.Errorf("second Start: %v, want ErrInvalidRecorder, permanent", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Start after its context ended: %v", err)
	}
}

// TestStartSendsAndEndsSeries: a started Recorder sends what was queued
// before, and its rounds write the count of a series that ended; once
// Start returned, nothing more is queued.
func TestStartSendsAndEndsSeries(t *testing.T) {
	r, rec, fc := newTest(t)
	// One sender: with more, the repeat's patch may find no event, create
	// it and find the first create done meanwhile, then wait to try again
	// on the fake clock (TestRetryRules tests that path).
	r.senders = 1
	for range 3 {
		r.Eventf(pod("web"), nil, corev1.EventTypeNormal, "Synced", "Sync", "a")
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- r.Start(ctx) }()
	key := client.ObjectKey{Namespace: "ns", Name: name("web", t0)}
	count := func() int32 {
		var ev eventsv1.Event
		if err := rec.store.Get(ctx, key, &ev); err != nil || ev.Series == nil {
			return 0
		}
		return ev.Series.Count
	}
	waitFor(t, func() bool { return count() == 2 })
	waitFor(t, func() bool { return fc.Waiters() >= 2 }) // the rounds' timers
	fc.Step(finishTime + time.Second)
	waitFor(t, func() bool { return count() == 3 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	r.Eventf(pod("late"), nil, corev1.EventTypeNormal, "Synced", "Sync", "a")
	if n := len(r.queue); n != 0 {
		t.Errorf("%d events queued after Start returned, want none", n)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.series) != 0 {
		t.Errorf("%d series kept after the end", len(r.series))
	}
}

// TestMapShrinksAfterABurst: once the entries of a burst are forgotten, the
// map that held them is given back.
func TestMapShrinksAfterABurst(t *testing.T) {
	ctx := t.Context()
	c, _ := nullClient(t)
	r := New(c, "test-controller")
	fc := clocktesting.NewFakeClock(t0)
	r.Clock = fc
	for i := range 3000 {
		r.Eventf(pod(fmt.Sprint("p", i)), nil, corev1.EventTypeNormal, "Synced", "Sync", "a")
		if len(r.queue) == cap(r.queue) {
			drain(ctx, r)
		}
	}
	drain(ctx, r)
	if r.peakSingles != 3000 {
		t.Fatalf("peak %d, want 3000", r.peakSingles)
	}
	fc.Step(finishTime + time.Second)
	r.finishSeries(ctx)
	if r.peakSingles != 0 || len(r.singles) != 0 {
		t.Errorf("after the window: peak %d, %d entries; want 0", r.peakSingles, len(r.singles))
	}
}

// TestAnEventNamedByUUIDJoinsItsSeries: an event on an object whose name
// makes an invalid event name is named by a UUID, as client-go names it;
// its repeat patches that event, and the series' count is written at its
// end.
func TestAnEventNamedByUUIDJoinsItsSeries(t *testing.T) {
	ctx := t.Context()
	r, rec, fc := newTest(t)
	long := pod(strings.Repeat("a", 250)) // 250 characters, a dot and 16 digits: over 253
	for range 3 {
		r.Eventf(long, nil, corev1.EventTypeNormal, "Synced", "Sync", "a")
	}
	drain(ctx, r)
	calls := rec.take()
	if len(calls) != 2 || calls[0].verb != "create" || calls[1].verb != "patch" {
		t.Fatalf("writes %v, want a create and a patch", verbs(calls))
	}
	if uuid := calls[0].name; len(uuid) != 36 || calls[1].name != uuid {
		t.Fatalf("created %q, patched %q: want one UUID", uuid, calls[1].name)
	}
	fc.Step(finishTime + time.Second)
	r.finishSeries(ctx)
	if got := verbs(rec.take()); len(got) != 1 || got[0] != "patch ns/"+calls[0].name+" "+seriesPatchOf(3, t0) {
		t.Errorf("end of the series: %v", got)
	}
}

// TestAHashCollisionIsNotMerged: an event whose key has the hash of
// another key's entry, but not its check, is sent on its own: neither
// merged into the other's series nor kept.
func TestAHashCollisionIsNotMerged(t *testing.T) {
	ctx := t.Context()
	r, rec, _ := newTest(t)
	web := pod("web")
	r.Eventf(web, nil, corev1.EventTypeNormal, "Synced", "Sync", "a")
	drain(ctx, r)
	rec.take()
	for h, s := range r.singles { // the entry is another key's
		s.check++
		r.singles[h] = s
	}
	for range 2 {
		r.Eventf(web, nil, corev1.EventTypeNormal, "Synced", "Sync", "a")
	}
	drain(ctx, r)
	if got := verbs(rec.take()); len(got) != 2 || !strings.HasPrefix(got[0], "create") || !strings.HasPrefix(got[1], "create") {
		t.Errorf("two events colliding with another key: %v, want two creates", got)
	}
	if len(r.singles) != 1 || len(r.series) != 0 {
		t.Errorf("%d single events and %d series kept, want the other key's only", len(r.singles), len(r.series))
	}
}

// TestARepeatWaitsForTheCreateOfItsEvent: with several senders, the patch
// that makes an event a series is sent only once the create of that event
// has returned, never beside it (a patch that overtook the create would
// find no event and create it from the repeat, and the first create would
// then be refused); events of other keys are not held behind it.
func TestARepeatWaitsForTheCreateOfItsEvent(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var order []string
	note := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, s)
	}
	c := interceptor.NewClient(fake.NewClientBuilder().WithScheme(newScheme(t)).Build(), interceptor.Funcs{
		Create: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
			ev := obj.(*eventsv1.Event)
			if ev.Regarding.Name == "slow" {
				<-release
			}
			note("create " + ev.Regarding.Name)
			return nil
		},
		Patch: func(_ context.Context, _ client.WithWatch, obj client.Object, _ client.Patch, _ ...client.PatchOption) error {
			note("patch " + obj.GetName()[:strings.Index(obj.GetName(), ".")])
			return nil
		},
	})
	r := New(c, "test-controller")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	r.Eventf(pod("slow"), nil, corev1.EventTypeNormal, "Synced", "Sync", "first")
	r.Eventf(pod("slow"), nil, corev1.EventTypeNormal, "Synced", "Sync", "second")
	r.Eventf(pod("other"), nil, corev1.EventTypeNormal, "Synced", "Sync", "first")
	waitFor(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(order) == 1
	})
	close(release)
	waitFor(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(order) == 3
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want := []string{"create other", "create slow", "patch slow"}
	if !slices.Equal(order, want) {
		t.Errorf("sent %v, want %v", order, want)
	}
}
