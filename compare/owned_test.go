package compare_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reconcilekit/reconcilekit/compare"
)

func webContainer(d *appsv1.Deployment) *corev1.Container {
	for i, c := range d.Spec.Template.Spec.Containers {
		if c.Name == "web" {
			return &d.Spec.Template.Spec.Containers[i]
		}
	}
	return nil
}

// TestDiffWithoutAFieldOwnerComparesOnlyWhatDesiredSets: Diff writes
// nothing and needs no name; without one, no managedFields entry is ours,
// so what a field manager wrote before is no drift.
func TestDiffWithoutAFieldOwnerComparesOnlyWhatDesiredSets(t *testing.T) {
	desired := webDeployment()
	webContainer(desired).Env = nil
	live := webDeployment()
	webContainer(live).Env = []corev1.EnvVar{{Name: "LOG", Value: "debug"}}
	live.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "web-controller", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps/v1", FieldsType: "FieldsV1",
		FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{"f:env":{"k:{\"name\":\"LOG\"}":{".":{},"f:name":{},"f:value":{}}}}}}}}}`)}}
	for _, tt := range []struct {
		name string
		opts []compare.Option
		want []string
	}{
		{name: "no field owner"},
		{name: "an empty one", opts: []compare.Option{compare.WithFieldOwner("")}},
		{name: "another's", opts: []compare.Option{compare.WithFieldOwner("other")}},
		{name: "the writer's", opts: []compare.Option{compare.WithFieldOwner("web-controller")}, want: []string{"spec.template.spec.containers[name=web].env[name=LOG]"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := compare.Diff(desired, live, tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got.Paths); diff != "" {
				t.Errorf("paths (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDiffFieldsWeWroteBefore covers the rules on objects as the API server
// returns them (their managedFields written down from envtest), without a
// server.
func TestDiffFieldsWeWroteBefore(t *testing.T) {
	const (
		// Created by "reconcilekit" (an Update): the env var LOG, the
		// label tier, and defaults.
		ours = `{"f:metadata":{"f:labels":{".":{},"f:app":{},"f:tier":{}}},"f:spec":{"f:progressDeadlineSeconds":{},"f:replicas":{},"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:env":{".":{},"k:{\"name\":\"LOG\"}":{".":{},"f:name":{},"f:value":{}},"k:{\"name\":\"MODE\"}":{".":{},"f:name":{},"f:value":{}}},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:resources":{".":{},"f:limits":{".":{},"f:cpu":{},"f:memory":{}}}}},"f:dnsPolicy":{}}}}}`
		// Applied by "reconcilekit": the same without defaults.
		applied = `{"f:metadata":{"f:labels":{"f:app":{},"f:tier":{}}},"f:spec":{"f:minReadySeconds":{},"f:replicas":{},"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:env":{"k:{\"name\":\"LOG\"}":{".":{},"f:name":{},"f:value":{}},"k:{\"name\":\"MODE\"}":{".":{},"f:name":{},"f:value":{}}},"f:image":{},"f:name":{}}}}}}}`
		// Another manager changed LOG's value.
		theirs = `{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{"f:env":{"k:{\"name\":\"LOG\"}":{"f:value":{}}}}}}}}}`
	)
	entry := func(manager, op, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationType(op), APIVersion: "apps/v1", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)}
	}
	desired := func() *appsv1.Deployment {
		d := webDeployment()
		d.Spec.Template.Spec.Containers = d.Spec.Template.Spec.Containers[:1]
		webContainer(d).Env = webContainer(d).Env[:1] // LOG dropped
		return d
	}
	live := func(entries ...metav1.ManagedFieldsEntry) *appsv1.Deployment {
		l := defaulted(webDeployment())
		l.Spec.Template.Spec.Containers = l.Spec.Template.Spec.Containers[:1]
		l.Labels = map[string]string{"app": "web", "tier": "front"}
		l.Spec.MinReadySeconds = 5
		l.ManagedFields = entries
		return l
	}
	const logPath = "spec.template.spec.containers[name=web].env[name=LOG]"
	tests := []struct {
		name      string
		live      *appsv1.Deployment
		opts      []compare.Option
		wantPaths []string // typed; unstructured content names map keys that are identifiers as fields
	}{
		{name: "another manager's fields are not ours", live: live(entry("kubectl", "Update", ours))},
		{
			name:      "Update: list elements and map entries we wrote are drift, defaulted struct fields are not",
			live:      live(entry(testOwner, "Update", ours)),
			wantPaths: []string{"metadata.labels[tier]", logPath},
		},
		{
			name:      "Apply: struct fields we applied are drift too",
			live:      live(entry(testOwner, "Apply", applied)),
			wantPaths: []string{"metadata.labels[tier]", "spec.minReadySeconds", logPath},
		},
		{
			name:      "WithFieldOwner names whose fields are ours",
			live:      live(entry("my-controller", "Update", ours)),
			opts:      []compare.Option{compare.WithFieldOwner("my-controller")},
			wantPaths: []string{"metadata.labels[tier]", logPath},
		},
		{
			name:      "what another manager owns beneath an element keeps it",
			live:      live(entry(testOwner, "Update", ours), entry("kubectl", "Update", theirs)),
			wantPaths: []string{"metadata.labels[tier]"},
		},
		{
			name: "a status entry and another apiVersion's entry are not the main resource's",
			live: func() *appsv1.Deployment {
				status, beta := entry(testOwner, "Update", ours), entry(testOwner, "Update", ours)
				status.Subresource, beta.APIVersion = "status", "apps/v1beta2"
				return live(status, beta)
			}(),
		},
		{name: "malformed fields remove nothing", live: live(entry(testOwner, "Update", `{"f:spec":[`))},
		{
			name:      "IgnorePaths reaches removals",
			live:      live(entry(testOwner, "Update", ours)),
			opts:      []compare.Option{compare.IgnorePaths("metadata.labels[tier]", "metadata.labels.tier")},
			wantPaths: []string{logPath},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, unstr := range []bool{false, true} {
				if unstr && !json.Valid(tt.live.ManagedFields[0].FieldsV1.GetRawBytes()) {
					continue // unstructured content holds managedFields decoded
				}
				var d, a any = desired(), tt.live
				if unstr {
					ud, ua := toUnstructured(t, desired()), toUnstructured(t, tt.live)
					ua.SetAPIVersion("apps/v1")
					ua.SetKind("Deployment")
					d, a = ud, ua
				}
				got, err := kdiff(d, a, append([]compare.Option{withOwner}, tt.opts...)...)
				if err != nil {
					t.Fatal(err)
				}
				want := tt.wantPaths
				if unstr {
					want = slices.Clone(want)
					for i := range want {
						want[i] = strings.ReplaceAll(want[i], "labels[tier]", "labels.tier")
					}
				}
				if diff := cmp.Diff(want, got.Paths); diff != "" {
					t.Errorf("unstructured=%v: paths (-want +got):\n%s\n%s", unstr, diff, got.Report)
				}
			}
		})
	}
}

// TestDiffPodRequestsCopiedFromLimitsAreDefaults: the server copies a Pod's
// limits into missing requests and records them as the creator's. The walk
// knows it only from the CopiedDefault rule of KubernetesRules, for objects
// whose kind it can tell (a scheme, or the object's own apiVersion and
// kind): without the rule, a request desired does not set is ours to drop.
func TestDiffPodRequestsCopiedFromLimitsAreDefaults(t *testing.T) {
	const created = `{"f:spec":{"f:containers":{"k:{\"name\":\"main\"}":{".":{},"f:name":{},"f:resources":{".":{},"f:limits":{".":{},"f:cpu":{}},"f:requests":{".":{},"f:cpu":{},"f:memory":{}}}}}}}`
	desired := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{
		Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
	}}}}}
	live := desired.DeepCopy()
	live.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: testOwner, Operation: "Update", APIVersion: "v1", FieldsV1: metav1.NewFieldsV1(created)}}
	live.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("1Gi")}
	withKind := live.DeepCopy()
	withKind.APIVersion, withKind.Kind = "v1", "Pod"
	rules := compare.Rules(compare.KubernetesRules()...)
	// The memory request was ours and has no limit: always drift. The cpu
	// request was copied from the limit: drift only without the rule.
	const cpu, memory = "spec.containers[name=main].resources.requests[cpu]", "spec.containers[name=main].resources.requests[memory]"
	// Unstructured content names its own kind, but without a scheme its Go
	// type is unknown, so requests is not known to be a map: only list
	// elements and labels and annotations count, as for a custom resource
	// (see "Fields we wrote before"). Its paths name map keys as fields.
	const ucpu, umemory = "spec.containers[name=main].resources.requests.cpu", "spec.containers[name=main].resources.requests.memory"
	tests := []struct {
		name        string
		actual      *corev1.Pod
		opts        []compare.Option
		want, wantU []string
	}{
		{"the built-in rules and a scheme", live, kube, []string{memory}, []string{umemory}},
		{"the rules and the object's own kind", withKind, []compare.Option{rules}, []string{memory}, nil},
		{"the rules, no way to tell a typed object's kind", live, []compare.Option{rules}, []string{cpu, memory}, nil},
		{"a scheme, no rules", live, kube[1:], []string{cpu, memory}, []string{ucpu, umemory}},
		{"a rule for another kind", live, []compare.Option{kube[1], compare.Rules(compare.CopiedDefault{APIVersion: "v1", Kind: "PodTemplate", From: "limits", To: "requests"})}, []string{cpu, memory}, []string{ucpu, umemory}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, unstr := range []bool{false, true} {
				var d, a any = desired, tt.actual
				if unstr {
					ud, ua := toUnstructured(t, desired), toUnstructured(t, live)
					ud.SetAPIVersion("v1")
					ud.SetKind("Pod")
					ua.SetAPIVersion("v1")
					ua.SetKind("Pod")
					d, a = ud, ua
				}
				got, err := compare.Diff(d, a, slices.Concat(tt.opts, []compare.Option{withOwner})...)
				if err != nil {
					t.Fatal(err)
				}
				want := tt.want
				if unstr {
					want = tt.wantU
				}
				if diff := cmp.Diff(want, got.Paths); diff != "" {
					t.Errorf("unstructured=%v: paths (-want +got):\n%s", unstr, diff)
				}
			}
		})
	}
}
