package track

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/errors"
)

// HashAnnotation is the annotation of a Pod template that carries the
// [Hash] of the objects its Pods read (ConfigMaps and Secrets mounted or
// read as environment): the template changes, and so the Deployment (or
// StatefulSet, DaemonSet) rolls out, exactly when their data does.
const HashAnnotation = "track.reconcilekit.io/hash"

// Hash returns a hex SHA-256 of the content of objs, in the order given:
// each object's namespace, name and every top-level field but apiVersion,
// kind, metadata and status (a ConfigMap's data and binaryData, a Secret's
// data and type, both's immutable). Labels, annotations and the
// resourceVersion do not count, so an update that changes no data, a
// resync, or a relabelling gives the same hash. Map keys are sorted, so the
// hash depends on content only; it is the same in every process and every
// release.
//
// Set it on the Pod template of a workload, under [HashAnnotation], and
// write the workload with a drift.Writer: the template changes, and the
// workload rolls, once per change of the data, and an update of a
// referenced object that leaves its data alone writes nothing:
//
//	h, err := track.Hash(&config, &credentials)
//	deployment.Spec.Template.Annotations = map[string]string{track.HashAnnotation: h}
//
// A nil object, or one that does not convert to JSON, is an error, marked
// errors.Permanent.
func Hash(objs ...client.Object) (string, error) {
	type entry struct {
		Namespace string         `json:"namespace"`
		Name      string         `json:"name"`
		Content   map[string]any `json:"content"`
	}
	entries := make([]entry, 0, len(objs))
	for i, obj := range objs {
		if v := reflect.ValueOf(obj); obj == nil || v.Kind() == reflect.Pointer && v.IsNil() {
			return "", errors.Permanent(fmt.Errorf("track: hash: object %d is nil", i))
		}
		var content map[string]any
		if u, ok := obj.(*unstructured.Unstructured); ok {
			content = make(map[string]any, len(u.Object))
			for k, v := range u.Object {
				content[k] = v
			}
		} else {
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
			if err != nil {
				return "", errors.Permanent(fmt.Errorf("track: hash %T %q: %w", obj, client.ObjectKeyFromObject(obj), err))
			}
			content = m
		}
		for _, k := range []string{"apiVersion", "kind", "metadata", "status"} {
			delete(content, k)
		}
		entries = append(entries, entry{Namespace: obj.GetNamespace(), Name: obj.GetName(), Content: content})
	}
	b, err := json.Marshal(entries)
	if err != nil {
		return "", errors.Permanent(fmt.Errorf("track: hash: %w", err))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}
