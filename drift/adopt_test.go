package drift_test

import (
	"context"
	"maps"
	"slices"
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
	var fe *drift.ForeignError
	if !errors.As(err, &fe) || fe.Controller != nil || fe.Link != nil {
		t.Errorf("err = %v; want a *drift.ForeignError of a Secret no owner controls", err)
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

// TestEnsureWritesOnlyToObjectsThatAreOurs: an existing object is written
// to only when it is the caller's (drift.ForeignError says when), whatever
// the verb; otherwise the call returns a permanent *drift.ForeignError naming
// the object and whose it is, and writes nothing.
func TestEnsureWritesOnlyToObjectsThatAreOurs(t *testing.T) {
	const fieldOwner = "mirror-controller"
	type world struct {
		ns           string
		ours, theirs client.Object // Widgets in ns
		remote       client.Object // a Widget in another namespace
	}
	secret := func(ns string, data string) *corev1.Secret {
		return &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds"},
			Data:       map[string][]byte{"password": []byte(data)},
		}
	}
	link := func(t *testing.T, owner client.Object, s *corev1.Secret) *corev1.Secret {
		t.Helper()
		if err := ownership.SetLink(owner, s, env.Scheme); err != nil {
			t.Fatal(err)
		}
		return s
	}
	control := func(t *testing.T, owner client.Object, s *corev1.Secret) *corev1.Secret {
		t.Helper()
		if err := ownership.SetController(owner, s, env.Scheme); err != nil {
			t.Fatal(err)
		}
		return s
	}
	type call func(ctx context.Context, w *drift.Writer, wd world) (drift.Outcome, error)
	// ensure calls Ensure with opts, and with an Owner (our Widget) when
	// owned.
	ensure := func(desired func(*testing.T, world) client.Object, owned bool, opts ...drift.Option) func(*testing.T) call {
		return func(t *testing.T) call {
			return func(ctx context.Context, w *drift.Writer, wd world) (drift.Outcome, error) {
				o := slices.Clip(opts)
				if owned {
					o = append(o, drift.Owner(wd.ours))
				}
				return w.Ensure(ctx, desired(t, wd), o...)
			}
		}
	}
	linkedToRemote := func(t *testing.T, wd world) client.Object { return link(t, wd.remote, secret(wd.ns, "mirrored")) }
	plain := func(_ *testing.T, wd world) client.Object { return secret(wd.ns, "mirrored") }
	for _, tt := range []struct {
		name string
		// live creates the existing Secret, as fieldManager.
		live         func(*testing.T, world) *corev1.Secret
		fieldManager string
		call         func(*testing.T) call
		// want is "" (written), "unchanged" (nothing to write), or the kind
		// of refusal: "unowned", "controller", "link".
		want string
	}{
		{name: "created by someone else, desired linked", fieldManager: "kubectl-create",
			live: func(_ *testing.T, wd world) *corev1.Secret { return secret(wd.ns, "theirs") },
			call: ensure(linkedToRemote, false), want: "unowned"},
		{name: "created by someone else, desired linked, Adopt", fieldManager: "kubectl-create",
			live: func(_ *testing.T, wd world) *corev1.Secret { return secret(wd.ns, "theirs") },
			call: ensure(linkedToRemote, false, drift.Adopt())},
		{name: "created by someone else, desired names no owner", fieldManager: "kubectl-create",
			live: func(_ *testing.T, wd world) *corev1.Secret { return secret(wd.ns, "theirs") },
			call: ensure(plain, false), want: "unowned"},
		{name: "created by someone else, desired names no owner, Adopt", fieldManager: "kubectl-create",
			live: func(_ *testing.T, wd world) *corev1.Secret { return secret(wd.ns, "theirs") },
			call: ensure(plain, false, drift.Adopt())},
		{name: "created by someone else with what desired sets: nothing to write", fieldManager: "kubectl-create",
			live: func(_ *testing.T, wd world) *corev1.Secret { return secret(wd.ns, "mirrored") },
			call: ensure(plain, false), want: "unchanged"},
		{name: "linked to another owner", fieldManager: "other-mirror",
			live: func(t *testing.T, wd world) *corev1.Secret { return link(t, wd.theirs, secret(wd.ns, "theirs")) },
			call: ensure(linkedToRemote, false, drift.Adopt()), want: "link"},
		{name: "controlled by another owner, desired with Owner", fieldManager: "other-operator",
			live: func(t *testing.T, wd world) *corev1.Secret { return control(t, wd.theirs, secret(wd.ns, "theirs")) },
			call: ensure(plain, true, drift.Adopt()), want: "controller"},
		{name: "controlled by another owner, EnsureMutate with Owner", fieldManager: "other-operator",
			live: func(t *testing.T, wd world) *corev1.Secret { return control(t, wd.theirs, secret(wd.ns, "theirs")) },
			call: func(t *testing.T) call {
				return func(ctx context.Context, w *drift.Writer, wd world) (drift.Outcome, error) {
					s := secret(wd.ns, "")
					return w.EnsureMutate(ctx, s, func() error { s.Data = map[string][]byte{"password": []byte("mirrored")}; return nil }, drift.Owner(wd.ours))
				}
			}, want: "controller"},
		{name: "created by someone else, EnsureApplied", fieldManager: "kubectl-create",
			live: func(_ *testing.T, wd world) *corev1.Secret { return secret(wd.ns, "theirs") },
			call: func(t *testing.T) call {
				return func(ctx context.Context, w *drift.Writer, wd world) (drift.Outcome, error) {
					return w.EnsureApplied(ctx, linkedToRemote(t, wd), drift.ForceOwnership())
				}
			}, want: "unowned"},
		{name: "linked to our owner", fieldManager: "an-earlier-mirror",
			live: func(t *testing.T, wd world) *corev1.Secret { return link(t, wd.remote, secret(wd.ns, "old")) },
			call: ensure(linkedToRemote, false)},
		{name: "controlled by our owner", fieldManager: "manager",
			live: func(t *testing.T, wd world) *corev1.Secret { return control(t, wd.ours, secret(wd.ns, "old")) },
			call: ensure(plain, true)},
		{name: "unowned, written before by our field owner", fieldManager: fieldOwner,
			live: func(_ *testing.T, wd world) *corev1.Secret { return secret(wd.ns, "old") },
			call: ensure(linkedToRemote, false)},
		{name: "unowned, written before by a manager we replace", fieldManager: "manager",
			live: func(_ *testing.T, wd world) *corev1.Secret { return secret(wd.ns, "old") },
			call: ensure(plain, false, drift.Replaces("manager"))},
		{name: "controlled by another owner, written before by us, desired names no owner", fieldManager: fieldOwner,
			live: func(t *testing.T, wd world) *corev1.Secret { return control(t, wd.theirs, secret(wd.ns, "old")) },
			call: ensure(plain, false)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, writes := countingClient(t)
			ctx := t.Context()
			wd := world{ns: env.Namespace(t)}
			remoteNS := env.Namespace(t)
			for _, o := range []*client.Object{&wd.ours, &wd.theirs, &wd.remote} {
				w := widgetIn(wd.ns)
				switch o {
				case &wd.theirs:
					w.SetName("theirs")
				case &wd.remote:
					w.SetNamespace(remoteNS)
				}
				if err := c.Create(ctx, w); err != nil {
					t.Fatal(err)
				}
				*o = w
			}
			live := tt.live(t, wd)
			if err := c.Create(ctx, live, client.FieldOwner(tt.fieldManager)); err != nil {
				t.Fatal(err)
			}
			writes.reset()
			fn := tt.call(t)
			w := drift.NewWriter(c, fieldOwner)
			out, err := fn(ctx, w, wd)
			var after corev1.Secret
			if gerr := c.Get(ctx, client.ObjectKeyFromObject(live), &after); gerr != nil {
				t.Fatal(gerr)
			}
			var fe *drift.ForeignError
			switch tt.want {
			case "", "unchanged":
				if err != nil {
					t.Fatalf("Ensure: %v; want it written", err)
				}
				if tt.want == "unchanged" {
					if out.Operation != drift.OperationUnchanged || writes.total() != 0 {
						t.Errorf("%q with %d writes; want unchanged and none", out.Operation, writes.total())
					}
					return
				}
				if out.Operation != drift.OperationUpdated || string(after.Data["password"]) != "mirrored" {
					t.Errorf("%q, password %q; want updated to %q", out.Operation, after.Data["password"], "mirrored")
				}
				return
			}
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v; want a *drift.ForeignError", err)
			}
			if class, _ := errors.Classify(err); class != errors.ClassPermanent || errors.Reason(err) != drift.ReasonForeignObject {
				t.Errorf("class %s, reason %q; want permanent, %q", class, errors.Reason(err), drift.ReasonForeignObject)
			}
			if fe.Object != client.ObjectKeyFromObject(live) || fe.GroupKind.Kind != "Secret" {
				t.Errorf("the error names %s %s; want Secret %s", fe.GroupKind, fe.Object, client.ObjectKeyFromObject(live))
			}
			var owned *ownership.AlreadyOwnedError
			switch got := map[bool]string{true: "controller"}[fe.Controller != nil] + map[bool]string{true: "link"}[fe.Link != nil]; {
			case got == "" && tt.want != "unowned", got != "" && got != tt.want:
				t.Errorf("refused as %q (%v); want %q", got, err, tt.want)
			case got != "" && !errors.As(err, &owned):
				t.Errorf("errors.As finds no *ownership.AlreadyOwnedError in %v", err)
			}
			if n := writes.total(); n != 0 || after.ResourceVersion != live.ResourceVersion {
				t.Errorf("%d writes, resourceVersion %s → %s; want the Secret untouched", n, live.ResourceVersion, after.ResourceVersion)
			}
			t.Log(err)
		})
	}
}
