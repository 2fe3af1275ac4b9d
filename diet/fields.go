package diet

import (
	"fmt"
	"reflect"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/errors"
)

// PartialManager is the field manager of the one managedFields entry a
// [Fields] transform leaves on each object it keeps: the entry says that
// the object holds only part of what the API server has. It owns no field
// and the API server never writes it; [IsPartial] looks for it.
const PartialManager = "diet.reconcilekit.io"

// ErrPartial is matched (errors.Is) by the error of a library function
// given an object a [Fields] transform kept in part where it needs the
// whole object (drift's Ensure without an APIReader to read it whole).
var ErrPartial = errors.New("diet: the object is the part of it a cache keeps (diet.Fields), not the whole object")

// IsPartial reports whether obj is an object a [Fields] transform kept in
// part: its managedFields hold the [PartialManager] entry.
func IsPartial(obj metav1.Object) bool {
	if v := reflect.ValueOf(obj); obj == nil || v.Kind() == reflect.Pointer && v.IsNil() {
		return false
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		// Without decoding every entry.
		list, _, _ := unstructured.NestedSlice(u.Object, "metadata", "managedFields")
		for _, e := range list {
			if m, ok := e.(map[string]any); ok && m["manager"] == PartialManager {
				return true
			}
		}
		return false
	}
	for _, e := range obj.GetManagedFields() {
		if e.Manager == PartialManager {
			return true
		}
	}
	return false
}

// partialEntry is the managedFields of an object kept in part.
func partialEntries() []metav1.ManagedFieldsEntry {
	return []metav1.ManagedFieldsEntry{{Manager: PartialManager, Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1"}}
}

// Fields returns a cache transform for the kind of obj (its Go type, or
// for an *unstructured.Unstructured its apiVersion and kind) that keeps of
// each object its metadata and the fields at paths, and nothing else: for a
// kind the operator only watches for a few of its fields, such as a Pod's
// phase and exit code:
//
//	pods, err := diet.Fields(&corev1.Pod{}, "status.phase", "status.containerStatuses.state.terminated.exitCode")
//	ctrl.Options{Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
//		&corev1.Pod{}: {Transform: pods}}}}
//
// A path names fields by their JSON names, from the top of the object,
// separated by dots, as kubectl explain does: a list or map on the way is
// gone through element by element (each element keeps what the rest of the
// path names, and the list its length), and the field a path ends at is
// kept whole. The metadata is kept whole (names, labels, annotations,
// owner references, finalizers, deletion, resourceVersion: what
// controller-runtime's handlers, predicates and indexes and the library
// read), but for managedFields, which hold one entry instead, that of
// [PartialManager]: [IsPartial] then says the object is a part. A path
// unknown to the Go type, or one under metadata, is an error; an empty
// paths keeps the metadata only.
//
// What reads a part must need nothing else. The library's functions say
// what they need of a cached object in their documentation, and refuse a
// part where they need the whole: drift's Ensure reads such an object whole
// from its Writer's APIReader (or returns an error wrapping [ErrPartial]
// without one) before comparing, so that a part is never taken for drift;
// reconcile.Loop refuses to reconcile one. Never write a part back with an
// Update: the server would take its missing fields for removed ones.
//
// The transform returns a new object and leaves the one it is given alone;
// it is idempotent (a part passes through), and objects of other types
// pass through.
func Fields(obj client.Object, paths ...string) (toolscache.TransformFunc, error) {
	if obj == nil || reflect.ValueOf(obj).Kind() == reflect.Pointer && reflect.ValueOf(obj).IsNil() {
		return nil, errors.Permanent(errors.New("diet: Fields: nil object"))
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		gvk := u.GroupVersionKind()
		if gvk.Kind == "" {
			return nil, errors.Permanent(errors.New("diet: Fields: an unstructured object needs its apiVersion and kind"))
		}
		root, err := plan(nil, paths)
		if err != nil {
			return nil, errors.Permanent(fmt.Errorf("diet: Fields(%s): %w", gvk.Kind, err))
		}
		return (&unstructuredFields{apiVersion: u.GetAPIVersion(), kind: gvk.Kind, root: root}).transform, nil
	}
	t := reflect.TypeOf(obj)
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil, errors.Permanent(fmt.Errorf("diet: Fields: %T is not a pointer to a struct", obj))
	}
	meta, ok := jsonFields(t.Elem())["metadata"]
	if !ok {
		return nil, errors.Permanent(fmt.Errorf("diet: Fields: %T has no metadata field", obj))
	}
	root, err := plan(t.Elem(), paths)
	if err != nil {
		return nil, errors.Permanent(fmt.Errorf("diet: Fields(%T): %w", obj, err))
	}
	tf := &typedFields{t: t, meta: meta, root: root}
	for name, index := range jsonFields(t.Elem()) {
		if name == "apiVersion" || name == "kind" {
			tf.typeMeta = append(tf.typeMeta, index)
		}
	}
	return tf.transform, nil
}

// node is what a transform keeps of one field: the whole of it, or the
// fields named in kids (of the struct it is, or of its elements).
type node struct {
	whole bool
	kids  []kid
}

type kid struct {
	name  string
	index []int // the field's index in its struct (typed)
	node  *node
}

func (n *node) kid(name string) *node {
	for i := range n.kids {
		if n.kids[i].name == name {
			return n.kids[i].node
		}
	}
	return nil
}

// plan builds the tree of paths over type t (nil: JSON, unchecked).
func plan(t reflect.Type, paths []string) (*node, error) {
	root := &node{}
	for _, p := range paths {
		segs := strings.Split(p, ".")
		if p == "" || segs[0] == "" {
			return nil, fmt.Errorf("path %q: empty", p)
		}
		if segs[0] == "metadata" || segs[0] == "apiVersion" || segs[0] == "kind" {
			return nil, fmt.Errorf("path %q: the metadata, apiVersion and kind are kept whole", p)
		}
		n, ft := root, t
		for i, seg := range segs {
			if seg == "" {
				return nil, fmt.Errorf("path %q: empty field name", p)
			}
			var index []int
			if ft != nil {
				st := structOf(ft)
				if st == nil {
					return nil, fmt.Errorf("path %q: %s is not an object: it has no field %q", p, strings.Join(segs[:i], "."), seg)
				}
				var ok bool
				if index, ok = jsonFields(st)[seg]; !ok {
					return nil, fmt.Errorf("path %q: %s has no field %q", p, st, seg)
				}
				ft = st.FieldByIndex(index).Type
			}
			if n.whole {
				break // an earlier path keeps it all
			}
			next := n.kid(seg)
			if next == nil {
				next = &node{}
				n.kids = append(n.kids, kid{name: seg, index: index, node: next})
			}
			n = next
		}
		n.whole, n.kids = true, nil
	}
	return root, nil
}

// structOf returns the struct type t holds, through pointers, lists and
// maps; nil when it holds none.
func structOf(t reflect.Type) reflect.Type {
	for {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			t = t.Elem()
		case reflect.Struct:
			return t
		default:
			return nil
		}
	}
}

// jsonFields returns the fields of struct type t by JSON name, the fields
// of inline and embedded untagged structs included, as encoding/json sees
// them.
func jsonFields(t reflect.Type) map[string][]int {
	out := map[string][]int{}
	var walk func(t reflect.Type, prefix []int)
	walk = func(t reflect.Type, prefix []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			index := append(append([]int(nil), prefix...), i)
			tag := f.Tag.Get("json")
			name, rest, _ := strings.Cut(tag, ",")
			if name == "-" && rest == "" {
				continue
			}
			inline := strings.Contains(","+rest+",", ",inline,") || f.Anonymous && name == ""
			if inline && f.Type.Kind() == reflect.Struct {
				walk(f.Type, index)
				continue
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			if _, dup := out[name]; !dup {
				out[name] = index
			}
		}
	}
	walk(t, nil)
	return out
}

// typedFields is a Fields transform of a Go type.
type typedFields struct {
	t        reflect.Type // pointer to struct
	meta     []int
	typeMeta [][]int
	root     *node
}

func (f *typedFields) transform(in any) (any, error) {
	src := reflect.ValueOf(in)
	if src.Type() != f.t || src.IsNil() {
		return in, nil
	}
	obj, ok := in.(metav1.Object)
	if !ok || IsPartial(obj) {
		return in, nil
	}
	out := reflect.New(f.t.Elem())
	s, d := src.Elem(), out.Elem()
	d.FieldByIndex(f.meta).Set(s.FieldByIndex(f.meta))
	for _, index := range f.typeMeta {
		d.FieldByIndex(index).Set(s.FieldByIndex(index))
	}
	copyKept(d, s, f.root)
	kept := out.Interface().(metav1.Object)
	kept.SetManagedFields(partialEntries())
	return kept, nil
}

// copyKept sets in dst (a zero value) what n keeps of src.
func copyKept(dst, src reflect.Value, n *node) {
	if n.whole {
		dst.Set(src)
		return
	}
	switch src.Kind() {
	case reflect.Struct:
		for _, k := range n.kids {
			copyKept(dst.FieldByIndex(k.index), src.FieldByIndex(k.index), k.node)
		}
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		dst.Set(reflect.New(src.Type().Elem()))
		copyKept(dst.Elem(), src.Elem(), n)
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		dst.Set(reflect.MakeSlice(src.Type(), src.Len(), src.Len()))
		for i := range src.Len() {
			copyKept(dst.Index(i), src.Index(i), n)
		}
	case reflect.Array:
		for i := range src.Len() {
			copyKept(dst.Index(i), src.Index(i), n)
		}
	case reflect.Map:
		if src.IsNil() {
			return
		}
		dst.Set(reflect.MakeMapWithSize(src.Type(), src.Len()))
		it := src.MapRange()
		for it.Next() {
			v := reflect.New(src.Type().Elem()).Elem()
			copyKept(v, it.Value(), n)
			dst.SetMapIndex(it.Key(), v)
		}
	}
}

// unstructuredFields is a Fields transform of unstructured objects of one
// kind.
type unstructuredFields struct {
	apiVersion, kind string
	root             *node
}

func (f *unstructuredFields) transform(in any) (any, error) {
	u, ok := in.(*unstructured.Unstructured)
	if !ok || u == nil || u.GetKind() != f.kind || u.GetAPIVersion() != f.apiVersion || IsPartial(u) {
		return in, nil
	}
	out := map[string]any{}
	for _, k := range []string{"apiVersion", "kind"} {
		if v, ok := u.Object[k]; ok {
			out[k] = v
		}
	}
	if m, ok := u.Object["metadata"].(map[string]any); ok {
		meta := make(map[string]any, len(m))
		for k, v := range m {
			if k != "managedFields" {
				meta[k] = v
			}
		}
		meta["managedFields"] = []any{map[string]any{"manager": PartialManager, "operation": string(metav1.ManagedFieldsOperationUpdate), "fieldsType": "FieldsV1"}}
		out["metadata"] = meta
	}
	for _, k := range f.root.kids {
		if v, ok := u.Object[k.name]; ok {
			if kept, ok := keptJSON(v, k.node); ok {
				out[k.name] = kept
			}
		}
	}
	return &unstructured.Unstructured{Object: out}, nil
}

// keptJSON returns what n keeps of the JSON value v, and false when it
// keeps nothing of it.
func keptJSON(v any, n *node) (any, bool) {
	if n.whole {
		return v, true
	}
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for _, k := range n.kids {
			if c, ok := v[k.name]; ok {
				if kept, ok := keptJSON(c, k.node); ok {
					out[k.name] = kept
				}
			}
		}
		return out, true
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			kept, ok := keptJSON(e, n)
			if !ok {
				kept = map[string]any{}
			}
			out[i] = kept
		}
		return out, true
	}
	return nil, false
}
