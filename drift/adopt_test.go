package drift_test

import (
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/drift"
	"github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/ownership"
)

// TestEnsureLeavesAForeignSecretAlone is issue 36's reproduction: a new
// user's SecretMirror copies a Secret into another namespace, its desired
// copy linked to the mirror (ownership.SetLink, as a child across
// namespaces must be). A Secret somebody else created under the same name
// was there first. Ensure patched the copy onto it: the user's data was
// replaced and the Secret relabelled as the mirror's, with no error. It must
// refuse, permanently, and leave the Secret exactly as it was.
func TestEnsureLeavesAForeignSecretAlone(t *testing.T) {
	c, w := countingClient(t)
	ctx := t.Context()
	mirrorNS, targetNS := env.Namespace(t), env.Namespace(t)
	mirror := widgetIn(mirrorNS) // stands in for the SecretMirror
	if err := c.Create(ctx, mirror); err != nil {
		t.Fatal(err)
	}
	foreign := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: targetNS, Name: "db-credentials", Labels: map[string]string{"team": "payments"}},
		Data:       map[string][]byte{"password": []byte("the payments team's own")},
	}
	if err := c.Create(ctx, foreign, client.FieldOwner("kubectl-create")); err != nil {
		t.Fatal(err)
	}
	before := foreign.DeepCopy()

	desired := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: targetNS, Name: "db-credentials"},
		Data:       map[string][]byte{"password": []byte("mirrored")},
	}
	if err := ownership.SetLink(mirror, desired, c.Scheme()); err != nil {
		t.Fatal(err)
	}
	w.reset()
	_, err := drift.NewWriter(c, "secretmirror-controller").Ensure(ctx, desired)
	if class, _ := errors.Classify(err); class != errors.ClassPermanent {
		t.Errorf("Ensure onto a Secret somebody else created: error %v (class %s); want a permanent error", err, class)
	}
	if n := w.total(); n != 0 {
		t.Errorf("Ensure sent %d writes to a Secret that is not ours; want none", n)
	}
	var after corev1.Secret
	if err := c.Get(ctx, client.ObjectKeyFromObject(foreign), &after); err != nil {
		t.Fatal(err)
	}
	if !maps.EqualFunc(after.Data, before.Data, func(a, b []byte) bool { return string(a) == string(b) }) ||
		!maps.Equal(after.Labels, before.Labels) || !maps.Equal(after.Annotations, before.Annotations) ||
		after.ResourceVersion != before.ResourceVersion {
		t.Errorf("the foreign Secret changed:\n data %q labels %v annotations %v (rv %s)\nwant data %q labels %v annotations %v (rv %s)",
			after.Data, after.Labels, after.Annotations, after.ResourceVersion,
			before.Data, before.Labels, before.Annotations, before.ResourceVersion)
	}
}
