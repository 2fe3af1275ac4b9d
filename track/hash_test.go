package track_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/track"
)

func configMap(data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "settings", ResourceVersion: "7", Labels: map[string]string{"team": "a"}},
		Data:       data,
	}
}

func mustHash(t *testing.T, objs ...client.Object) string {
	t.Helper()
	h, err := track.Hash(objs...)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestHashChangesWithDataOnly(t *testing.T) {
	base := configMap(map[string]string{"mode": "prod", "level": "info"})
	relabelled := base.DeepCopy()
	relabelled.Labels["team"] = "b"
	relabelled.Annotations = map[string]string{"note": "x"}
	relabelled.ResourceVersion = "8"
	relabelled.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	changed := base.DeepCopy()
	changed.Data["level"] = "debug"
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(base)
	if err != nil {
		t.Fatal(err)
	}
	asRead := &unstructured.Unstructured{Object: u}
	asRead.SetAPIVersion("v1")
	asRead.SetKind("ConfigMap")
	other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "creds"}, Data: map[string][]byte{"p": []byte("x")}}

	h := mustHash(t, base)
	for _, tt := range []struct {
		name string
		objs []client.Object
		same bool
	}{
		{name: "relabelled, annotated, a new resourceVersion", objs: []client.Object{relabelled}, same: true},
		{name: "the same object read unstructured", objs: []client.Object{asRead}, same: true},
		{name: "a data value changed", objs: []client.Object{changed}},
		{name: "another object beside it", objs: []client.Object{base, other}},
		{name: "renamed", objs: []client.Object{func() client.Object { c := base.DeepCopy(); c.Name = "other"; return c }()}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := mustHash(t, tt.objs...); (got == h) != tt.same {
				t.Errorf("Hash = %s, base %s; same = %v, want %v", got, h, got == h, tt.same)
			}
		})
	}
	if mustHash(t, base, other) == mustHash(t, other, base) {
		t.Error("Hash(a, b) == Hash(b, a); the order given counts")
	}
	// The value is part of the contract: a workload must not roll because
	// the operator was upgraded. It is the SHA-256 of
	// [{"namespace":"app","name":"settings","content":{"data":{"level":"info","mode":"prod"}}}]
	// (printf '%s' '...' | sha256sum).
	if want := "63248e6381ee4647675ea28a998c29ba087a6bdfd96dc22bb50c47569ebe3019"; h != want {
		t.Errorf("Hash of the base ConfigMap = %s; pinned %s", h, want)
	}
}

func TestHashRefusesNil(t *testing.T) {
	var cm *corev1.ConfigMap
	for _, objs := range [][]client.Object{{nil}, {cm}} {
		_, err := track.Hash(objs...)
		if class, _ := errors.Classify(err); err == nil || class != errors.ClassPermanent {
			t.Errorf("Hash(%v) = %v (%s); want a permanent error", objs, err, class)
		}
	}
}

func FuzzHash(f *testing.F) {
	f.Add("mode", "prod", "team", "a")
	f.Add("", "", "", "")
	f.Fuzz(func(t *testing.T, k, v, label, labelValue string) {
		cm := configMap(map[string]string{k: v})
		relabelled := cm.DeepCopy()
		relabelled.Labels = map[string]string{label: labelValue}
		a, err := track.Hash(cm)
		if err != nil {
			t.Fatal(err)
		}
		b, err := track.Hash(relabelled)
		if err != nil {
			t.Fatal(err)
		}
		if a != b || len(a) != 64 {
			t.Errorf("Hash of %q=%q: %s, relabelled %s; want the same 64 hex digits", k, v, a, b)
		}
	})
}
