package recorder

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// controllerName is the reporting controller of the tests on the API
// server, client-go's and the Recorder's alike.
const controllerName = "reconcilekit-test"

// annotatedRecorder is what both recorders of a test are used as.
type annotatedRecorder interface {
	AnnotatedEventf(regarding, related runtime.Object, annotations map[string]string, eventtype, reason, action, note string, args ...any)
}

// serverTest is a namespace with two objects to record events about, a
// client-go broadcaster and a Recorder writing to the API server.
type serverTest struct {
	c        client.Client
	ns       string
	web, db  *corev1.ConfigMap
	clientGo annotatedRecorder
	recorder *Recorder
}

// newServerTest starts both recorders until the test ends; configure, when
// set, sets the Recorder's knobs before it starts.
func newServerTest(t *testing.T, configure func(*Recorder)) *serverTest {
	t.Helper()
	ctx := t.Context()
	st := &serverTest{c: env.Client(t), ns: env.Namespace(t)}
	for _, cm := range []**corev1.ConfigMap{&st.web, &st.db} {
		name := "web"
		if cm == &st.db {
			name = "db"
		}
		*cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: st.ns, Name: name}, Data: map[string]string{"k": "v"}}
		if err := st.c.Create(ctx, *cm); err != nil {
			t.Fatal(err)
		}
	}
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: cs.EventsV1()})
	if err := b.StartRecordingToSinkWithContext(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Shutdown)
	st.clientGo = b.NewRecorder(env.Scheme, controllerName).(annotatedRecorder)

	st.recorder = New(st.c, controllerName)
	if configure != nil {
		configure(st.recorder)
	}
	rctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- st.recorder.Start(rctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	})
	return st
}

// events lists the events of the test's namespace.
func (st *serverTest) events(t *testing.T) []eventsv1.Event {
	t.Helper()
	var list eventsv1.EventList
	if err := st.c.List(t.Context(), &list, client.InNamespace(st.ns)); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// waitEvents waits until cond holds of the namespace's events, and returns
// them.
func (st *serverTest) waitEvents(t *testing.T, what string, cond func([]eventsv1.Event) bool) []eventsv1.Event {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		items := st.events(t)
		if cond(items) {
			return items
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; the namespace's events: %+v", what, items)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// serverFields ignores what the API server and the clock make differ
// between two events of the same call: name, uid, resourceVersion,
// creation time, managed fields, eventTime and the series' time.
var serverFields = cmp.Options{
	cmpopts.IgnoreFields(metav1.ObjectMeta{}, "Name", "UID", "ResourceVersion", "CreationTimestamp", "ManagedFields"),
	cmpopts.IgnoreFields(eventsv1.Event{}, "EventTime"),
	cmpopts.IgnoreFields(eventsv1.EventSeries{}, "LastObservedTime"),
}

// TestServerStoresWhatClientGoWrites: the event a Recorder writes for a
// call is, on the API server, the one client-go's broadcaster writes for
// the same call, but for its name and times.
func TestServerStoresWhatClientGoWrites(t *testing.T) {
	t.Parallel()
	st := newServerTest(t, nil)
	annotations := map[string]string{"reconcilekit.io/trace": "abc"}
	for _, r := range []annotatedRecorder{st.clientGo, st.recorder} {
		r.AnnotatedEventf(st.web, st.db, annotations, corev1.EventTypeWarning, "SyncFailed", "Sync", "failed %d times: %s", 3, "timeout")
	}
	items := st.waitEvents(t, "two events", func(items []eventsv1.Event) bool { return len(items) == 2 })
	if diff := cmp.Diff(items[0], items[1], serverFields); diff != "" {
		t.Errorf("the two recorders' events differ:\n%s", diff)
	}
	if ev := items[0]; ev.Regarding.UID != st.web.UID || ev.Related == nil || ev.Related.UID != st.db.UID || ev.Note != "failed 3 times: timeout" {
		t.Errorf("event %+v is not about the objects recorded", ev)
	}
}

// TestServerCountsARepeatAsASeries: an event recorded twice is, on the API
// server, one event with a series of count 2, the same as client-go's.
func TestServerCountsARepeatAsASeries(t *testing.T) {
	t.Parallel()
	st := newServerTest(t, nil)
	// client-go's broadcaster sends each event from a goroutine of its
	// own, which may take its cache's lock in either order: its second
	// occurrence waits for the first to be on the server. A Recorder's are
	// recorded back to back: the patch of the series waits for the create
	// of its event.
	st.clientGo.AnnotatedEventf(st.web, nil, nil, corev1.EventTypeNormal, "Synced", "Sync", "synced %d", 0)
	st.waitEvents(t, "client-go's first event", func(items []eventsv1.Event) bool { return len(items) == 1 })
	st.clientGo.AnnotatedEventf(st.web, nil, nil, corev1.EventTypeNormal, "Synced", "Sync", "synced %d", 1)
	for i := range 2 {
		st.recorder.AnnotatedEventf(st.web, nil, nil, corev1.EventTypeNormal, "Synced", "Sync", "synced %d", i)
	}
	items := st.waitEvents(t, "two series of 2", func(items []eventsv1.Event) bool {
		n := 0
		for _, ev := range items {
			if ev.Series != nil && ev.Series.Count == 2 {
				n++
			}
		}
		return n == 2 && len(items) == 2
	})
	if diff := cmp.Diff(items[0], items[1], serverFields); diff != "" {
		t.Errorf("the two recorders' series differ:\n%s", diff)
	}
	for _, ev := range items {
		if ev.Note != "synced 0" {
			t.Errorf("note %q, want the first occurrence's", ev.Note)
		}
	}
}

// TestServerGetsTheFinalCountOfASeries: the count of a series is written
// once it has been idle for the finish window (shortened to 2 s here).
func TestServerGetsTheFinalCountOfASeries(t *testing.T) {
	t.Parallel()
	st := newServerTest(t, func(r *Recorder) { r.finish = 2 * time.Second })
	for range 5 {
		st.recorder.Eventf(st.web, nil, corev1.EventTypeNormal, "Synced", "Sync", "synced")
	}
	st.waitEvents(t, "a series of 5", func(items []eventsv1.Event) bool {
		return len(items) == 1 && items[0].Series != nil && items[0].Series.Count == 5
	})
	// The Recorder forgets the series once its count is written.
	waitFor(t, func() bool {
		st.recorder.mu.Lock()
		defer st.recorder.mu.Unlock()
		return len(st.recorder.series) == 0
	})
}

// TestServerEventDeletedIsCreatedAgain: when the event a repeat would
// patch is gone from the API server, the repeat creates it again, as a
// series of 2 under the first event's name.
func TestServerEventDeletedIsCreatedAgain(t *testing.T) {
	t.Parallel()
	st := newServerTest(t, nil)
	st.recorder.Eventf(st.web, nil, corev1.EventTypeNormal, "Synced", "Sync", "first")
	first := st.waitEvents(t, "the first event", func(items []eventsv1.Event) bool { return len(items) == 1 })[0]
	if err := st.c.Delete(t.Context(), &first); err != nil {
		t.Fatal(err)
	}
	st.recorder.Eventf(st.web, nil, corev1.EventTypeNormal, "Synced", "Sync", "second")
	again := st.waitEvents(t, "the event created again", func(items []eventsv1.Event) bool {
		return len(items) == 1 && items[0].Series != nil
	})[0]
	if again.Name != first.Name || again.UID == first.UID || again.Series.Count != 2 || again.Note != "second" {
		t.Errorf("created again: %s (uid %s), series %+v, note %q; want %s with a new uid, count 2, the second note",
			again.Name, again.UID, again.Series, again.Note, first.Name)
	}
}

// TestServerRecordsTheFieldOwnerOfEveryWrite: the API server records the
// name the Recorder was built with as the field manager of the Event it
// created and of the patch that made it a series, as of every other write
// of the operator, and as the events' reportingController.
func TestServerRecordsTheFieldOwnerOfEveryWrite(t *testing.T) {
	t.Parallel()
	st := newServerTest(t, nil)
	managers := func(ev eventsv1.Event) []string {
		var out []string
		for _, e := range ev.ManagedFields {
			out = append(out, e.Manager+" "+string(e.Operation))
		}
		return out
	}
	want := []string{controllerName + " " + string(metav1.ManagedFieldsOperationUpdate)}

	st.recorder.Eventf(st.web, nil, corev1.EventTypeNormal, "Synced", "Sync", "synced")
	created := st.waitEvents(t, "the event", func(items []eventsv1.Event) bool { return len(items) == 1 })[0]
	if diff := cmp.Diff(want, managers(created)); diff != "" || created.ReportingController != controllerName {
		t.Errorf("created: field managers (-want +got):\n%s\nreportingController %q, want %q", diff, created.ReportingController, controllerName)
	}

	st.recorder.Eventf(st.web, nil, corev1.EventTypeNormal, "Synced", "Sync", "synced")
	patched := st.waitEvents(t, "a series of 2", func(items []eventsv1.Event) bool {
		return len(items) == 1 && items[0].Series != nil && items[0].Series.Count == 2
	})[0]
	if diff := cmp.Diff(want, managers(patched)); diff != "" {
		t.Errorf("patched into a series: field managers (-want +got):\n%s", diff)
	}
	// The series' fields are the field owner's too: the patch set them.
	if len(patched.ManagedFields) == 1 && !strings.Contains(string(patched.ManagedFields[0].FieldsV1.Raw), `"f:series"`) {
		t.Errorf("the field owner's entry %s does not hold the series", patched.ManagedFields[0].FieldsV1.Raw)
	}
}
