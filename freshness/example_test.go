package freshness_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/freshness"
)

// A guarded client never hands out a cached object older than its own last
// write. Here the "cache" lags one write behind, as an informer under load
// does; without informers to wait on, the read fails at once with an error
// that requeue.Policy retries soon and quietly, instead of returning the old
// copy for the reconciler to act on.
func ExampleTracker_Wrap() {
	ctx := context.Background()
	server := fake.NewClientBuilder().WithObjects(&corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "settings"},
		Data:       map[string]string{"mode": "old"},
	}).Build()
	var lagging *corev1.ConfigMap // what the cache still holds
	cached := interceptor.NewClient(server, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if lagging != nil {
				lagging.DeepCopyInto(obj.(*corev1.ConfigMap))
				return nil
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})

	var tracker freshness.Tracker
	c := tracker.Wrap(cached)
	key := client.ObjectKey{Namespace: "default", Name: "settings"}
	cm := &corev1.ConfigMap{}
	_ = c.Get(ctx, key, cm)
	lagging = cm.DeepCopy()
	cm.Data["mode"] = "new"
	_ = c.Update(ctx, cm)

	err := c.Get(ctx, key, &corev1.ConfigMap{})
	class, _ := errors.Classify(err)
	fmt.Println(errors.Is(err, freshness.ErrStale), class)

	lagging = nil // the cache catches up
	fresh := &corev1.ConfigMap{}
	fmt.Println(c.Get(ctx, key, fresh), fresh.Data["mode"], tracker.Len())
	// Output:
	// true conflict
	// <nil> new 0
}
