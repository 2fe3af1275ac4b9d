package drift_test

import (
	"flag"
	"os"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/reconcilekit/reconcilekit/drift"
)

// defaultedFile is webDeployment as kube-apiserver 1.37 returned it after
// Ensure created it (so its managedFields hold our field owner's Update
// entry, defaults included): captured once from envtest so the benchmarks
// need no server.
const defaultedFile = "testdata/deployment-defaulted.yaml"

var update = flag.Bool("update", false, "rewrite "+defaultedFile+" from the test API server")

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

// TestDefaultedTestdataIsWhatTheServerReturns keeps the benchmark input
// honest: the stored spec and our field owner's managedFields must be
// exactly what the API server makes of webDeployment created by Ensure
// today. Run with -update to refresh it.
func TestDefaultedTestdataIsWhatTheServerReturns(t *testing.T) {
	c := env.Client(t)
	ctx := t.Context()
	d := webDeployment()
	d.Namespace = env.Namespace(t)
	if _, err := drift.Ensure(ctx, c, d, withOwner); err != nil {
		t.Fatal(err)
	}
	var live appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKeyFromObject(d), &live); err != nil {
		t.Fatal(err)
	}
	live.Namespace = "default"
	if *update {
		b, err := yaml.Marshal(&live)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(defaultedFile, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stored := loadDefaulted(t)
	if diff := cmp.Diff(stored.Spec, live.Spec); diff != "" {
		t.Errorf("%s is stale (-stored +server); run go test -run %s -update:\n%s", defaultedFile, t.Name(), diff)
	}
	fields := func(d *appsv1.Deployment) []string {
		var out []string
		for _, mf := range d.ManagedFields {
			out = append(out, mf.Manager+" "+string(mf.Operation)+" "+mf.FieldsV1.GetRawString())
		}
		return out
	}
	if diff := cmp.Diff(fields(stored), fields(&live)); diff != "" || len(stored.ManagedFields) != 1 || stored.ManagedFields[0].Manager != testOwner {
		t.Errorf("%s has stale managedFields (-stored +server), want only %s's; run go test -run %s -update:\n%s", defaultedFile, testOwner, t.Name(), diff)
	}
	if reflect.DeepEqual(webDeployment().Spec, stored.Spec) {
		t.Errorf("the stored form equals the desired form: the server applied no defaults?")
	}
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
	got, err := drift.Diff(desired, live, withOwner)
	if err != nil || !got.Equal {
		t.Errorf("Diff(desired, defaulted) = %v, %v; want equal", got, err)
	}
	if got, _ := drift.Diff(changed, live, withOwner); got.Equal {
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
	b.Run("drift.Diff", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c, err := drift.Diff(desired, live, withOwner)
			if err != nil {
				b.Fatal(err)
			}
			sink = c.Report
		}
	})
	b.Run("drift.Diff/spec-only", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c, err := drift.Diff(&desired.Spec, &live.Spec, withOwner)
			if err != nil {
				b.Fatal(err)
			}
			sink = c.Report
		}
	})
	// The live object's managedFields hold our field owner's entry, so
	// drift.Diff also looks for fields we wrote before; without it:
	notOurs := live.DeepCopy()
	notOurs.ManagedFields = nil
	b.Run("drift.Diff/no-managedFields", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c, err := drift.Diff(desired, notOurs, withOwner)
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
	b.Run("drift.Diff/unstructured", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c, err := drift.Diff(ud, ul, withOwner)
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
