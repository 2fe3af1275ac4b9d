package recorder_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/reconcilekit/reconcilekit/recorder"
)

// An event and its repeat: the first is created, the repeat makes it a
// series of 2. The manager's client is a fake one here.
func Example() {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		panic(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).Build() // mgr.GetClient()
	rec := recorder.New(c, "at-controller")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = rec.Start(ctx) }() // mgr.Add(rec)

	report := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "nightly-report", UID: "5f0c3a1e"}}
	event := func(done func(eventsv1.Event) bool) eventsv1.Event {
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			var list eventsv1.EventList
			if err := c.List(ctx, &list, client.InNamespace("team-a")); err == nil && len(list.Items) == 1 && done(list.Items[0]) {
				return list.Items[0]
			}
		}
		panic("no event")
	}

	rec.Eventf(report, nil, corev1.EventTypeNormal, "Scheduled", "Schedule", "runs at %s", "02:00")
	ev := event(func(eventsv1.Event) bool { return true })
	fmt.Println(ev.Type, ev.Reason, ev.Action, ev.Note)
	fmt.Println(ev.Regarding.Kind, ev.Regarding.Namespace+"/"+ev.Regarding.Name, ev.ReportingController)

	rec.Eventf(report, nil, corev1.EventTypeNormal, "Scheduled", "Schedule", "runs at %s", "02:00")
	ev = event(func(ev eventsv1.Event) bool { return ev.Series != nil })
	fmt.Println("series of", ev.Series.Count)
	// Output:
	// Normal Scheduled Schedule runs at 02:00
	// ConfigMap team-a/nightly-report at-controller
	// series of 2
}

// A manager runs the Recorder, and the reconciler records through it
// where it took mgr.GetEventRecorder(name).
func ExampleNew() {
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{})
	if err != nil {
		panic(err)
	}
	rec := recorder.New(mgr.GetClient(), "at-controller")
	if err := mgr.Add(rec); err != nil {
		panic(err)
	}
	// reconciler := &AtReconciler{Client: mgr.GetClient(), Recorder: rec}
	// or, with reconcile.Loop: loop.Recorder = rec
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		panic(err)
	}
}
