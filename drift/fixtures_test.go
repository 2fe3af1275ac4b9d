package drift_test

import (
	"flag"
	"os"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/reconcilekit/reconcilekit/drift"
)

// webDeployment is a realistic desired Deployment: two containers with
// ports, env and resource limits, nothing the server defaults. It is the
// same as package compare's test of that name: the desired form of its
// benchmark inputs, which TestDefaultedTestdataIsWhatTheServerReturns
// checks against the server.
func webDeployment() *appsv1.Deployment {
	labels := map[string]string{"app": "web"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{
					{
						Name:  "web",
						Image: "nginx:1.25",
						Args:  []string{"-g", "daemon off;"},
						Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
						Env:   []corev1.EnvVar{{Name: "MODE", Value: "prod"}, {Name: "LOG", Value: "info"}},
						Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
							corev1.ResourceCPU:    resource.MustParse("500m"),
							corev1.ResourceMemory: resource.MustParse("1024Mi"),
						}},
					},
					{
						Name:  "sidecar",
						Image: "busybox:1.36",
						Ports: []corev1.ContainerPort{{ContainerPort: 9090}},
					},
				}},
			},
		},
	}
}

func toUnstructured(t testing.TB, obj runtime.Object) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

// defaultedFile is webDeployment as kube-apiserver 1.37 returned it after
// Ensure created it (so its managedFields hold our field owner's Update
// entry, defaults included): captured once from envtest so that package
// compare's benchmarks and fuzz tests need no server. It is checked here,
// where the tests have one.
const defaultedFile = "../compare/testdata/deployment-defaulted.yaml"

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
	if _, err := drift.NewWriter(c, testOwner).Ensure(ctx, d); err != nil {
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
