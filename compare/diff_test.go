package compare_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/reconcilekit/reconcilekit/compare"
)

// webDeployment is a realistic desired Deployment: two containers with
// ports, env and resource limits, nothing the server defaults.
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

// defaulted returns d as a server would return it: metadata filled in,
// defaults applied, quantities canonicalized, status set.
func defaulted(d *appsv1.Deployment) *appsv1.Deployment {
	a := d.DeepCopy()
	a.ResourceVersion = "42"
	a.UID = "0b1c"
	a.Generation = 1
	a.CreationTimestamp = metav1.Now()
	a.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "test"}}
	a.Spec.RevisionHistoryLimit = ptr.To[int32](10)
	a.Spec.ProgressDeadlineSeconds = ptr.To[int32](600)
	a.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
		MaxUnavailable: ptr.To(intstr.FromString("25%")), MaxSurge: ptr.To(intstr.FromString("25%")),
	}}
	ps := &a.Spec.Template.Spec
	ps.RestartPolicy = corev1.RestartPolicyAlways
	ps.TerminationGracePeriodSeconds = ptr.To[int64](30)
	ps.DNSPolicy = corev1.DNSClusterFirst
	ps.SchedulerName = "default-scheduler"
	ps.SecurityContext = &corev1.PodSecurityContext{}
	for i := range ps.Containers {
		c := &ps.Containers[i]
		c.ImagePullPolicy = corev1.PullIfNotPresent
		c.TerminationMessagePath = "/dev/termination-log"
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
		for j := range c.Ports {
			c.Ports[j].Protocol = corev1.ProtocolTCP
		}
		if mem, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
			c.Resources.Limits[corev1.ResourceMemory] = resource.MustParse(mem.String()) // canonical form
			c.Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: mem.DeepCopy()}
		}
	}
	a.Status = appsv1.DeploymentStatus{Replicas: 2, ObservedGeneration: 1}
	return a
}

func TestDiffTyped(t *testing.T) {
	tests := []struct {
		name      string
		desired   func(*appsv1.Deployment)
		actual    func(*appsv1.Deployment)
		opts      []compare.Option
		wantPaths []string
	}{
		{name: "server defaults, metadata and status are not drift"},
		{
			name:      "changed image is drift at the keyed container path",
			desired:   func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "nginx:1.26" },
			wantPaths: []string{"spec.template.spec.containers[name=web].image"},
		},
		{
			name: "reordered containers, env and ports are not drift",
			actual: func(a *appsv1.Deployment) {
				cs := a.Spec.Template.Spec.Containers
				cs[0], cs[1] = cs[1], cs[0]
				env := cs[1].Env
				env[0], env[1] = env[1], env[0]
			},
		},
		{
			name: "an element added by someone else to a keyed list is not drift",
			actual: func(a *appsv1.Deployment) {
				a.Spec.Template.Spec.Containers = append(a.Spec.Template.Spec.Containers, corev1.Container{Name: "injected", Image: "proxy"})
			},
		},
		{
			name: "an extra element is drift when desired owns the list",
			actual: func(a *appsv1.Deployment) {
				a.Spec.Template.Spec.Containers = append(a.Spec.Template.Spec.Containers, corev1.Container{Name: "injected", Image: "proxy"})
			},
			opts:      []compare.Option{compare.Own("spec.template.spec.containers")},
			wantPaths: []string{"spec.template.spec.containers[name=injected]"},
		},
		{
			name: "ports with the same number and different protocols pair by protocol",
			desired: func(d *appsv1.Deployment) {
				d.Spec.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{
					{Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP},
					{Name: "dns-tcp", ContainerPort: 53},
				}
			},
			actual: func(a *appsv1.Deployment) {
				a.Spec.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{
					{Name: "dns-tcp", ContainerPort: 53, Protocol: corev1.ProtocolTCP},
					{Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP},
				}
			},
		},
		{
			name: "a renamed port among two with the same number is drift of that one",
			desired: func(d *appsv1.Deployment) {
				d.Spec.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{
					{Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP},
					{Name: "dns-tcp", ContainerPort: 53},
				}
			},
			actual: func(a *appsv1.Deployment) {
				a.Spec.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{
					{Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP},
					{Name: "tcp", ContainerPort: 53, Protocol: corev1.ProtocolTCP},
				}
			},
			wantPaths: []string{"spec.template.spec.containers[name=web].ports[containerPort=53].name"},
		},
		{
			name: "tolerations the server added to an unkeyed list are not drift",
			desired: func(d *appsv1.Deployment) {
				d.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
			},
			actual: func(a *appsv1.Deployment) {
				a.Spec.Template.Spec.Tolerations = []corev1.Toleration{
					{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
					{Key: "dedicated", Operator: corev1.TolerationOpExists},
				}
			},
		},
		{
			name: "a desired toleration missing from actual is drift of the list",
			desired: func(d *appsv1.Deployment) {
				d.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
			},
			actual: func(a *appsv1.Deployment) {
				a.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "other", Operator: corev1.TolerationOpExists}}
			},
			wantPaths: []string{"spec.template.spec.tolerations"},
		},
		{
			name: "ignore rules reach inside the elements of an unkeyed list",
			desired: func(d *appsv1.Deployment) {
				d.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists, TolerationSeconds: ptr.To[int64](60)}}
			},
			actual: func(a *appsv1.Deployment) {
				a.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists, TolerationSeconds: ptr.To[int64](300)}}
			},
			opts: []compare.Option{compare.IgnorePaths("spec.template.spec.tolerations[*].tolerationSeconds")},
		},
		{
			name: "an owned unkeyed list is compared whole",
			desired: func(d *appsv1.Deployment) {
				d.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
			},
			actual: func(a *appsv1.Deployment) {
				a.Spec.Template.Spec.Tolerations = []corev1.Toleration{
					{Key: "dedicated", Operator: corev1.TolerationOpExists},
					{Key: "extra", Operator: corev1.TolerationOpExists},
				}
			},
			opts:      []compare.Option{compare.Own("spec.template.spec.tolerations")},
			wantPaths: []string{"spec.template.spec.tolerations"},
		},
		{
			name:      "a desired element missing from actual is drift",
			actual:    func(a *appsv1.Deployment) { a.Spec.Template.Spec.Containers = a.Spec.Template.Spec.Containers[:1] },
			wantPaths: []string{"spec.template.spec.containers[name=sidecar]"},
		},
		{
			name:      "ports are matched by containerPort",
			desired:   func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[1].Ports[0].ContainerPort = 9091 },
			wantPaths: []string{"spec.template.spec.containers[name=sidecar].ports[containerPort=9091]"},
		},
		{
			name:      "env value change is drift at the env name",
			actual:    func(a *appsv1.Deployment) { a.Spec.Template.Spec.Containers[0].Env[1].Value = "debug" },
			wantPaths: []string{"spec.template.spec.containers[name=web].env[name=LOG].value"},
		},
		{
			name:      "unkeyed lists compare as a whole, in order",
			actual:    func(a *appsv1.Deployment) { a.Spec.Template.Spec.Containers[0].Args = []string{"daemon off;", "-g"} },
			wantPaths: []string{"spec.template.spec.containers[name=web].args[0]", "spec.template.spec.containers[name=web].args[1]"},
		},
		{
			name:      "an unkeyed list of another length is drift of the list",
			actual:    func(a *appsv1.Deployment) { a.Spec.Template.Spec.Containers[0].Args = []string{"-g"} },
			wantPaths: []string{"spec.template.spec.containers[name=web].args"},
		},
		{
			name:   "extra labels in actual are not drift",
			actual: func(a *appsv1.Deployment) { a.Labels = map[string]string{"app": "web", "team": "x"} },
		},
		{
			name:      "extra labels are drift when desired owns the map",
			actual:    func(a *appsv1.Deployment) { a.Labels = map[string]string{"app": "web", "team": "x"} },
			opts:      []compare.Option{compare.Own("metadata.labels")},
			wantPaths: []string{"metadata.labels[team]"},
		},
		{
			name:      "a missing or changed label is drift",
			desired:   func(d *appsv1.Deployment) { d.Labels = map[string]string{"app": "web", "tier": "front"} },
			wantPaths: []string{"metadata.labels[tier]"},
		},
		{
			name: "a quantity of another value is drift",
			desired: func(d *appsv1.Deployment) {
				d.Spec.Template.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("2Gi")
			},
			wantPaths: []string{"spec.template.spec.containers[name=web].resources.limits[memory]"},
		},
		{
			name: "status is drift only with IncludeStatus",
			desired: func(d *appsv1.Deployment) {
				d.Status.Replicas = 3
			},
		},
		{
			name:      "status is drift with IncludeStatus",
			desired:   func(d *appsv1.Deployment) { d.Status.Replicas = 3 },
			opts:      []compare.Option{compare.IncludeStatus()},
			wantPaths: []string{"status.replicas"},
		},
		{
			name:   "a bool desired leaves false is not drift",
			actual: func(a *appsv1.Deployment) { a.Spec.Template.Spec.HostNetwork = true },
		},
		{
			name:      "a pointer desired sets is compared even at zero",
			desired:   func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](0) },
			wantPaths: []string{"spec.replicas"},
		},
		{
			name:    "IgnorePaths with a wildcard skips every element's field",
			desired: func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "nginx:1.26" },
			opts:    []compare.Option{compare.IgnorePaths("spec.template.spec.containers[*].image")},
		},
		{
			name:    "CmpOptions overrule a difference",
			desired: func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "NGINX:1.25" },
			opts: []compare.Option{compare.CmpOptions(cmp.Comparer(func(x, y string) bool {
				return strings.EqualFold(x, y)
			}))},
		},
		{
			name: "owner references are ignored by default",
			actual: func(a *appsv1.Deployment) {
				a.OwnerReferences = []metav1.OwnerReference{{UID: "1", Name: "o", Kind: "K", APIVersion: "v1"}}
			},
			desired: func(d *appsv1.Deployment) {
				d.OwnerReferences = []metav1.OwnerReference{{UID: "2", Name: "p", Kind: "K", APIVersion: "v1"}}
			},
		},
		{
			name: "owner references are matched by uid with IncludeOwnerReferences",
			actual: func(a *appsv1.Deployment) {
				a.OwnerReferences = []metav1.OwnerReference{{UID: "1", Name: "o", Kind: "K", APIVersion: "v1"}}
			},
			desired: func(d *appsv1.Deployment) {
				d.OwnerReferences = []metav1.OwnerReference{{UID: "2", Name: "p", Kind: "K", APIVersion: "v1"}}
			},
			opts:      []compare.Option{compare.IncludeOwnerReferences()},
			wantPaths: []string{"metadata.ownerReferences[uid=2]"},
		},
		{
			name: "ListKey matches an unkeyed typed list by a field",
			desired: func(d *appsv1.Deployment) {
				d.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "a", Value: "1"}, {Key: "b", Value: "2"}}
			},
			actual: func(a *appsv1.Deployment) {
				a.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "b", Value: "2"}, {Key: "a", Value: "1"}}
			},
			opts: []compare.Option{compare.ListKey("spec.template.spec.tolerations", "key")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			desired := webDeployment()
			if tt.desired != nil {
				tt.desired(desired)
			}
			actual := defaulted(webDeployment())
			if tt.actual != nil {
				tt.actual(actual)
			}
			got, err := kdiff(desired, actual, tt.opts...)
			if err != nil {
				t.Fatalf("Diff: %v", err)
			}
			if diff := cmp.Diff(tt.wantPaths, got.Paths); diff != "" {
				t.Errorf("paths (-want +got):\n%s\nreport:\n%s", diff, got.Report)
			}
			if got.Equal != (len(tt.wantPaths) == 0) {
				t.Errorf("Equal = %v, want %v", got.Equal, len(tt.wantPaths) == 0)
			}
			if !got.Equal && got.Report == "" {
				t.Errorf("drift without a report")
			}
		})
	}
}

func TestDiffQuantityAndTimeCompareSemantically(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 600_000_000, time.UTC)
	type obj struct {
		metav1.ObjectMeta `json:"metadata"`
		Size              resource.Quantity  `json:"size"`
		At                metav1.Time        `json:"at"`
		Micro             metav1.MicroTime   `json:"micro"`
		Opt               *resource.Quantity `json:"opt"`
	}
	desired := &obj{Size: resource.MustParse("1Gi"), At: metav1.NewTime(now), Micro: metav1.NewMicroTime(now.Add(100 * time.Nanosecond)), Opt: ptr.To(resource.MustParse("0"))}
	actual := &obj{Size: resource.MustParse("1024Mi"), At: metav1.NewTime(now.Truncate(time.Second)), Micro: metav1.NewMicroTime(now), Opt: ptr.To(resource.MustParse("0m"))}
	got, err := kdiff(desired, actual)
	if err != nil || !got.Equal {
		t.Fatalf("Diff = %v, %v; want equal: 1Gi = 1024Mi, times equal at wire precision", got, err)
	}
	actual.At = metav1.NewTime(now.Add(time.Second))
	actual.Opt = ptr.To(resource.MustParse("1"))
	got, err = kdiff(desired, actual)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"at", "opt"}, got.Paths); diff != "" {
		t.Errorf("paths (-want +got):\n%s", diff)
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

func TestDiffUnstructured(t *testing.T) {
	tests := []struct {
		name      string
		desired   map[string]any
		actual    map[string]any
		opts      []compare.Option
		wantPaths []string
	}{
		{
			name:    "lists of named objects match by name",
			desired: map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "a", "image": "x"}, map[string]any{"name": "b", "image": "y"}}}},
			actual:  map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "b", "image": "y", "pull": "Always"}, map[string]any{"name": "a", "image": "x"}}}},
		},
		{
			name:    "an unkeyed list of objects the server extended is not drift",
			desired: map[string]any{"spec": map[string]any{"tolerations": []any{map[string]any{"key": "dedicated", "operator": "Exists"}}}},
			actual: map[string]any{"spec": map[string]any{"tolerations": []any{
				map[string]any{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": int64(300)},
				map[string]any{"key": "dedicated", "operator": "Exists"},
			}}},
		},
		{
			name:      "an unkeyed list of objects lacking a desired element is drift of the list",
			desired:   map[string]any{"spec": map[string]any{"tolerations": []any{map[string]any{"key": "dedicated", "operator": "Exists"}}}},
			actual:    map[string]any{"spec": map[string]any{"tolerations": []any{map[string]any{"key": "other", "operator": "Exists"}}}},
			wantPaths: []string{"spec.tolerations"},
		},
		{
			name:      "a changed field in a named element has a keyed path",
			desired:   map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "a", "image": "x2"}}}},
			actual:    map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "a", "image": "x"}}}},
			wantPaths: []string{"spec.containers[name=a].image"},
		},
		{
			name:      "a present zero value is compared",
			desired:   map[string]any{"spec": map[string]any{"replicas": int64(0), "paused": false}},
			actual:    map[string]any{"spec": map[string]any{"replicas": int64(3), "paused": false}},
			wantPaths: []string{"spec.replicas"},
		},
		{
			name:    "null in desired is not set",
			desired: map[string]any{"spec": map[string]any{"replicas": nil}},
			actual:  map[string]any{"spec": map[string]any{"replicas": int64(3)}},
		},
		{
			name:    "numbers compare by value across int64 and float64",
			desired: map[string]any{"spec": map[string]any{"replicas": int64(2)}},
			actual:  map[string]any{"spec": map[string]any{"replicas": float64(2)}},
		},
		{
			name:      "integers above 2^53 compare exactly",
			desired:   map[string]any{"spec": map[string]any{"id": int64(1<<53 + 1)}},
			actual:    map[string]any{"spec": map[string]any{"id": int64(1 << 53)}},
			wantPaths: []string{"spec.id"},
		},
		{
			name:    "a float32 built by hand is a number like any other",
			desired: map[string]any{"spec": map[string]any{"replicas": float32(2), "ratio": float32(0.5)}},
			actual:  map[string]any{"spec": map[string]any{"replicas": int64(2), "ratio": float64(0.5)}},
		},
		{
			name:    "a float32 limit compares as a quantity",
			desired: map[string]any{"spec": map[string]any{"resources": map[string]any{"limits": map[string]any{"cpu": float32(2), "memory": int32(1024)}}}},
			actual:  map[string]any{"spec": map[string]any{"resources": map[string]any{"limits": map[string]any{"cpu": "2", "memory": "1Ki"}}}},
		},
		{
			name:    "resource limits compare as quantities",
			desired: map[string]any{"spec": map[string]any{"resources": map[string]any{"limits": map[string]any{"memory": "1024Mi", "cpu": int64(2)}}}},
			actual:  map[string]any{"spec": map[string]any{"resources": map[string]any{"limits": map[string]any{"memory": "1Gi", "cpu": "2"}}}},
		},
		{
			name:      "other strings never compare as quantities",
			desired:   map[string]any{"spec": map[string]any{"version": "1.10"}},
			actual:    map[string]any{"spec": map[string]any{"version": "1.1"}},
			wantPaths: []string{"spec.version"},
		},
		{
			name:      "ListKey declares the key of a list",
			desired:   map[string]any{"spec": map[string]any{"ports": []any{map[string]any{"port": int64(80), "target": int64(8080)}, map[string]any{"port": int64(443), "target": int64(8443)}}}},
			actual:    map[string]any{"spec": map[string]any{"ports": []any{map[string]any{"port": int64(443), "target": int64(8443)}, map[string]any{"port": int64(80), "target": int64(8081)}}}},
			opts:      []compare.Option{compare.ListKey("spec.ports", "port")},
			wantPaths: []string{"spec.ports[port=80].target"},
		},
		{
			name:      "label keys that are not identifiers are bracketed",
			desired:   map[string]any{"metadata": map[string]any{"name": "x", "labels": map[string]any{"app.kubernetes.io/name": "web"}}},
			actual:    map[string]any{"metadata": map[string]any{"name": "x", "resourceVersion": "9", "labels": map[string]any{}}},
			wantPaths: []string{"metadata.labels[app.kubernetes.io/name]"},
		},
		{
			name:      "owned map in unstructured",
			desired:   map[string]any{"data": map[string]any{"a": "1"}},
			actual:    map[string]any{"data": map[string]any{"a": "1", "b": "2"}},
			opts:      []compare.Option{compare.Own("data")},
			wantPaths: []string{"data.b"},
		},
		{
			name:    "an owned empty map equals an absent one",
			desired: map[string]any{"data": map[string]any{}},
			actual:  map[string]any{"kind": "ConfigMap"},
			opts:    []compare.Option{compare.Own("data")},
		},
		{
			name:      "an owned empty map is drift against keys",
			desired:   map[string]any{"data": map[string]any{}},
			actual:    map[string]any{"data": map[string]any{"x": "1"}},
			opts:      []compare.Option{compare.Own("data")},
			wantPaths: []string{"data.x"},
		},
		{
			name:    "status ignored by default in unstructured",
			desired: map[string]any{"status": map[string]any{"phase": "Done"}},
			actual:  map[string]any{"status": map[string]any{"phase": "Running"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := kdiff(&unstructured.Unstructured{Object: tt.desired}, &unstructured.Unstructured{Object: tt.actual}, tt.opts...)
			if err != nil {
				t.Fatalf("Diff: %v", err)
			}
			if diff := cmp.Diff(tt.wantPaths, got.Paths); diff != "" {
				t.Errorf("paths (-want +got):\n%s\nreport:\n%s", diff, got.Report)
			}
			if got.Equal != (len(tt.wantPaths) == 0) {
				t.Errorf("Equal = %v, want %v", got.Equal, len(tt.wantPaths) == 0)
			}
		})
	}
}

func TestDiffTypedAgainstUnstructuredUsesTheSamePaths(t *testing.T) {
	desired := webDeployment()
	desired.Spec.Template.Spec.Containers[0].Image = "nginx:1.26"
	actual := toUnstructured(t, defaulted(webDeployment()))
	got, err := kdiff(desired, actual)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"spec.template.spec.containers[name=web].image"}, got.Paths); diff != "" {
		t.Errorf("paths (-want +got):\n%s\n%s", diff, got.Report)
	}
}

func TestDiffReportShowsActualThenDesired(t *testing.T) {
	image := webDeployment()
	image.Spec.Template.Spec.Containers[0].Image = "nginx:1.26"
	env := webDeployment()
	env.Spec.Template.Spec.Containers[0].Env = append(env.Spec.Template.Spec.Containers[0].Env, corev1.EnvVar{Name: "TRACE", Value: "1"})
	tests := []struct {
		name            string
		desired, actual any
		opts            []compare.Option
		want            string
	}{
		{
			name:    "a changed value: actual, then desired, as JSON",
			desired: image, actual: defaulted(webDeployment()),
			want: "spec.template.spec.containers[name=web].image:\n- \"nginx:1.25\"\n+ \"nginx:1.26\"\n",
		},
		{
			name:    "a value actual lacks: only the desired line",
			desired: env, actual: defaulted(webDeployment()),
			want: "spec.template.spec.containers[name=web].env[name=TRACE]:\n+ {\"name\":\"TRACE\",\"value\":\"1\"}\n",
		},
		{
			name:    "a value JSON cannot encode: Go syntax",
			desired: &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"z": complex(1, 2)}}},
			actual:  &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"z": complex(3, 4)}}},
			want:    "spec.z:\n- (3+4i)\n+ (1+2i)\n",
		},
		{
			name:    "a null value an owned map should not have: null, not nothing",
			desired: &unstructured.Unstructured{Object: map[string]any{"data": map[string]any{"a": "1"}}},
			actual:  &unstructured.Unstructured{Object: map[string]any{"data": map[string]any{"a": "1", "b": nil}}},
			opts:    []compare.Option{compare.Own("data")},
			want:    "data.b:\n- null\n",
		},
		{
			name:    "characters HTML escapes: as written",
			desired: &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"command": "make && curl 'http://x/?a=1&b=<2>'"}}},
			actual:  &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"command": "make"}}},
			want:    "spec.command:\n- \"make\"\n+ \"make && curl 'http://x/?a=1&b=<2>'\"\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := kdiff(tt.desired, tt.actual, tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got.Report); diff != "" {
				t.Errorf("report (-want +got):\n%s", diff)
			}
			if got.String() != got.Report {
				t.Errorf("String() = %q, want the report", got.String())
			}
		})
	}
}

func TestDiffBadInput(t *testing.T) {
	tests := []struct {
		name            string
		desired, actual any
		opts            []compare.Option
		wantErr         error
	}{
		{name: "nil", desired: nil, actual: webDeployment(), wantErr: compare.ErrNotComparable},
		{name: "nil pointer", desired: (*appsv1.Deployment)(nil), actual: webDeployment(), wantErr: compare.ErrNotComparable},
		{name: "different types", desired: webDeployment(), actual: &corev1.Service{}, wantErr: compare.ErrNotComparable},
		{name: "unstructured against a non-struct", desired: &unstructured.Unstructured{}, actual: "x", wantErr: compare.ErrNotComparable},
		{name: "empty ignore path", desired: webDeployment(), actual: webDeployment(), opts: []compare.Option{compare.IgnorePaths("")}, wantErr: compare.ErrInvalidPath},
		{name: "unbalanced bracket", desired: webDeployment(), actual: webDeployment(), opts: []compare.Option{compare.Own("metadata.labels[x")}, wantErr: compare.ErrInvalidPath},
		{name: "empty list key", desired: webDeployment(), actual: webDeployment(), opts: []compare.Option{compare.ListKey("spec.x", "")}, wantErr: compare.ErrInvalidPath},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := kdiff(tt.desired, tt.actual, tt.opts...)
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			}
		})
	}
}
