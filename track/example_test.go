package track_test

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/track"
)

// A reconcile reads the Secret its object names through a Tracker; the
// Tracker's handler, on the Secrets' watch, wakes exactly that object when
// the Secret changes. A missing Secret is a permanent error naming it: the
// referrer is Stalled until the Secret's creation wakes it.
func ExampleTracker() {
	ctx := context.Background()
	c := fake.NewClientBuilder().WithObjects(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "creds", ResourceVersion: "1"},
		Data:       map[string][]byte{"password": []byte("s3cret")},
	}).Build()
	refs := track.New(c, clientgoscheme.Scheme)
	// In a controller: WatchesMetadata(&corev1.Secret{}, refs.Enqueue(&corev1.Secret{})).
	handler := refs.Enqueue(&corev1.Secret{})

	mirror := types.NamespacedName{Namespace: "team-a", Name: "mirror"}
	reconcile := func(secret string) {
		reads := refs.For(mirror)
		defer reads.Done()
		var s corev1.Secret
		err := reads.Get(ctx, types.NamespacedName{Namespace: "team-a", Name: secret}, &s)
		class, _ := errors.Classify(err)
		fmt.Printf("read %s: %q %v (%s, %s)\n", secret, s.Data["password"], err, class, errors.Reason(err))
	}
	reconcile("creds")
	fmt.Println("referrers of creds:", refs.Referrers(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "creds"}}))

	// The watch reports the Secret: a resync (the same resourceVersion)
	// enqueues nothing, a change enqueues the mirror.
	q := &queue{}
	v1 := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "creds", ResourceVersion: "1"}}
	v2 := v1.DeepCopy()
	v2.ResourceVersion = "2"
	handler.Update(ctx, event.UpdateEvent{ObjectOld: v1, ObjectNew: v1}, q)
	fmt.Println("resync enqueued:", q.take())
	handler.Update(ctx, event.UpdateEvent{ObjectOld: v1, ObjectNew: v2}, q)
	fmt.Println("change enqueued:", q.take())

	// The spec now names a Secret that does not exist.
	reconcile("other")
	fmt.Println("referrers of creds:", refs.Referrers(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "creds"}}))
	// Output:
	// read creds: "s3cret" <nil> (none, )
	// referrers of creds: [team-a/mirror]
	// resync enqueued: []
	// change enqueued: [team-a/mirror]
	// read other: "" Secret "team-a/other" not found (permanent, ReferenceNotFound)
	// referrers of creds: []
}

// A Deployment whose Pods read a ConfigMap carries the ConfigMap's Hash on
// its Pod template: the template changes, and the Deployment rolls, when the
// data does, and only then.
func ExampleHash() {
	settings := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "settings"},
		Data:       map[string]string{"mode": "prod"},
	}
	hash := func() string {
		h, err := track.Hash(settings)
		if err != nil {
			return err.Error()
		}
		return h
	}
	deployment := &appsv1.Deployment{}
	deployment.Spec.Template.Annotations = map[string]string{track.HashAnnotation: hash()}
	before := hash()

	settings.Labels = map[string]string{"edited": "yes"} // no data change
	fmt.Println("relabelled, same hash:", hash() == before)
	settings.Data["mode"] = "debug"
	fmt.Println("data changed, same hash:", hash() == before)
	fmt.Println(len(deployment.Spec.Template.Annotations[track.HashAnnotation]))
	// Output:
	// relabelled, same hash: true
	// data changed, same hash: false
	// 64
}
