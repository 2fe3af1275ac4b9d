package applyset_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/applyset"
	"github.com/reconcilekit/reconcilekit/errors"
)

// kubectl runs kubectl against the test's control plane, with ApplySets
// turned on, and returns its combined output.
func kubectl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(env.Kubectl(t), append([]string{"--kubeconfig", env.Kubeconfig(t)}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECTL_APPLYSET=true")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestKubectlReadsTheSet proves the record is kubectl's ApplySet: kubectl
// computes the same ID for a parent as applyset.ID, lists a Set's
// children by its label, and refuses to prune a set a Set manages (its
// tooling is not kubectl's); and a Set refuses a set kubectl manages.
func TestKubectlReadsTheSet(t *testing.T) {
	c := env.Client(t)
	ns := env.Namespace(t)

	// kubectl's own set.
	manifest := filepath.Join(t.TempDir(), "cm.yaml")
	if err := os.WriteFile(manifest, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: by-kubectl\ndata:\n  k: v\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// kubectl creates its parent, a ConfigMap, and labels it with the ID it
	// computes.
	kparent := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kubectl-parent"}}
	if out, err := kubectl(t, "apply", "-n", ns, "--prune", "--applyset=configmap/kubectl-parent", "-f", manifest); err != nil {
		t.Fatalf("kubectl apply --applyset: %v\n%s", err, out)
	}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(kparent), kparent); err != nil {
		t.Fatal(err)
	}
	if got, want := kparent.Labels[applyset.IDLabel], applyset.ID(schema.GroupKind{Kind: "ConfigMap"}, ns, "kubectl-parent"); got != want {
		t.Errorf("kubectl's ID is %q, applyset.ID says %q", got, want)
	}
	_, err := applyset.New(c, testOwner).Apply(t.Context(), kparent, children(configMap(ns, "mine", "1")))
	if !errors.Is(err, applyset.ErrForeignSet) {
		t.Errorf("Apply on kubectl's set returned %v, want ErrForeignSet", err)
	}
	if class, _ := errors.Classify(err); class != errors.ClassPermanent {
		t.Errorf("the error is %v, want permanent", class)
	}

	// A Set's set, as kubectl sees it.
	parent := newParent(t, c, ns)
	if _, err := applyset.New(c, testOwner).Apply(t.Context(), parent, children(configMap(ns, "a", "1"), configMap(ns, "b", "1"))); err != nil {
		t.Fatal(err)
	}
	id := parent.Labels[applyset.IDLabel]
	out, err := kubectl(t, "get", "configmaps", "-n", ns, "-l", applyset.PartOfLabel+"="+id, "-o", "name")
	if err != nil {
		t.Fatalf("kubectl get: %v\n%s", err, out)
	}
	if got := strings.Fields(out); strings.Join(got, " ") != "configmap/a configmap/b" {
		t.Errorf("kubectl lists %q as the set's ConfigMaps", got)
	}
	out, err = kubectl(t, "apply", "-n", ns, "--prune", "--applyset=configmap/parent", "-f", manifest)
	if err == nil || !strings.Contains(out, testOwner) {
		t.Errorf("kubectl apply --prune on the Set's set: %v\n%s\nwant a refusal naming the Set's tooling", err, out)
	}
	for _, name := range []string{"a", "b"} {
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &corev1.ConfigMap{}); err != nil {
			t.Errorf("the Set's ConfigMap %q after kubectl's refused prune: %v", name, err)
		}
	}
}
