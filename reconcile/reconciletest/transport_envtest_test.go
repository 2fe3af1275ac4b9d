package reconciletest_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/internal/testapi"
	rt "github.com/reconcilekit/reconcilekit/reconcile/reconciletest"
)

// TestAPIServerTransportAgreesWithTheClient: against a real API server,
// every call of controller-runtime's client is recorded at the transport
// with the same verb, namespace and name as the client-level Counter
// records it (but for a create's name, which is in its body, not its URL),
// so one vocabulary serves both; the transport adds the resource and the
// status code.
func TestAPIServerTransportAgreesWithTheClient(t *testing.T) {
	ns := env.Namespace(t)
	var atClient, atTransport rt.Counter
	base, err := client.NewWithWatch(atTransport.WrapConfig(env.Config), client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	c := atClient.Wrap(base)
	w := widget(ns, "w", "hello")
	mergePatch := func(body string) client.Patch { return client.RawPatch("application/merge-patch+json", []byte(body)) }
	steps := []struct {
		name string
		do   func(ctx context.Context) error
		code int
	}{
		{"create", func(ctx context.Context) error { return c.Create(ctx, w) }, 201},
		{"get", func(ctx context.Context) error { return c.Get(ctx, client.ObjectKeyFromObject(w), w) }, 200},
		{"list", func(ctx context.Context) error { return c.List(ctx, &testapi.WidgetList{}, client.InNamespace(ns)) }, 200},
		{"update", func(ctx context.Context) error { w.Spec.Message = "u"; return c.Update(ctx, w) }, 200},
		{"patch", func(ctx context.Context) error { return c.Patch(ctx, w, mergePatch(`{"spec":{"message":"p"}}`)) }, 200},
		{"status update", func(ctx context.Context) error { w.Status.Phase = "a"; return c.Status().Update(ctx, w) }, 200},
		{"status patch", func(ctx context.Context) error {
			return c.Status().Patch(ctx, w, mergePatch(`{"status":{"phase":"b"}}`))
		}, 200},
		{"stale update", func(ctx context.Context) error {
			stale := w.DeepCopy()
			stale.ResourceVersion = "1"
			_ = c.Update(ctx, stale) // refused with 409: recorded all the same
			return nil
		}, 409},
		{"apply", func(ctx context.Context) error {
			return c.Apply(ctx, corev1ac.ConfigMap("cm", ns).WithData(map[string]string{"k": "v"}), client.FieldOwner("test"))
		}, 201},
		{"watch", func(ctx context.Context) error {
			wi, err := c.Watch(ctx, &corev1.ConfigMapList{}, client.InNamespace(ns))
			if err == nil {
				wi.Stop()
			}
			return err
		}, 200},
		{"delete", func(ctx context.Context) error { return c.Delete(ctx, w) }, 200},
		{"deletecollection", func(ctx context.Context) error {
			return c.DeleteAllOf(ctx, &corev1.ConfigMap{}, client.InNamespace(ns))
		}, 200},
	}
	for _, s := range steps {
		// Each step starts from empty counters: the client's REST mapper
		// may send discovery requests the first time it meets a kind.
		atClient.Reset()
		atTransport.Reset()
		if err := s.do(t.Context()); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		client := atClient.Requests()
		var transport []rt.APIRequest
		for _, r := range atTransport.Requests() {
			if r.Resource.Resource != "" { // not discovery
				transport = append(transport, r)
			}
		}
		if len(client) != 1 || len(transport) != 1 {
			t.Errorf("%s: recorded %d at the client and %d at the transport, want 1 each:\n%v\n%v", s.name, len(client), len(transport), client, transport)
			continue
		}
		type key struct {
			Verb            rt.Verb
			Namespace, Name string
		}
		want := key{client[0].Verb, client[0].Namespace, client[0].Name}
		if want.Verb == rt.VerbCreate {
			want.Name = "" // a create's URL names no object: its body does
		}
		if diff := cmp.Diff(want, key{transport[0].Verb, transport[0].Namespace, transport[0].Name}); diff != "" {
			t.Errorf("%s: client-level (-) and transport-level (+) records differ:\n%s", s.name, diff)
		}
		if transport[0].Code != s.code {
			t.Errorf("%s: status code %d, want %d", s.name, transport[0].Code, s.code)
		}
	}
}

// TestAPIServerWrapConfigLeavesTheConfigAlone: a client of the original
// config is not counted.
func TestAPIServerWrapConfigLeavesTheConfigAlone(t *testing.T) {
	ns := env.Namespace(t)
	var counter rt.Counter
	_ = counter.WrapConfig(env.Config)
	if err := env.Client(t).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm"}}); err != nil {
		t.Fatal(err)
	}
	if got := counter.Requests(); len(got) != 0 {
		t.Errorf("recorded %v from a client of the unwrapped config", got)
	}
}
