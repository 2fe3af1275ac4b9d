package diet_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reconcilekit/reconcilekit/diet"
)

// BenchmarkManagedFields is the cost of the diet's managedFields transform
// on one object as an informer hands it over: the operator's entry, the
// creator's, another manager's beneath the operator's container (parsed to
// be told apart), a label both set, and two status entries.
//
//	go test -run '^$' -bench ManagedFields ./diet/
func BenchmarkManagedFields(b *testing.B) {
	in := []metav1.ManagedFieldsEntry{
		entry("kubectl-create", update, creator), entry(owner, update, ours), entry("injector", update, sidecarEnv),
		entry("kubectl-label", update, sameLabel), status(owner, ourStatus), status("kubelet", kubelet),
	}
	transform, err := diet.ManagedFields(owner)
	if err != nil {
		b.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	entries := make([]metav1.ManagedFieldsEntry, len(in))
	for b.Loop() {
		copy(entries, in)
		pod.ManagedFields = entries
		if _, err := transform(pod); err != nil {
			b.Fatal(err)
		}
	}
	if got := len(pod.ManagedFields); got != 3 {
		b.Fatalf("kept %d entries, want 3 (ours, the injector's, kubectl-label's)", got)
	}
}
