package ownership_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/reconcilekit/reconcilekit/ownership"
)

// BenchmarkSetControllerAlreadySet measures the call every reconcile makes
// on a child it already controls.
func BenchmarkSetControllerAlreadySet(b *testing.B) {
	scheme := testScheme(b)
	owner := widget("ns", "owner", "uid-1")
	child := configMap("ns", "child")
	if err := ownership.SetController(owner, child, scheme); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := ownership.SetController(owner, child, scheme); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBaselineSetControllerReference is controllerutil's version of the
// same call.
func BenchmarkBaselineSetControllerReference(b *testing.B) {
	scheme := testScheme(b)
	owner := widget("ns", "owner", "uid-1")
	child := configMap("ns", "child")
	if err := controllerutil.SetControllerReference(owner, child, scheme); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := controllerutil.SetControllerReference(owner, child, scheme); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIsControlledBy runs on every child Prune and ListOwned look at.
func BenchmarkIsControlledBy(b *testing.B) {
	owner := widget("ns", "owner", "uid-1")
	child := configMap("ns", "child")
	if err := ownership.SetController(owner, child, testScheme(b)); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if !ownership.IsControlledBy(child, owner) {
			b.Fatal("not controlled")
		}
	}
}

// BenchmarkBaselineMetav1IsControlledBy is apimachinery's version.
func BenchmarkBaselineMetav1IsControlledBy(b *testing.B) {
	owner := widget("ns", "owner", "uid-1")
	child := configMap("ns", "child")
	if err := ownership.SetController(owner, child, testScheme(b)); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if !metav1.IsControlledBy(child, owner) {
			b.Fatal("not controlled")
		}
	}
}
