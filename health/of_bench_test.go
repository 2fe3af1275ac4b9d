package health_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/reconcilekit/reconcilekit/health"
)

// BenchmarkOf measures what saying a Deployment's health costs (the
// predicate does it twice per update event of a child, a parent once per
// child per reconcile): Of on the typed object and on unstructured
// content, beside kstatus, which reads unstructured content only, so that
// a typed object is converted first.
func BenchmarkOf(b *testing.B) {
	d := dep(2, 2, [4]int32{3, 3, 2, 2}, progressing, availableCond)
	u := unstructuredOf(b, d)
	b.Run("health.Of typed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := health.Of(d); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("health.Of unstructured", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := health.Of(u); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("kstatus.Compute unstructured", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := kstatus.Compute(u); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("kstatus.Compute typed (converted)", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(d)
			if err != nil {
				b.Fatal(err)
			}
			u.Object = m
			if _, err := kstatus.Compute(u); err != nil {
				b.Fatal(err)
			}
		}
	})
}
