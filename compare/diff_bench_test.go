package compare_test

import (
	"os"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"

	"github.com/reconcilekit/reconcilekit/compare"
)

// defaultedFile is webDeployment as kube-apiserver 1.37 returned it after
// package drift's Ensure created it (so its managedFields hold our field
// owner's Update entry, defaults included): captured once from envtest so
// the benchmarks need no server. Package drift's
// TestDefaultedTestdataIsWhatTheServerReturns, where the tests have an API
// server, checks it is still what the server returns.
const defaultedFile = "testdata/deployment-defaulted.yaml"

func loadDefaulted(tb testing.TB) *appsv1.Deployment {
	tb.Helper()
	b, err := os.ReadFile(defaultedFile)
	if err != nil {
		tb.Fatal(err)
	}
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict(b, &d); err != nil {
		tb.Fatal(err)
	}
	return &d
}

// benchInputs returns the desired Deployment, its server-defaulted form, and
// the desired form with the image changed.
func benchInputs(tb testing.TB) (desired, defaultedLive, changed *appsv1.Deployment) {
	desired = webDeployment()
	defaultedLive = loadDefaulted(tb)
	changed = webDeployment()
	changed.Spec.Template.Spec.Containers[0].Image = "nginx:1.26"
	return desired, defaultedLive, changed
}

// TestBenchmarkVerdicts records what each compared method decides on the
// benchmark inputs, so what the package doc says of them is a fact.
func TestBenchmarkVerdicts(t *testing.T) {
	desired, live, changed := benchInputs(t)
	got, err := kdiff(desired, live, withOwner)
	if err != nil || !got.Equal {
		t.Errorf("Diff(desired, defaulted) = %v, %v; want equal", got, err)
	}
	if got, _ := kdiff(changed, live, withOwner); got.Equal {
		t.Errorf("Diff(changed, defaulted) is equal, want drift")
	}
	if !equality.Semantic.DeepDerivative(desired.Spec, live.Spec) {
		t.Errorf("DeepDerivative(desired, defaulted) = false, want true")
	}
	if equality.Semantic.DeepDerivative(changed.Spec, live.Spec) {
		t.Errorf("DeepDerivative(changed, defaulted) = true, want false")
	}
	if reflect.DeepEqual(desired.Spec, live.Spec) {
		t.Errorf("reflect.DeepEqual(desired, defaulted) = true, want false: defaults differ")
	}
	if cmp.Equal(desired.Spec, live.Spec, cmpopts.EquateEmpty()) {
		t.Errorf("cmp.Equal(desired, defaulted) = true, want false: defaults differ")
	}
}

var sink any

// BenchmarkCompareEqual: desired against its server-defaulted form, which
// every reconcile of a converged object does.
func BenchmarkCompareEqual(b *testing.B) {
	desired, live, _ := benchInputs(b)
	benchCompare(b, desired, live)
}

// BenchmarkCompareChangedImage: desired with another image against the
// defaulted form; Diff also explains the drift.
func BenchmarkCompareChangedImage(b *testing.B) {
	_, live, changed := benchInputs(b)
	benchCompare(b, changed, live)
}

func benchCompare(b *testing.B, desired, live *appsv1.Deployment) {
	// What a drift Writer passes: the built-in rules, a scheme, its field
	// owner; built once, as a Writer's are.
	opts := append(kube[:len(kube):len(kube)], withOwner)
	b.Run("compare.Diff", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c, err := compare.Diff(desired, live, opts...)
			if err != nil {
				b.Fatal(err)
			}
			sink = c.Report
		}
	})
	b.Run("compare.Diff/spec-only", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c, err := compare.Diff(&desired.Spec, &live.Spec, opts...)
			if err != nil {
				b.Fatal(err)
			}
			sink = c.Report
		}
	})
	// The live object's managedFields hold our field owner's entry, so
	// compare.Diff also looks for fields we wrote before; without it:
	notOurs := live.DeepCopy()
	notOurs.ManagedFields = nil
	b.Run("compare.Diff/no-managedFields", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c, err := compare.Diff(desired, notOurs, opts...)
			if err != nil {
				b.Fatal(err)
			}
			sink = c.Report
		}
	})
	ud, ul := toUnstructured(b, desired), toUnstructured(b, live)
	ud.SetAPIVersion("apps/v1")
	ud.SetKind("Deployment")
	ul.SetAPIVersion("apps/v1")
	ul.SetKind("Deployment")
	b.Run("compare.Diff/unstructured", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c, err := compare.Diff(ud, ul, opts...)
			if err != nil {
				b.Fatal(err)
			}
			sink = c.Report
		}
	})
	b.Run("equality.Semantic.DeepDerivative", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sink = equality.Semantic.DeepDerivative(desired.Spec, live.Spec)
		}
	})
	b.Run("reflect.DeepEqual", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sink = reflect.DeepEqual(desired.Spec, live.Spec)
		}
	})
	b.Run("cmp.Equal+EquateEmpty", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sink = cmp.Equal(desired.Spec, live.Spec, cmpopts.EquateEmpty())
		}
	})
	b.Run("cmp.Diff", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sink = cmp.Diff(live.Spec, desired.Spec)
		}
	})
}
