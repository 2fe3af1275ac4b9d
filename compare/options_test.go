package compare_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reconcilekit/reconcilekit/compare"
	"github.com/reconcilekit/reconcilekit/internal/managedfields"
)

// TestOwnMatchesAKeyedListByKeyAndAnyOtherListInOrder: Own makes the
// elements actual has beyond desired's drift, and does not change how
// elements pair up. An owned keyed list (env by name) is still matched by
// key, so another order is no drift; an owned list without a key
// (tolerations, args) is one value, compared whole and in order.
func TestOwnMatchesAKeyedListByKeyAndAnyOtherListInOrder(t *testing.T) {
	const envPath, tolPath, argsPath = "spec.template.spec.containers[name=web].env", "spec.template.spec.tolerations", "spec.template.spec.containers[name=web].args"
	base := func(mutate func(d *appsv1.Deployment)) *appsv1.Deployment {
		d := webDeployment()
		d.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "a"}, {Key: "b"}}
		mutate(d)
		return d
	}
	tests := []struct {
		name   string
		actual *appsv1.Deployment
		own    string
		want   []string
	}{
		{
			name:   "keyed, another order",
			actual: base(func(d *appsv1.Deployment) { slices.Reverse(webContainer(d).Env) }),
			own:    envPath,
		},
		{
			name: "keyed, an extra element",
			actual: base(func(d *appsv1.Deployment) {
				webContainer(d).Env = append(webContainer(d).Env, corev1.EnvVar{Name: "EXTRA", Value: "1"})
			}),
			own:  envPath,
			want: []string{envPath + "[name=EXTRA]"},
		},
		{
			name:   "unkeyed, another order",
			actual: base(func(d *appsv1.Deployment) { slices.Reverse(d.Spec.Template.Spec.Tolerations) }),
			own:    tolPath,
			want:   []string{tolPath + "[0].key", tolPath + "[1].key"},
		},
		{
			name:   "unkeyed, not owned, another order",
			actual: base(func(d *appsv1.Deployment) { slices.Reverse(d.Spec.Template.Spec.Tolerations) }),
		},
		{
			name:   "scalars, another order",
			actual: base(func(d *appsv1.Deployment) { slices.Reverse(webContainer(d).Args) }),
			own:    argsPath,
			want:   []string{argsPath + "[0]", argsPath + "[1]"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts []compare.Option
			if tt.own != "" {
				opts = append(opts, compare.Own(tt.own))
			}
			got, err := kdiff(base(func(*appsv1.Deployment) {}), tt.actual, opts...)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got.Paths); diff != "" {
				t.Errorf("paths (-want +got):\n%s\n%s", diff, got.Report)
			}
		})
	}
}

func TestRulesThatCannotWorkAreAnError(t *testing.T) {
	for _, r := range []compare.Rule{
		nil,
		compare.KeyDefault{Field: "protocol"},
		compare.KeyDefault{Value: "TCP"},
		compare.CopiedDefault{Kind: "Pod", From: "limits", To: "requests"},
		compare.CopiedDefault{APIVersion: "v1", Kind: "Pod", From: "limits", To: "limits"},
	} {
		opt := compare.Rules(compare.KeyDefault{Field: "protocol", Value: "TCP"}, r)
		if _, err := compare.Diff(webDeployment(), webDeployment(), opt); !errors.Is(err, compare.ErrInvalidRule) {
			t.Errorf("Diff with %#v: %v, want ErrInvalidRule", r, err)
		}
		if err := compare.Overlay(webDeployment(), webDeployment(), opt); !errors.Is(err, compare.ErrInvalidRule) {
			t.Errorf("Overlay with %#v: %v, want ErrInvalidRule", r, err)
		}
	}
}

// TestKeyDefaultsOfOptionsAreTheComparisonsRules: what package drift's
// partial takeover matches list elements by (internal/managedfields'
// KeyDefaultsOf) are the KeyDefault rules a comparison with the same
// options applies, every Rules option's, in order.
func TestKeyDefaultsOfOptionsAreTheComparisonsRules(t *testing.T) {
	opts := []compare.Option{
		compare.Rules(compare.KubernetesRules()...),
		compare.IgnorePaths("spec.paused"),
		compare.Rules(compare.KeyDefault{Field: "zone", Value: "a"}),
	}
	want := []managedfields.KeyDefault{{Field: "protocol", Value: "TCP"}, {Field: "zone", Value: "a"}}
	if diff := cmp.Diff(want, managedfields.KeyDefaultsOf(opts)); diff != "" {
		t.Errorf("KeyDefaultsOf (-want +got):\n%s", diff)
	}
	if got := managedfields.KeyDefaultsOf([]compare.Option{compare.IgnoreStatus()}); len(got) != 0 {
		t.Errorf("KeyDefaultsOf without Rules = %v, want none", got)
	}
	if got := managedfields.KeyDefaultsOf("not options"); len(got) != 0 {
		t.Errorf("KeyDefaultsOf of a string = %v, want none", got)
	}
}

func TestOverlayNeedsAnActualItCanChange(t *testing.T) {
	if err := compare.Overlay(*webDeployment(), *webDeployment()); !errors.Is(err, compare.ErrNotComparable) {
		t.Errorf("Overlay of struct values: %v, want ErrNotComparable", err)
	}
	if err := compare.Overlay(webDeployment(), nil); !errors.Is(err, compare.ErrNotComparable) {
		t.Errorf("Overlay into nil: %v, want ErrNotComparable", err)
	}
}

func TestIgnoreStatusUndoesIncludeStatus(t *testing.T) {
	desired := webDeployment()
	desired.Status.Replicas = 2
	actual := webDeployment()
	for _, tt := range []struct {
		name string
		opts []compare.Option
		want []string
	}{
		{name: "default"},
		{name: "IncludeStatus", opts: []compare.Option{compare.IncludeStatus()}, want: []string{"status.replicas"}},
		{name: "IncludeStatus, then IgnoreStatus", opts: []compare.Option{compare.IncludeStatus(), compare.IgnoreStatus()}},
		{name: "IgnoreStatus, then IncludeStatus", opts: []compare.Option{compare.IgnoreStatus(), compare.IncludeStatus()}, want: []string{"status.replicas"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := compare.Diff(desired, actual, tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got.Paths); diff != "" {
				t.Errorf("paths (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFingerprintIsTheDriftToWrite: a drift that comes back the same way
// (same paths, same desired values) has the same fingerprint, whatever the
// actual values; a desired object that changed has another.
func TestFingerprintIsTheDriftToWrite(t *testing.T) {
	withImage := func(image string) *appsv1.Deployment {
		d := webDeployment()
		webContainer(d).Image = image
		return d
	}
	fp := func(desired, actual *appsv1.Deployment) uint64 {
		t.Helper()
		c, err := compare.Diff(desired, actual)
		if err != nil {
			t.Fatal(err)
		}
		return c.Fingerprint()
	}
	if got := fp(webDeployment(), webDeployment()); got != 0 {
		t.Errorf("no drift: fingerprint %d, want 0", got)
	}
	reverted := fp(webDeployment(), withImage("nginx:evil"))
	if reverted == 0 || reverted != fp(webDeployment(), withImage("nginx:other")) {
		t.Errorf("the same drift from two actual values: fingerprints differ (or 0)")
	}
	if reverted == fp(withImage("nginx:1.27"), withImage("nginx:evil")) {
		t.Errorf("another desired value: same fingerprint")
	}
}

// TestFieldOwnerOptions: Replaces, OnlyApplied and StrategicMerge, the
// options package drift's writers pass, on objects as the API server
// returns them.
func TestFieldOwnerOptions(t *testing.T) {
	envEntry := func(manager string, op metav1.ManagedFieldsOperationType) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, APIVersion: "apps/v1", FieldsType: "FieldsV1",
			FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{"f:env":{"k:{\"name\":\"LOG\"}":{".":{},"f:name":{},"f:value":{}}}}}}}}}`)}
	}
	desired := webDeployment()
	webContainer(desired).Env = webContainer(desired).Env[:1] // LOG dropped
	live := func(e metav1.ManagedFieldsEntry) *appsv1.Deployment {
		l := webDeployment()
		l.ManagedFields = []metav1.ManagedFieldsEntry{e}
		return l
	}
	const logPath = "spec.template.spec.containers[name=web].env[name=LOG]"

	// A Service with 53/TCP and 53/UDP we wrote, neither desired any more.
	svcEntry := metav1.ManagedFieldsEntry{Manager: testOwner, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", FieldsType: "FieldsV1",
		FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:ports":{"k:{\"port\":53,\"protocol\":\"TCP\"}":{".":{},"f:port":{},"f:protocol":{}},"k:{\"port\":53,\"protocol\":\"UDP\"}":{".":{},"f:port":{},"f:protocol":{}}}}}`)}
	svcDesired := &corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
	svcLive := &corev1.Service{ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{svcEntry}}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
		{Port: 80, Protocol: corev1.ProtocolTCP}, {Port: 53, Protocol: corev1.ProtocolTCP}, {Port: 53, Protocol: corev1.ProtocolUDP},
	}}}

	tests := []struct {
		name            string
		desired, actual any
		opts            []compare.Option
		want            []string
	}{
		{name: "a replaced manager's entry is not ours", desired: desired, actual: live(envEntry("manager", "Update"))},
		{name: "Replaces makes it ours", desired: desired, actual: live(envEntry("manager", "Update")),
			opts: []compare.Option{compare.Replaces("manager")}, want: []string{logPath}},
		{name: "Replaces twice adds up", desired: desired, actual: live(envEntry("manager", "Update")),
			opts: []compare.Option{compare.Replaces("kubectl-edit"), compare.Replaces("", "manager")}, want: []string{logPath}},
		{name: "our Update entry counts", desired: desired, actual: live(envEntry(testOwner, "Update")), want: []string{logPath}},
		{name: "OnlyApplied: our Update entry does not", desired: desired, actual: live(envEntry(testOwner, "Update")),
			opts: []compare.Option{compare.OnlyApplied()}},
		{name: "OnlyApplied: our Apply entry does", desired: desired, actual: live(envEntry(testOwner, "Apply")),
			opts: []compare.Option{compare.OnlyApplied()}, want: []string{logPath}},
		{name: "two ports with one number are ours to drop", desired: svcDesired, actual: svcLive,
			want: []string{"spec.ports[port=53,protocol=TCP]", "spec.ports[port=53,protocol=UDP]"}},
		{name: "StrategicMerge keeps them: its patch would delete both by number", desired: svcDesired, actual: svcLive,
			opts: []compare.Option{compare.StrategicMerge()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := kdiff(tt.desired, tt.actual, slices.Concat([]compare.Option{withOwner}, tt.opts)...)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got.Paths); diff != "" {
				t.Errorf("paths (-want +got):\n%s\n%s", diff, got.Report)
			}
		})
	}
}
