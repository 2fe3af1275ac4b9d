package diet

import (
	"hash/maphash"
	"reflect"
	"runtime"
	"sync"
	"unsafe"
	"weak"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	toolscache "k8s.io/client-go/tools/cache"
)

// Intern returns a transform that makes the strings many objects of a cache
// hold alike share one copy. Decoding gives every object its own copy of
// each string: ten thousand objects in one namespace hold ten thousand
// copies of its name, of their finalizer and of the type, status and reason
// of each of their conditions. Intern replaces each such string by its
// one copy of the same value; the object reads the same.
//
// It interns, of every object, the strings that name a kind of thing
// rather than the object itself: metadata.namespace, the keys and values of
// metadata.labels, the keys of metadata.annotations, metadata.finalizers,
// the apiVersion and kind of metadata.ownerReferences, the manager,
// operation, apiVersion, fieldsType and subresource of
// metadata.managedFields, and the type, status and reason of each element
// of status.conditions (metav1.Condition, a typed condition of any struct
// type with those string fields, or its unstructured form). Names, UIDs,
// resourceVersions, annotation values and condition messages, which tend
// to differ from one object to the next, are left as they are, and so is
// a label value that is a UID (a child labelled with its owner's UID).
//
// The transform keeps the values it met in a table of its own, each while
// an object holds it: the table refers to its copy weakly, and the garbage
// collector drops a value once no object holds it any more (the name of a
// namespace whose objects are all gone, for example). It holds at most
// 4,096 values: when the table is full of values in use it starts afresh
// (the strings already shared stay shared), so values that differ on every
// object (a label holding a hash) cost a bounded table, never a growing
// one. It is safe for concurrent use by the informers of one cache;
// [CacheOptions] runs one after [ManagedFields] on every cache it sets up.
func Intern() toolscache.TransformFunc {
	in := &interner{}
	interners.Add(in)
	return in.transform
}

// internMax is how many distinct values an interner holds before it starts
// afresh; internMaxLen the longest string it interns.
const (
	internMax    = 4096
	internMaxLen = 512
)

// interner is the state of one Intern transform.
type interner struct {
	mu sync.Mutex
	// values are the copies the objects share, by the hash of their value
	// (a map keyed by the strings would hold them): each refers weakly to
	// a copy of its own, which goes once no object holds it.
	values map[uint64]internedValue
	seed   maphash.Seed
	// self is the interner, for the cleanups of its copies, which must not
	// keep it.
	self weak.Pointer[interner]
	// plans is a sync.Map of reflect.Type to *conditionsPlan: where a
	// typed object keeps its conditions.
	plans sync.Map
}

// internedValue is a copy the objects share: its bytes, referred to
// weakly, and its length.
type internedValue struct {
	data weak.Pointer[byte]
	n    int
}

// value returns the copy, or false once no object holds it.
func (v internedValue) value() (string, bool) {
	p := v.data.Value()
	if p == nil {
		return "", false
	}
	return unsafe.String(p, v.n), true
}

// internMinAlloc is the smallest copy the interner makes: the runtime packs
// smaller pointer-free allocations several to a slot, and a copy packed
// with a string some object keeps would never be found unused.
const internMinAlloc = 16

// intern returns the interner's copy of s, making one when it has none.
// Callers hold mu, or a lock of their own that guards the interner.
func (in *interner) intern(s string) string {
	if s == "" || len(s) > internMaxLen || isUID(s) {
		return s
	}
	if in.values == nil {
		in.values = make(map[uint64]internedValue, 64)
		in.seed = maphash.MakeSeed()
		in.self = weak.Make(in)
	}
	h := maphash.String(in.seed, s)
	if iv, ok := in.values[h]; ok {
		v, held := iv.value()
		switch {
		case held && v == s:
			return v
		case held:
			return s // another value of the same hash keeps the slot
		}
	}
	if len(in.values) >= internMax {
		in.values = make(map[uint64]internedValue, 64)
	}
	buf := make([]byte, max(len(s), internMinAlloc))
	copy(buf, s)
	p := &buf[0]
	iv := internedValue{data: weak.Make(p), n: len(s)}
	in.values[h] = iv
	runtime.AddCleanup(p, forgetValue, unusedValue{in: in.self, hash: h, data: iv.data})
	return unsafe.String(p, len(s))
}

// unusedValue is a copy of a value no object holds any more.
type unusedValue struct {
	in   weak.Pointer[interner]
	hash uint64
	data weak.Pointer[byte]
}

// forgetValue drops a copy no object holds from its table, unless the
// table started afresh or holds another copy since.
func forgetValue(u unusedValue) {
	in := u.in.Value()
	if in == nil {
		return
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if iv, ok := in.values[u.hash]; ok && iv.data == u.data {
		delete(in.values, u.hash)
	}
}

// transform interns the strings of obj that Intern names.
func (in *interner) transform(obj any) (any, error) {
	v := reflect.ValueOf(obj)
	if v.Kind() == reflect.Pointer && v.IsNil() {
		return obj, nil
	}
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		in.mu.Lock()
		in.unstructured(o.Object)
		in.mu.Unlock()
	case metav1.Object:
		plan := in.plan(v.Type())
		in.mu.Lock()
		in.meta(o)
		plan.intern(v, in)
		in.mu.Unlock()
	}
	return obj, nil
}

// meta interns o's metadata in place.
func (in *interner) meta(o metav1.Object) {
	if ns := o.GetNamespace(); ns != "" {
		o.SetNamespace(in.intern(ns))
	}
	in.stringMap(o.GetLabels(), true)
	in.stringMap(o.GetAnnotations(), false)
	fins := o.GetFinalizers()
	for i := range fins {
		fins[i] = in.intern(fins[i])
	}
	refs := o.GetOwnerReferences()
	for i := range refs {
		refs[i].APIVersion = in.intern(refs[i].APIVersion)
		refs[i].Kind = in.intern(refs[i].Kind)
	}
	entries := o.GetManagedFields()
	for i := range entries {
		e := &entries[i]
		e.Manager = in.intern(e.Manager)
		e.Operation = metav1.ManagedFieldsOperationType(in.intern(string(e.Operation)))
		e.APIVersion = in.intern(e.APIVersion)
		e.FieldsType = in.intern(e.FieldsType)
		e.Subresource = in.intern(e.Subresource)
	}
}

// stringMap interns the keys of m in place, and its values when values is
// true. Assigning to a key that is there replaces the map's copy of the
// key with the one assigned.
func (in *interner) stringMap(m map[string]string, values bool) {
	for k, v := range m {
		if values {
			v = in.intern(v)
		}
		m[in.intern(k)] = v
	}
}

// unstructured interns the same strings in the maps of an unstructured
// object.
func (in *interner) unstructured(obj map[string]any) {
	if md, ok := obj["metadata"].(map[string]any); ok {
		in.strings(md, "namespace")
		if m, ok := md["labels"].(map[string]any); ok {
			in.anyMap(m, true)
		}
		if m, ok := md["annotations"].(map[string]any); ok {
			in.anyMap(m, false)
		}
		if fins, ok := md["finalizers"].([]any); ok {
			for i, f := range fins {
				if s, ok := f.(string); ok {
					fins[i] = in.intern(s)
				}
			}
		}
		in.each(md["ownerReferences"], "apiVersion", "kind")
		in.each(md["managedFields"], "manager", "operation", "apiVersion", "fieldsType", "subresource")
	}
	if st, ok := obj["status"].(map[string]any); ok {
		in.each(st["conditions"], "type", "status", "reason")
	}
}

// each interns the string fields named of each map in list, a []any.
func (in *interner) each(list any, fields ...string) {
	items, _ := list.([]any)
	for _, item := range items {
		if m, ok := item.(map[string]any); ok {
			in.strings(m, fields...)
		}
	}
}

// strings interns the string values of m's fields named.
func (in *interner) strings(m map[string]any, fields ...string) {
	for _, f := range fields {
		if s, ok := m[f].(string); ok {
			m[f] = in.intern(s)
		}
	}
}

// anyMap is stringMap for the map[string]any of an unstructured object.
func (in *interner) anyMap(m map[string]any, values bool) {
	for k, v := range m {
		if s, ok := v.(string); ok && values {
			v = in.intern(s)
		}
		m[in.intern(k)] = v
	}
}

// conditionsPlan says where a typed object's status.conditions are: the
// index of the Status field in the object's struct, of Conditions in
// Status's, and of the string fields Type, Status and Reason in an
// element's. A nil plan interns nothing.
type conditionsPlan struct {
	status, conditions int
	fields             []int
}

// plan returns the conditionsPlan of t, a pointer to a struct, computed
// once per type.
func (in *interner) plan(t reflect.Type) *conditionsPlan {
	if p, ok := in.plans.Load(t); ok {
		return p.(*conditionsPlan)
	}
	p := planConditions(t)
	in.plans.Store(t, p)
	return p
}

func planConditions(t reflect.Type) *conditionsPlan {
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil
	}
	status, ok := t.Elem().FieldByName("Status")
	if !ok || len(status.Index) != 1 || status.Type.Kind() != reflect.Struct {
		return nil
	}
	conds, ok := status.Type.FieldByName("Conditions")
	if !ok || len(conds.Index) != 1 || conds.Type.Kind() != reflect.Slice || conds.Type.Elem().Kind() != reflect.Struct {
		return nil
	}
	p := &conditionsPlan{status: status.Index[0], conditions: conds.Index[0]}
	for _, name := range []string{"Type", "Status", "Reason"} {
		if f, ok := conds.Type.Elem().FieldByName(name); ok && len(f.Index) == 1 && f.Type.Kind() == reflect.String && f.IsExported() {
			p.fields = append(p.fields, f.Index[0])
		}
	}
	if len(p.fields) == 0 {
		return nil
	}
	return p
}

// intern interns the planned fields of the conditions of v, a non-nil
// pointer to the plan's struct. Callers hold in.mu.
func (p *conditionsPlan) intern(v reflect.Value, in *interner) {
	if p == nil {
		return
	}
	conds := v.Elem().Field(p.status).Field(p.conditions)
	for i := range conds.Len() {
		c := conds.Index(i)
		for _, f := range p.fields {
			s := c.Field(f)
			if s.CanSet() {
				s.SetString(in.intern(s.String()))
			}
		}
	}
}

// isUID reports whether s has the form of a UID (8-4-4-4-12 hexadecimal
// digits): a value that differs on every object, whose copy nobody shares.
func isUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return false
			}
		case '0' <= c && c <= '9', 'a' <= c && c <= 'f', 'A' <= c && c <= 'F':
		default:
			return false
		}
	}
	return true
}
