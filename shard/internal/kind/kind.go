// Package kind tells controller-runtime's informers apart, for the shard
// packages that wrap the informers of chosen kinds.
package kind

import (
	"fmt"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Key is an informer's kind: the Go type of its objects, and for the
// unstructured and metadata-only forms, the GroupVersionKind they carry
// (controller-runtime keeps one informer per form).
type Key struct {
	typ reflect.Type
	gvk schema.GroupVersionKind
}

// Of returns obj's informer kind; an unstructured or metadata-only object
// must have its GroupVersionKind set.
func Of(obj runtime.Object) (Key, error) {
	k := Key{typ: reflect.TypeOf(obj)}
	switch obj.(type) {
	case runtime.Unstructured, *metav1.PartialObjectMetadata:
		k.gvk = obj.GetObjectKind().GroupVersionKind()
		if k.gvk.Kind == "" || k.gvk.Version == "" {
			return k, fmt.Errorf("shard: a %T must have its GroupVersionKind set to name a kind", obj)
		}
	}
	return k, nil
}
