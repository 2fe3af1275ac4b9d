package compare

import (
	"maps"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// special marks struct types the walk compares as one value.
type special uint8

const (
	notSpecial special = iota
	specialQuantity
	specialTime
	specialMicroTime
	specialIntOrString
)

var (
	quantityType     = reflect.TypeFor[resource.Quantity]()
	timeType         = reflect.TypeFor[metav1.Time]()
	microTimeType    = reflect.TypeFor[metav1.MicroTime]()
	intOrStringType  = reflect.TypeFor[intstr.IntOrString]()
	stringMapType    = reflect.TypeFor[map[string]string]()
	resourceListType = reflect.TypeFor[corev1.ResourceList]()
	bytesType        = reflect.TypeFor[[]byte]()
	bytesMapType     = reflect.TypeFor[map[string][]byte]()
)

// fieldInfo describes one JSON-visible field of a struct.
type fieldInfo struct {
	index    int
	name     string // JSON name
	inline   bool   // embedded or ",inline": its fields belong to the parent
	mergeKey string // from the patchMergeKey struct tag
	sent     bool   // JSON carries the field even at its zero value (see sentAtZero)
	key      *fieldKeying
	typ      reflect.Type
}

// fieldKeying is the keying of a list field by its patchMergeKey, computed
// on first use (computing it in infoFor could recurse through the element
// type forever).
type fieldKeying struct {
	once sync.Once
	k    keying
	ok   bool
}

// keying returns the keying of the field's list, whose element type is et.
func (f *fieldInfo) keying(et reflect.Type) (keying, bool) {
	if f == nil || f.key == nil {
		return keying{}, false
	}
	f.key.once.Do(func() { f.key.k, f.key.ok = typedKeying(et, f.mergeKey) })
	return f.key.k, f.key.ok
}

// typeInfo describes a struct type once; the walk reads it on every visit.
type typeInfo struct {
	special special
	fields  []fieldInfo
	byName  map[string]int // JSON name -> index into fields (direct fields only)
}

// typeInfos memoizes typeInfo per struct type, like encoding/json's field
// cache. It holds only facts derived from Go types, never user data: a map
// replaced whole on each new type (a program meets few), so that reading it,
// once per struct the walk visits, is one atomic load and a lookup.
var typeInfos struct {
	mu    sync.Mutex
	types atomic.Pointer[map[reflect.Type]*typeInfo]
}

func infoFor(t reflect.Type) *typeInfo {
	if m := typeInfos.types.Load(); m != nil {
		if ti, ok := (*m)[t]; ok {
			return ti
		}
	}
	ti := &typeInfo{byName: map[string]int{}}
	switch t {
	case quantityType:
		ti.special = specialQuantity
	case timeType:
		ti.special = specialTime
	case microTimeType:
		ti.special = specialMicroTime
	case intOrStringType:
		ti.special = specialIntOrString
	}
	if ti.special == notSpecial {
		for i := range t.NumField() {
			sf := t.Field(i)
			if !sf.IsExported() {
				continue
			}
			tag := sf.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			f := fieldInfo{index: i, name: name, mergeKey: sf.Tag.Get("patchMergeKey"), sent: sentAtZero(sf.Type, opts), typ: sf.Type}
			if f.mergeKey != "" && sf.Type.Kind() == reflect.Slice {
				f.key = &fieldKeying{}
			}
			if (name == "" && sf.Anonymous) || strings.Contains(","+opts+",", ",inline,") {
				ft := sf.Type
				if ft.Kind() == reflect.Struct {
					f.inline = true
				}
			}
			if f.name == "" {
				f.name = sf.Name
			}
			if !f.inline {
				ti.byName[f.name] = len(ti.fields)
			}
			ti.fields = append(ti.fields, f)
		}
	}
	typeInfos.mu.Lock()
	defer typeInfos.mu.Unlock()
	old := typeInfos.types.Load()
	if old != nil {
		if known, ok := (*old)[t]; ok {
			return known
		}
	}
	next := make(map[reflect.Type]*typeInfo, 1+len(derefMap(old)))
	maps.Copy(next, derefMap(old))
	next[t] = ti
	typeInfos.types.Store(&next)
	return ti
}

// keyFieldIndex returns the Go field index of the JSON field key in struct
// type t, or -1.
func keyFieldIndex(t reflect.Type, key string) int {
	if t.Kind() != reflect.Struct {
		return -1
	}
	ti := infoFor(t)
	i, ok := ti.byName[key]
	if !ok {
		return -1
	}
	switch t.Field(ti.fields[i].index).Type.Kind() {
	case reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return ti.fields[i].index
	}
	return -1
}

func derefMap(m *map[reflect.Type]*typeInfo) map[reflect.Type]*typeInfo {
	if m == nil {
		return nil
	}
	return *m
}

// childType is the Go type of the field or map value name in a value of
// type t (nil when unknown); in metadata, labels and annotations are maps.
func childType(t reflect.Type, m mode, name string) reflect.Type {
	if m == modeMeta && (name == "labels" || name == "annotations") {
		return stringMapType
	}
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == nil:
		return nil
	case t.Kind() == reflect.Map:
		return t.Elem()
	case t.Kind() != reflect.Struct:
		return nil
	}
	ti := infoFor(t)
	if i, ok := ti.byName[name]; ok {
		return ti.fields[i].typ
	}
	for _, f := range ti.fields {
		if f.inline {
			if ft := childType(f.typ, modeNormal, name); ft != nil {
				return ft
			}
		}
	}
	return nil
}

// elemType is the element type of a list of type t, or nil.
func elemType(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Slice {
		return nil
	}
	return t.Elem()
}

// sentAtZero reports whether a field of type t with JSON tag options opts is
// in the object's JSON (and so in a server-side apply) even at its zero
// value: a scalar without omitempty, or an IntOrString or Quantity, which
// encode their zero as 0.
func sentAtZero(t reflect.Type, opts string) bool {
	switch t.Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return !strings.Contains(","+opts+",", ",omitempty,")
	}
	return t == intOrStringType || t == quantityType
}
