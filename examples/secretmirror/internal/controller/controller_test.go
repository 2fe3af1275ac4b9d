package controller_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/reconcilekit/reconcilekit/drift"
	mirrorv1 "github.com/reconcilekit/reconcilekit/examples/secretmirror/api/v1alpha1"
	"github.com/reconcilekit/reconcilekit/examples/secretmirror/internal/controller"
	"github.com/reconcilekit/reconcilekit/ownership"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
	"github.com/reconcilekit/reconcilekit/status"
	"github.com/reconcilekit/reconcilekit/track"
)

var env testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, &env, testenv.Options{
		CRDDirectoryPaths: []string{"../../config/crd"},
		AddToScheme:       []func(*runtime.Scheme) error{mirrorv1.AddToScheme},
		Shared:            true,
	})
}

// world is a test's namespaces: the mirror's (src) and two targets, and the
// operator running on them.
type world struct {
	src, a, b string
	mgr       *testenv.Manager
	c         client.Client
}

func newWorld(t *testing.T, syncPeriod time.Duration) *world {
	t.Helper()
	w := &world{src: env.Namespace(t), a: env.Namespace(t), b: env.Namespace(t), c: env.Client(t)}
	opts, err := controller.ManagerOptions(manager.Options{Cache: cache.Options{DefaultNamespaces: map[string]cache.Config{w.src: {}, w.a: {}, w.b: {}}}})
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := env.NewManager(testenv.ManagerOptions{SyncPeriod: syncPeriod, Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	b, loop, err := controller.Controller(mgr)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Complete(mgr.Reconciler(loop)); err != nil {
		t.Fatal(err)
	}
	mgr.Run(t)
	w.mgr = mgr
	return w
}

func (w *world) mirror(targets ...string) *mirrorv1.SecretMirror {
	return &mirrorv1.SecretMirror{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.src, Name: "m"},
		Spec:       mirrorv1.SecretMirrorSpec{Source: "creds", TargetNamespaces: targets},
	}
}

// secretIn returns the Secret "creds" of ns, nil when there is none.
func (w *world) secretIn(t *testing.T, ns string) *corev1.Secret {
	t.Helper()
	var s corev1.Secret
	if err := w.c.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "creds"}, &s); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil
		}
		t.Fatal(err)
	}
	return &s
}

// waitCopies waits until the copies of ns hold password, or are gone when
// password is "".
func (w *world) waitCopies(t *testing.T, password string, nss ...string) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := start.Add(time.Minute)
	for {
		ok := true
		for _, ns := range nss {
			s := w.secretIn(t, ns)
			if password == "" && s != nil || password != "" && (s == nil || string(s.Data["password"]) != password) {
				ok = false
			}
		}
		if ok {
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for the copies in %v to hold %q", nss, password)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestAMirrorFollowsItsSource: a mirror made before its source is Stalled,
// naming the missing Secret, until the source's creation copies it; a
// change of the source's data reaches every copy, an edited copy is
// restored, a converged mirror writes nothing on a resync, a namespace
// dropped from the list loses its copy, and the mirror's deletion removes
// the rest.
func TestAMirrorFollowsItsSource(t *testing.T) {
	t.Parallel()
	w := newWorld(t, time.Second)
	ctx := t.Context()
	m := w.mirror(w.a, w.b)
	if err := w.c.Create(ctx, m); err != nil {
		t.Fatal(err)
	}
	if err := env.WaitForCondition(ctx, m, status.TypeStalled, metav1.ConditionTrue); err != nil {
		t.Fatal(err)
	}
	stalled, _ := status.FindCondition(m, status.TypeStalled)
	if want := fmt.Sprintf("Secret %q not found", w.src+"/creds"); stalled.Reason != track.ReasonReferenceNotFound || stalled.Message != want {
		t.Errorf("without a source: Stalled %s %q; want %s %q", stalled.Reason, stalled.Message, track.ReasonReferenceNotFound, want)
	}

	source := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: w.src, Name: "creds"}, Data: map[string][]byte{"password": []byte("one")}}
	if err := w.c.Create(ctx, source); err != nil {
		t.Fatal(err)
	}
	t.Logf("source created: copied into both namespaces %v later", w.waitCopies(t, "one", w.a, w.b).Round(time.Millisecond))
	if err := env.WaitForCondition(ctx, m, status.TypeReady, metav1.ConditionTrue); err != nil {
		t.Fatal(err)
	}
	if want := slices.Sorted(slices.Values([]string{w.a, w.b})); !slices.Equal(want, m.Status.Copies) {
		t.Errorf("status.copies %v; want %v", m.Status.Copies, want)
	}
	copyA := w.secretIn(t, w.a)
	if !ownership.IsLinkedTo(copyA, m) {
		t.Errorf("the copy in %s is not linked to its mirror: %v %v", w.a, copyA.Labels, copyA.Annotations)
	}

	source.Data["password"] = []byte("two")
	if err := w.c.Update(ctx, source); err != nil {
		t.Fatal(err)
	}
	t.Logf("source changed: both copies changed %v later", w.waitCopies(t, "two", w.a, w.b).Round(time.Millisecond))

	copyA = w.secretIn(t, w.a)
	copyA.Data["password"] = []byte("edited by hand")
	if err := w.c.Update(ctx, copyA); err != nil {
		t.Fatal(err)
	}
	t.Logf("a copy edited: restored %v later", w.waitCopies(t, "two", w.a).Round(time.Millisecond))

	// Converged: resyncs every second reconcile the mirror, and nothing is
	// written.
	if err := w.mgr.WaitConverged(ctx, m, "Ready", func() bool { return testenv.HasCondition(m, status.TypeReady, metav1.ConditionTrue) }); err != nil {
		t.Fatal(err)
	}
	w.mgr.Requests.Reset()
	key := client.ObjectKeyFromObject(m)
	if err := w.mgr.Reconciles.Wait(ctx, key, w.mgr.Reconciles.Count(key)+2); err != nil {
		t.Fatal(err)
	}
	if writes := w.mgr.Requests.Writes(); len(writes) > 0 {
		t.Errorf("two resyncs of a converged mirror wrote %v", writes)
	}

	m.Spec.TargetNamespaces = []string{w.a}
	if err := w.c.Update(ctx, m); err != nil {
		t.Fatal(err)
	}
	w.waitCopies(t, "", w.b)
	if err := env.WaitFor(ctx, m, "status.copies of a alone", func() bool { return slices.Equal([]string{w.a}, m.Status.Copies) }); err != nil {
		t.Fatal(err)
	}
	if err := w.c.Delete(ctx, m); err != nil {
		t.Fatal(err)
	}
	w.waitCopies(t, "", w.a)
	if s := w.secretIn(t, w.src); s == nil || string(s.Data["password"]) != "two" {
		t.Errorf("the source after the mirror's deletion: %v", s)
	}
}

// TestAMirrorLeavesAForeignSecretAlone is issue 36's report, end to end: a
// Secret somebody else made in a target namespace under the source's name
// is not overwritten. The mirror copies into the other namespace, reports
// the one in the way (Stalled, ForeignObject, the Secret named), and copies
// there too once the foreign Secret is deleted: its deletion wakes the
// mirror.
func TestAMirrorLeavesAForeignSecretAlone(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 0)
	ctx := t.Context()
	source := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: w.src, Name: "creds"}, Data: map[string][]byte{"password": []byte("mirrored")}}
	foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: w.a, Name: "creds", Labels: map[string]string{"team": "a"}},
		Data: map[string][]byte{"password": []byte("team a's own")}}
	for _, s := range []*corev1.Secret{source, foreign} {
		if err := w.c.Create(ctx, s, client.FieldOwner("kubectl-create")); err != nil {
			t.Fatal(err)
		}
	}
	m := w.mirror(w.a, w.b)
	if err := w.c.Create(ctx, m); err != nil {
		t.Fatal(err)
	}
	w.waitCopies(t, "mirrored", w.b)
	if err := env.WaitForCondition(ctx, m, status.TypeStalled, metav1.ConditionTrue); err != nil {
		t.Fatal(err)
	}
	stalled, _ := status.FindCondition(m, status.TypeStalled)
	if want := fmt.Sprintf("Secret %q exists and is not ours", w.a+"/creds"); stalled.Reason != drift.ReasonForeignObject || !strings.Contains(stalled.Message, want) {
		t.Errorf("Stalled %s %q; want %s naming the Secret (%q)", stalled.Reason, stalled.Message, drift.ReasonForeignObject, want)
	}
	if want := []string{w.b}; !slices.Equal(want, m.Status.Copies) {
		t.Errorf("status.copies %v; want %v", m.Status.Copies, want)
	}
	after := w.secretIn(t, w.a)
	if string(after.Data["password"]) != "team a's own" || !maps.Equal(after.Labels, foreign.Labels) ||
		len(after.Annotations) != 0 || after.ResourceVersion != foreign.ResourceVersion {
		t.Errorf("the foreign Secret changed: data %q labels %v annotations %v rv %s → %s",
			after.Data, after.Labels, after.Annotations, foreign.ResourceVersion, after.ResourceVersion)
	}

	if err := w.c.Delete(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	t.Logf("the foreign Secret deleted: copied in its place %v later", w.waitCopies(t, "mirrored", w.a).Round(time.Millisecond))
	if err := env.WaitForCondition(ctx, m, status.TypeReady, metav1.ConditionTrue); err != nil {
		t.Fatal(err)
	}
}
