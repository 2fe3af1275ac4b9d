package e2e_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// rendered is config/default as kustomize renders it.
type rendered struct {
	objects             []*unstructured.Unstructured
	deployment          appsv1.Deployment
	serviceAccounts     map[string]bool // namespace/name
	roles, clusterRoles map[string][]rbacv1.PolicyRule
	bindings            []binding
}

type binding struct {
	kind, namespace, name string
	roleRef               rbacv1.RoleRef
	subjects              []rbacv1.Subject
}

// render runs `kubectl kustomize config/default` and decodes its output.
func render(t *testing.T) *rendered {
	t.Helper()
	out := kubectl(t, "kustomize", defaultKustomization)
	r := &rendered{serviceAccounts: map[string]bool{}, roles: map[string][]rbacv1.PolicyRule{}, clusterRoles: map[string][]rbacv1.PolicyRule{}}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewBufferString(out), 4096)
	deployments := 0
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decoding kustomize's output: %v", err)
		}
		r.objects = append(r.objects, u)
		convert := func(into any) {
			t.Helper()
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
				t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
			}
		}
		switch u.GetKind() {
		case "Deployment":
			deployments++
			convert(&r.deployment)
		case "ServiceAccount":
			r.serviceAccounts[u.GetNamespace()+"/"+u.GetName()] = true
		case "Role":
			var role rbacv1.Role
			convert(&role)
			r.roles[role.Namespace+"/"+role.Name] = role.Rules
		case "ClusterRole":
			var role rbacv1.ClusterRole
			convert(&role)
			r.clusterRoles[role.Name] = role.Rules
		case "RoleBinding":
			var b rbacv1.RoleBinding
			convert(&b)
			r.bindings = append(r.bindings, binding{"RoleBinding", b.Namespace, b.Name, b.RoleRef, b.Subjects})
		case "ClusterRoleBinding":
			var b rbacv1.ClusterRoleBinding
			convert(&b)
			r.bindings = append(r.bindings, binding{"ClusterRoleBinding", "", b.Name, b.RoleRef, b.Subjects})
		}
	}
	if deployments != 1 {
		t.Fatalf("config/default renders %d Deployments, want 1", deployments)
	}
	return r
}

// TestDefaultKustomization checks what `kubectl apply -k
// examples/at/config/default` applies: every object, the generated role
// among them, bound to the service account the Deployment runs as, and a
// Deployment of two leader-electing replicas with probes.
func TestDefaultKustomization(t *testing.T) {
	env.Require(t)
	r := render(t)

	var got []string
	for _, o := range r.objects {
		got = append(got, o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName())
	}
	want := []string{
		"Namespace /at-system",
		"CustomResourceDefinition /ats.cnat.reconcilekit.dev",
		"ServiceAccount at-system/at-controller",
		"Role at-system/at-leader-election-role",
		"ClusterRole /at-manager-role",
		"RoleBinding at-system/at-leader-election-rolebinding",
		"ClusterRoleBinding /at-manager-rolebinding",
		"Deployment at-system/at-controller",
	}
	if diff := cmp.Diff(want, got, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("objects of config/default (-want +got):\n%s", diff)
	}

	// The deployed ClusterRole is the one controller-gen generated.
	generated, err := os.ReadFile("../../config/rbac/role.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.Unmarshal(generated, &role); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(role.Rules, r.clusterRoles[role.Name]); diff != "" {
		t.Errorf("the deployed ClusterRole %s is not config/rbac/role.yaml (-generated +deployed):\n%s", role.Name, diff)
	}

	// Every binding grants a role that is deployed to the service account
	// the Deployment runs as.
	d := r.deployment
	sa := d.Namespace + "/" + d.Spec.Template.Spec.ServiceAccountName
	if !r.serviceAccounts[sa] {
		t.Errorf("the Deployment runs as %s, which config/default does not create", sa)
	}
	bound := map[string]bool{}
	for _, b := range r.bindings {
		ref := b.roleRef.Name
		if _, ok := r.clusterRoles[ref]; !ok && b.roleRef.Kind == "ClusterRole" {
			t.Errorf("%s %s grants ClusterRole %s, which is not deployed", b.kind, b.name, ref)
		}
		if _, ok := r.roles[b.namespace+"/"+ref]; !ok && b.roleRef.Kind == "Role" {
			t.Errorf("%s %s/%s grants Role %s, which is not deployed in its namespace", b.kind, b.namespace, b.name, ref)
		}
		wantSubject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: d.Namespace, Name: d.Spec.Template.Spec.ServiceAccountName}}
		if diff := cmp.Diff(wantSubject, b.subjects); diff != "" {
			t.Errorf("%s %s subjects (-want +got):\n%s", b.kind, b.name, diff)
		}
		if b.roleRef.Kind == "Role" {
			ref = b.namespace + "/" + ref
		}
		bound[b.roleRef.Kind+" "+ref] = true
	}
	for name := range r.clusterRoles {
		if !bound["ClusterRole "+name] {
			t.Errorf("ClusterRole %s is granted to nobody", name)
		}
	}
	for key := range r.roles {
		if !bound["Role "+key] {
			t.Errorf("Role %s is granted to nobody", key)
		}
	}

	if got := ptr.Deref(d.Spec.Replicas, 1); got != 2 {
		t.Errorf("replicas = %d, want 2", got)
	}
	if n := len(d.Spec.Template.Spec.Containers); n != 1 {
		t.Fatalf("%d containers, want 1", n)
	}
	c := d.Spec.Template.Spec.Containers[0]
	for _, arg := range []string{"--leader-elect=true", "--health-probe-bind-address=:8081"} {
		if !slices.Contains(c.Args, arg) {
			t.Errorf("args %q lack %s", c.Args, arg)
		}
	}
	for name, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Port.String() != "probes" {
			t.Errorf("%s probe = %+v, want an HTTP GET of the probes port", name, p)
		}
	}
	if len(c.Ports) != 1 || c.Ports[0].Name != "probes" || c.Ports[0].ContainerPort != 8081 {
		t.Errorf("ports = %+v, want probes: 8081", c.Ports)
	}
}

// TestDeploymentIsAdmittedUnderRestrictedPodSecurity creates (dry run) a
// Pod from the Deployment's template in at-system, whose namespace enforces
// the "restricted" Pod Security Standard: it is admitted. The same Pod with
// one of its protections removed is not, which shows the check is real.
func TestDeploymentIsAdmittedUnderRestrictedPodSecurity(t *testing.T) {
	deploy(t)
	tmpl := render(t).deployment.Spec.Template
	tests := []struct {
		name     string
		mutate   func(*corev1.PodSpec)
		admitted bool
	}{
		{"as deployed", func(*corev1.PodSpec) {}, true},
		{"without the seccomp profile", func(s *corev1.PodSpec) { s.SecurityContext.SeccompProfile = nil }, false},
		{"as root", func(s *corev1.PodSpec) {
			s.SecurityContext.RunAsNonRoot, s.SecurityContext.RunAsUser = nil, ptr.To[int64](0)
		}, false},
		{"allowing privilege escalation", func(s *corev1.PodSpec) {
			s.Containers[0].SecurityContext.AllowPrivilegeEscalation = ptr.To(true)
		}, false},
		{"keeping capabilities", func(s *corev1.PodSpec) { s.Containers[0].SecurityContext.Capabilities = nil }, false},
	}
	c := env.Client(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := tmpl.Spec.DeepCopy()
			tt.mutate(spec)
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, GenerateName: "pod-security-", Labels: tmpl.Labels},
				Spec:       *spec,
			}
			err := c.Create(t.Context(), pod, client.DryRunAll)
			switch {
			case tt.admitted && err != nil:
				t.Errorf("refused: %v", err)
			case !tt.admitted && (!apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "violates PodSecurity")):
				t.Errorf("got %v, want Forbidden by PodSecurity", err)
			}
		})
	}
}
