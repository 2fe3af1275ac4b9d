package bench_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	atv1 "github.com/reconcilekit/reconcilekit/examples/at/api/v1alpha1"
	"github.com/reconcilekit/reconcilekit/examples/at/internal/podtest"
)

// record is what a controller recorded on one At, with the Pod's name
// (which carries the At's UID) replaced by "<pod>" and the schedule by
// "<time>" (the library's errors.Message masks times; the hand-written
// controller quotes them) so that two runs compare.
type record struct {
	Phase, Outcome     string
	ExitCode           *int32
	ObservedGeneration int64
	Finalizers         []string
	Conditions         []string
	Events             []string
	Gone               bool
}

// TestTheHandWrittenAtRecordsWhatTheLibraryAtRecords runs the hand-written
// At and the library's At on the same six Ats, each in a namespace of its
// own, and finds the same record on each At: phase, outcome, exit code,
// observedGeneration, finalizers, conditions (type, status, reason, message,
// observedGeneration) and events (type, reason, action, note). The
// benchmark's like-for-like comparison rests on it: if the hand-written
// controller recorded less, it would flatter the library.
func TestTheHandWrittenAtRecordsWhatTheLibraryAtRecords(t *testing.T) {
	env.Require(t)
	t.Parallel() // beside the scenarios; one manager at a time (lockManagers)
	lockManagers(t)
	got := map[kind]map[string]record{}
	for _, k := range []kind{handwrittenAt, libraryAt} {
		got[k] = recordOf(t, k)
	}
	if diff := cmp.Diff(got[libraryAt], got[handwrittenAt]); diff != "" {
		t.Errorf("the hand-written At records otherwise than the library's (-library +hand-written):\n%s", diff)
	}
	for name, r := range got[libraryAt] {
		t.Logf("%s: %+v", name, r)
	}
}

// recordOf runs the controller k on six Ats and returns what it recorded:
// due in 2 s and succeeding (no PENDING status: the first status is
// RUNNING); due at once and failing with exit code 3; due in an hour
// (PENDING); an unparsable schedule (Stalled, once); running when deleted
// (its Pod deleted through the finalizer); and one whose Pod another client
// deletes while it runs (DONE, Failed).
func recordOf(t *testing.T, k kind) map[string]record {
	t.Helper()
	ctx := context.Background()
	c := env.Client(t)
	ns := env.Namespace(t)
	kl := startKubelet(t, ns, 300*time.Millisecond)
	for _, held := range []string{"fails", "deleted", "pod-deleted"} {
		kl.hold(held)
	}
	tr := startTracker(t, ns)
	startController(t, k, ns, wiring{})
	now := time.Now()
	ats := []*atv1.At{
		newAt(ns, "succeeds", now.Add(2*time.Second)), newAt(ns, "fails", now),
		newAt(ns, "later", now.Add(time.Hour)), newAt(ns, "bad", now),
		newAt(ns, "deleted", now), newAt(ns, "pod-deleted", now),
	}
	ats[3].Spec.Schedule = "2026-11-22T10:00:00+99:00" // the CRD's date-time takes it; there is no +99:00 zone
	createAll(t, c, ats)

	running := func(name string) *corev1.Pod {
		t.Helper()
		at := &atv1.At{}
		pod := &corev1.Pod{}
		err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, at); err != nil || at.Status.Phase != atv1.PhaseRunning {
				return false, nil
			}
			return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: at.Status.PodName}, pod) == nil, nil
		})
		if err != nil {
			t.Fatalf("%s: At %s never RUNNING with its Pod\n%s", k, name, tr.describe())
		}
		return pod
	}
	pod := running("fails")
	podtest.Finish(pod, 3)
	if err := c.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, running("pod-deleted")); err != nil {
		t.Fatal(err)
	}
	running("deleted")
	if err := c.Delete(ctx, ats[4]); err != nil {
		t.Fatal(err)
	}
	tr.waitDone(t, 3, 30*time.Second) // succeeds, fails, pod-deleted
	waitFor(t, fmt.Sprintf("%s: later PENDING, bad Stalled, deleted gone", k), func() bool {
		later, bad := &atv1.At{}, &atv1.At{}
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "deleted"}, &atv1.At{})
		return apierrors.IsNotFound(err) &&
			c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "later"}, later) == nil && later.Status.Phase == atv1.PhasePending &&
			c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "bad"}, bad) == nil && len(bad.Status.Conditions) > 0
	})
	// Events go out asynchronously: wait for the five expected (succeeds
	// Ready, fails, pod-deleted and bad Stalled, deleted's Pod deleted),
	// then a little more for any that should not be there.
	waitFor(t, fmt.Sprintf("%s: five events", k), func() bool {
		var evs eventsv1.EventList
		return c.List(ctx, &evs, client.InNamespace(ns)) == nil && len(evs.Items) >= 5
	})
	time.Sleep(time.Second)

	out := map[string]record{}
	var list atv1.AtList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	pods := map[string]string{} // Pod name -> "<pod>"
	for _, at := range ats {
		pods[at.Name] = ""
	}
	for _, at := range list.Items {
		r := record{Phase: string(at.Status.Phase), Outcome: string(at.Status.Outcome), ExitCode: at.Status.ExitCode,
			ObservedGeneration: at.Status.ObservedGeneration, Finalizers: at.Finalizers}
		for _, cond := range at.Status.Conditions {
			msg := strings.ReplaceAll(anonymous(cond.Message, at.Status.PodName), at.Spec.Schedule, "<time>")
			r.Conditions = append(r.Conditions, fmt.Sprintf("%s=%s %s %q gen %d", cond.Type, cond.Status, cond.Reason, msg, cond.ObservedGeneration))
		}
		slices.Sort(r.Conditions)
		out[at.Name] = r
	}
	var evs eventsv1.EventList
	if err := c.List(ctx, &evs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs.Items {
		name := ev.Regarding.Name
		r := out[name]
		r.Gone = !slices.ContainsFunc(list.Items, func(at atv1.At) bool { return at.Name == name })
		note := ev.Note
		if ev.Related != nil {
			note = anonymous(note, ev.Related.Name)
		}
		for _, at := range list.Items {
			note = strings.ReplaceAll(anonymous(note, at.Status.PodName), at.Spec.Schedule, "<time>")
		}
		r.Events = append(r.Events, fmt.Sprintf("%s %s %s: %s", ev.Type, ev.Reason, ev.Action, note))
		slices.Sort(r.Events)
		out[name] = r
	}
	return out
}

// anonymous replaces the Pod's name in s with "<pod>".
func anonymous(s, pod string) string {
	if pod == "" {
		return s
	}
	return strings.ReplaceAll(s, pod, "<pod>")
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return ok(), nil
	})
	if err != nil {
		t.Fatalf("timed out waiting for %s", what)
	}
}
