package tracing

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/trace"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func nsName(name string) types.NamespacedName {
	return types.NamespacedName{Namespace: "ns", Name: name}
}

func spanContext(t *testing.T, traceparent string) trace.SpanContext {
	t.Helper()
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{Annotation: traceparent}}}
	sc, ok := spanContextOf(obj)
	if !ok {
		t.Fatalf("%q does not parse", traceparent)
	}
	return sc
}

// TestExtract: a valid traceparent annotation becomes the remote parent; a
// missing, empty or malformed one leaves ctx as it is.
func TestExtract(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		want        string // the span ID extracted, "" for none
	}{
		{"valid", "00-4bf92f3577b34da6a3ce929d0e0e4737-00f067aa0ba902b7-01", "00f067aa0ba902b7"},
		{"unsampled", "00-4bf92f3577b34da6a3ce929d0e0e4737-00f067aa0ba902b7-00", "00f067aa0ba902b7"},
		{"missing", "", ""},
		{"garbage", "hello", ""},
		{"zero trace ID", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", ""},
		{"bad version", "ff-4bf92f3577b34da6a3ce929d0e0e4737-00f067aa0ba902b7-01", ""},
		{"short span ID", "00-4bf92f3577b34da6a3ce929d0e0e4737-00f067aa-01", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := &corev1.ConfigMap{}
			if tc.value != "" {
				obj.Annotations = map[string]string{Annotation: tc.value}
			}
			ctx := context.Background()
			got := trace.SpanContextFromContext(Extract(ctx, obj))
			switch {
			case tc.want == "" && got.IsValid():
				t.Errorf("extracted %v from %q; want nothing", got, tc.value)
			case tc.want != "" && (got.SpanID().String() != tc.want || !got.IsRemote()):
				t.Errorf("extracted %v from %q; want remote span %s", got, tc.value, tc.want)
			}
		})
	}
}

// TestInject: the annotation is the span's traceparent, set on a copy of
// the annotations map; nothing without a span.
func TestInject(t *testing.T) {
	sc := spanContext(t, "00-4bf92f3577b34da6a3ce929d0e0e4737-00f067aa0ba902b7-01")
	shared := map[string]string{"team": "a"}
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Annotations: shared}}
	if !Inject(trace.ContextWithSpanContext(context.Background(), sc), obj) {
		t.Fatal("Inject with a span reported nothing set")
	}
	if got, want := obj.Annotations[Annotation], "00-4bf92f3577b34da6a3ce929d0e0e4737-00f067aa0ba902b7-01"; got != want {
		t.Errorf("annotation %q, want %q", got, want)
	}
	if _, changed := shared[Annotation]; changed || obj.Annotations["team"] != "a" {
		t.Errorf("the shared map was changed (%v) or a key lost (%v)", shared, obj.Annotations)
	}
	none := &corev1.ConfigMap{}
	if Inject(context.Background(), none) || none.Annotations != nil {
		t.Errorf("Inject without a span set %v", none.Annotations)
	}
}

// TestSpanNameTemplatesThePath: the namespace and name of an API path are
// replaced, the group, version, resource and subresource kept, after the
// method.
func TestSpanNameTemplatesThePath(t *testing.T) {
	for _, tc := range []struct{ path, want, ns string }{
		{"/api/v1/namespaces/ns/pods", "/api/v1/namespaces/{namespace}/pods", "ns"},
		{"/api/v1/namespaces/ns/pods/p", "/api/v1/namespaces/{namespace}/pods/{name}", "ns"},
		{"/apis/cnat.reconcilekit.dev/v1alpha1/namespaces/ns/ats/a/status", "/apis/cnat.reconcilekit.dev/v1alpha1/namespaces/{namespace}/ats/{name}/status", "ns"},
		{"/api/v1/namespaces/ns", "/api/v1/namespaces/{name}", ""},
		{"/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/l", "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}", "kube-system"},
		{"/api/v1/nodes/n", "/api/v1/nodes/{name}", ""},
		{"/api/v1/pods", "/api/v1/pods", ""},
		{"/apis/apps/v1/deployments", "/apis/apps/v1/deployments", ""},
		{"/apis/apps/v1", "/apis/apps/v1", ""},
		{"/apis/apps", "/apis/apps", ""},
		{"/api/v1/namespaces/ns/pods/p/", "/api/v1/namespaces/{namespace}/pods/{name}", "ns"},
		{"/apis/g/v1/namespaces/ns/r/n/sub/more", "/apis/g/v1/namespaces/{namespace}/r/{name}/sub/more", "ns"},
		{"/version", "/version", ""},
		{"/", "/", ""},
		{"", "", ""},
	} {
		got, ns := spanName("PATCH", tc.path)
		if got != "PATCH "+tc.want || ns != tc.ns {
			t.Errorf("spanName(PATCH, %q) = %q, %q; want %q, %q", tc.path, got, ns, "PATCH "+tc.want, tc.ns)
		}
	}
}

// TestMemoryEvictsTheLeastRecentlyUsed: the bound holds and the entry
// used last survives.
func TestMemoryEvictsTheLeastRecentlyUsed(t *testing.T) {
	var m memory
	a, b, c := nsName("a"), nsName("b"), nsName("c")
	m.add(a, 2)
	m.add(b, 2)
	m.get(a) // a is now the most recently used
	m.add(c, 2)
	if m.peek(b) != nil || m.peek(a) == nil || m.peek(c) == nil || len(m.byKey) != 2 {
		t.Errorf("after a, b, use of a, c with room for 2: want a and c, have %v", m.byKey)
	}
	m.remove(a)
	m.remove(c)
	if m.head != nil || m.tail != nil || len(m.byKey) != 0 {
		t.Error("the list is not empty after removing every entry")
	}
}
