package compare

import (
	"bytes"
	"hash/maphash"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/reconcilekit/reconcilekit/internal/jsonnum"
	"github.com/reconcilekit/reconcilekit/internal/managedfields"
)

// Owned fields (the rule is in the package documentation, "Fields we wrote
// before"): this file turns an object's metadata.managedFields into the tree
// of what our field owner owns, which the walk consults (owned_walk.go).
// Which entries are ours, and their fields, come from internal/managedfields
// (the library's one decoder, with structured-merge-diff's fieldpath.Set);
// the tree is memoized by content, so a converged object costs a hash and a
// compare.

// ownedNode is one node of the fields we own, compiled once per
// managedFields content (see ownedFor) and shared, read-only, by every walk
// of an object with that content.
type ownedNode struct {
	update, apply bool // a member of our Update / Apply entry
	removable     bool // no other manager owns it or anything beneath it
	reach         bool // it or a node beneath it is removable and ours
	below         bool // a node beneath it is removable and ours
	fields        []ownedField
	elems         []ownedElem
	typed         atomic.Pointer[[]typedKids] // children by field of a Go struct type
}

type ownedField struct {
	name string
	node *ownedNode
}

// ownedElem is a list element we own: by key fields (k:) or by value (v:).
type ownedElem struct {
	key   []ownedKey
	value any
	node  *ownedNode
}

type ownedKey struct {
	name  string
	value any // a JSON scalar: string, int64, float64 or bool
}

type typedKids struct {
	t    reflect.Type
	kids []*ownedNode // by index into infoFor(t).fields
}

// drops reports whether a value we own at this node, which desired does not
// set, is drift to remove. entry says the node is a list element or map
// entry rather than a struct field.
func (o *ownedNode) drops(entry bool) bool {
	return o != nil && o.removable && (o.apply || o.update && entry)
}

// field returns the child for the field or map key name, or nil.
func (o *ownedNode) field(name string) *ownedNode {
	if o == nil {
		return nil
	}
	i, found := slices.BinarySearchFunc(o.fields, name, func(f ownedField, name string) int { return strings.Compare(f.name, name) })
	if !found {
		return nil
	}
	return o.fields[i].node
}

// kidsFor returns the children of o by the fields of struct type t, nil
// where o has none (inline fields share o, the walk passes it down).
func (o *ownedNode) kidsFor(t reflect.Type) []*ownedNode {
	cached := o.typed.Load()
	if cached != nil {
		for _, tk := range *cached {
			if tk.t == t {
				return tk.kids
			}
		}
	}
	ti := infoFor(t)
	kids := make([]*ownedNode, len(ti.fields))
	for i, f := range ti.fields {
		if !f.inline {
			kids[i] = o.field(f.name)
		}
	}
	// A node meets few struct types (its own and inline ones); a lost race
	// only costs another computation.
	var next []typedKids
	if cached != nil {
		next = append(next, *cached...)
	}
	if len(next) < 4 {
		next = append(next, typedKids{t: t, kids: kids})
		o.typed.Store(&next)
	}
	return kids
}

// elemFor returns our element matching the list element e by its key fields
// (a missing or empty field a KeyDefault names has its default: a protocol
// is TCP, as the API defaults it) or value.
func (o *ownedNode) elemFor(e reflect.Value, keys []KeyDefault) *ownedElem {
	if o == nil || len(o.elems) == 0 {
		return nil
	}
	if e.Kind() == reflect.Interface {
		e = e.Elem()
	}
	var ti *typeInfo
	if e.Kind() == reflect.Struct {
		ti = infoFor(e.Type())
	}
	for i := range o.elems {
		if o.elems[i].matches(e, ti, keys) {
			return &o.elems[i]
		}
	}
	return nil
}

// nodeOrNil returns the element's node; nil for no element.
func (oe *ownedElem) nodeOrNil() *ownedNode {
	if oe == nil {
		return nil
	}
	return oe.node
}

// matches reports whether e (a struct of type ti, or JSON) is the element.
func (oe *ownedElem) matches(e reflect.Value, ti *typeInfo, keys []KeyDefault) bool {
	if oe.key == nil {
		return e.IsValid() && e.Kind() != reflect.Struct && e.Kind() != reflect.Map && uscalarEqual(oe.value, e.Interface(), false)
	}
	for _, k := range oe.key {
		var v reflect.Value
		switch {
		case !e.IsValid():
			return false
		case ti != nil:
			i, ok := ti.byName[k.name]
			if !ok {
				return false
			}
			v = e.Field(ti.fields[i].index)
		case e.Type() == jsonObjectType:
			v = reflect.ValueOf(e.Interface().(map[string]any)[k.name])
		default:
			return false
		}
		if !k.matches(v, keys) {
			return false
		}
	}
	return true
}

var jsonObjectType = reflect.TypeFor[map[string]any]()

// matches reports whether a list element's key field v (invalid when
// missing) has the key's value; a missing or empty field a KeyDefault names
// has its default (a protocol is TCP, as the API defaults it).
func (k *ownedKey) matches(v reflect.Value, keys []KeyDefault) bool {
	if !v.IsValid() || v.Kind() == reflect.String && v.String() == "" {
		if def, ok := defaultOf(keys, k.name); ok {
			return k.value == def
		}
	}
	switch v.Kind() {
	case reflect.Invalid:
		return false
	case reflect.String:
		s, ok := k.value.(string)
		return ok && s == v.String()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		i, ok := jsonnum.Int(k.value)
		return ok && i == v.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		i, ok := jsonnum.Int(k.value)
		return ok && i >= 0 && uint64(i) == v.Uint()
	case reflect.Bool:
		b, ok := k.value.(bool)
		return ok && b == v.Bool()
	}
	return v.CanInterface() && uscalarEqual(k.value, v.Interface(), false)
}

// compile builds our tree from the sets of our Update and Apply entries
// (either may be nil) and the union of every other entry's set.
func compile(update, apply, others *fieldpath.Set) *ownedNode {
	n := &ownedNode{}
	var pes []fieldpath.PathElement
	for _, s := range []*fieldpath.Set{update, apply} {
		if s != nil {
			s.Members.Iterate(func(pe fieldpath.PathElement) { pes = append(pes, pe) })
			s.Children.Iterate(func(pe fieldpath.PathElement) { pes = append(pes, pe) })
		}
	}
	slices.SortFunc(pes, fieldpath.PathElement.Compare)
	pes = slices.CompactFunc(pes, fieldpath.PathElement.Equals)
	for _, pe := range pes {
		if pe.Index != nil {
			continue // atomic lists are owned whole
		}
		child := compile(childSet(update, pe), childSet(apply, pe), childSet(others, pe))
		child.update = update != nil && update.Members.Has(pe)
		child.apply = apply != nil && apply.Members.Has(pe)
		theirs := childSet(others, pe)
		child.removable = others == nil || !others.Members.Has(pe) && (theirs == nil || theirs.Empty())
		child.below = child.reach
		child.reach = child.reach || child.removable && (child.update || child.apply)
		n.reach = n.reach || child.reach
		switch {
		case pe.FieldName != nil:
			n.fields = append(n.fields, ownedField{name: *pe.FieldName, node: child})
		case pe.Key != nil:
			key := make([]ownedKey, len(*pe.Key))
			for i, f := range *pe.Key {
				key[i] = ownedKey{name: f.Name, value: f.Value.Unstructured()}
			}
			n.elems = append(n.elems, ownedElem{key: key, node: child})
		case pe.Value != nil:
			n.elems = append(n.elems, ownedElem{value: (*pe.Value).Unstructured(), node: child})
		}
	}
	slices.SortFunc(n.fields, func(x, y ownedField) int { return strings.Compare(x.name, y.name) })
	return n
}

func childSet(s *fieldpath.Set, pe fieldpath.PathElement) *fieldpath.Set {
	if s == nil {
		return nil
	}
	c, _ := s.Children.Get(pe)
	return c
}

// ownedMemo is one compiled managedFields content.
type ownedMemo struct {
	query   managedfields.Query
	entries []managedfields.Entry // copies, to verify a hit
	root    *ownedNode
}

// owned memoizes compiled managedFields by a hash of their content. It is
// bounded, safe for concurrent use, and a miss only costs the compilation:
// no result depends on it.
var owned = struct {
	sync.Mutex
	seed  maphash.Seed
	byKey map[uint64]*ownedMemo
	order []uint64 // insertion order, for eviction
}{seed: maphash.MakeSeed(), byKey: map[uint64]*ownedMemo{}}

const ownedMemoSize = 512

// ownedFor returns what we own in the object (typed obj, or unstructured
// content) under q, nil when nothing.
func ownedFor(q *managedfields.Query, obj any, content map[string]any) *ownedNode {
	found := false
	managedfields.Each(obj, content, func(e managedfields.Entry) bool { found = q.Ours(&e); return !found })
	if !found {
		return nil
	}
	key := mix(maphash.String(owned.seed, q.Owner) ^ mix(maphash.String(owned.seed, q.APIVersion)) ^ mix(mix(maphash.String(owned.seed, string(q.Replaces)))))
	if q.ApplyOnly {
		key = mix(key + 1)
	}
	managedfields.Each(obj, content, func(e managedfields.Entry) bool {
		for _, s := range [...]string{e.Manager, e.Operation, e.APIVersion, e.Subresource} {
			key = mix(key ^ maphash.String(owned.seed, s))
		}
		key = mix(key ^ maphash.Bytes(owned.seed, e.Raw) ^ hashJSON(e.Tree))
		return true
	})
	owned.Lock()
	m := owned.byKey[key]
	owned.Unlock()
	if m != nil && m.matches(q, obj, content) {
		return m.root
	}
	m = compileEntries(q, obj, content)
	owned.Lock()
	if _, ok := owned.byKey[key]; !ok {
		if len(owned.order) >= ownedMemoSize {
			delete(owned.byKey, owned.order[0])
			owned.order = owned.order[1:]
		}
		owned.order = append(owned.order, key)
	}
	owned.byKey[key] = m
	owned.Unlock()
	return m.root
}

// matches verifies a memo hit against the object's entries.
func (m *ownedMemo) matches(q *managedfields.Query, obj any, content map[string]any) bool {
	if m.query != *q {
		return false
	}
	i, same := 0, true
	managedfields.Each(obj, content, func(e managedfields.Entry) bool {
		if i >= len(m.entries) {
			same = false
			return false
		}
		s := &m.entries[i]
		i++
		same = s.Manager == e.Manager && s.Operation == e.Operation && s.APIVersion == e.APIVersion &&
			s.Subresource == e.Subresource && bytes.Equal(s.Raw, e.Raw) && jsonEqual(s.Tree, e.Tree)
		return same
	})
	return same && i == len(m.entries)
}

// compileEntries parses every entry and compiles our tree. An entry that
// does not parse owns nothing: ours then removes nothing, and another's
// could own anything, so nothing is removed at all.
func compileEntries(q *managedfields.Query, obj any, content map[string]any) *ownedMemo {
	m := &ownedMemo{query: *q}
	var update, apply, others *fieldpath.Set
	broken := false
	managedfields.Each(obj, content, func(e managedfields.Entry) bool {
		c := e
		c.Raw = bytes.Clone(e.Raw)
		c.Tree = runtime.DeepCopyJSONValue(e.Tree)
		m.entries = append(m.entries, c)
		s, err := managedfields.Decode(&e)
		switch {
		case err != nil:
			broken = true
		case !q.Ours(&e):
			others = managedfields.Union(others, s)
		case e.Operation == string(metav1.ManagedFieldsOperationApply):
			apply = managedfields.Union(apply, s)
		default:
			update = managedfields.Union(update, s)
		}
		return true
	})
	if !broken && (update != nil || apply != nil) {
		m.root = compile(update, apply, others)
	}
	return m
}

// hashJSON hashes decoded JSON, independently of map order. Other Go types
// (only in hand-built content) hash alike; jsonEqual tells them apart.
func hashJSON(v any) uint64 {
	switch v := v.(type) {
	case map[string]any:
		var sum uint64
		for k, e := range v {
			sum += mix(maphash.String(owned.seed, k) ^ mix(hashJSON(e)))
		}
		return mix(sum ^ '{')
	case []any:
		h := uint64('[')
		for _, e := range v {
			h = mix(h ^ hashJSON(e))
		}
		return h
	case string:
		return maphash.String(owned.seed, v)
	case bool:
		if v {
			return mix(2)
		}
		return mix(3)
	case int64:
		return mix(uint64(v) ^ 'i')
	case float64:
		return mix(math.Float64bits(v) ^ 'f')
	}
	return 0
}

// mix is the splitmix64 finalizer.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// jsonEqual compares decoded JSON.
func jsonEqual(a, b any) bool {
	switch a := a.(type) {
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, x := range a {
			y, ok := b[k]
			if !ok || !jsonEqual(x, y) {
				return false
			}
		}
		return true
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !jsonEqual(a[i], b[i]) {
				return false
			}
		}
		return true
	}
	return reflect.TypeOf(a) == reflect.TypeOf(b) && (a == nil || reflect.TypeOf(a).Comparable() && a == b)
}

// kindOf returns the apiVersion and kind of the actual object: of
// unstructured content from the content, of a typed object from the
// scheme, or else from its TypeMeta; and the Go type the scheme has for
// unstructured content's kind (nil when unknown or for a typed object).
func kindOf(scheme *runtime.Scheme, actual any, content map[string]any) (schema.GroupVersionKind, reflect.Type) {
	if content != nil {
		apiVersion, _ := content["apiVersion"].(string)
		kind, _ := content["kind"].(string)
		gv, err := schema.ParseGroupVersion(apiVersion)
		if err != nil {
			return schema.GroupVersionKind{}, nil
		}
		gvk := gv.WithKind(kind)
		if scheme == nil {
			return gvk, nil
		}
		return gvk, scheme.AllKnownTypes()[gvk]
	}
	obj, ok := actual.(runtime.Object)
	if !ok {
		return schema.GroupVersionKind{}, nil
	}
	own := obj.GetObjectKind().GroupVersionKind()
	if scheme == nil {
		return own, nil
	}
	gvks, _, err := scheme.ObjectKinds(obj)
	switch {
	case err != nil || len(gvks) == 0:
		return own, nil
	case len(gvks) == 1:
		return gvks[0], nil
	}
	for _, gvk := range gvks { // several: the one the object names, if any
		if gvk == own {
			return gvk, nil
		}
	}
	return schema.GroupVersionKind{}, nil
}

// apiVersionOf returns gv as an apiVersion string ("apps/v1"), memoized so
// that a comparison does not build the string each time. The memo holds
// facts about group versions only, replaced whole on each new one (a
// program meets few), and is bounded.
func apiVersionOf(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return gv.Version
	}
	if m := apiVersions.m.Load(); m != nil {
		if s, ok := (*m)[gv]; ok {
			return s
		}
	}
	s := gv.String()
	apiVersions.mu.Lock()
	defer apiVersions.mu.Unlock()
	old := apiVersions.m.Load()
	next := map[schema.GroupVersion]string{}
	if old != nil && len(*old) < 1024 {
		maps.Copy(next, *old)
	}
	next[gv] = s
	apiVersions.m.Store(&next)
	return s
}

var apiVersions struct {
	mu sync.Mutex
	m  atomic.Pointer[map[schema.GroupVersion]string]
}
