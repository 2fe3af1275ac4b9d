package reconcile

import (
	"reflect"
	"strings"
	"sync"

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
)

// fieldInfo describes one JSON-visible field of a struct.
type fieldInfo struct {
	index    int
	name     string // JSON name
	inline   bool   // embedded or ",inline": its fields belong to the parent
	mergeKey string // from the patchMergeKey struct tag
}

// typeInfo describes a struct type once; the walk reads it on every visit.
type typeInfo struct {
	special special
	fields  []fieldInfo
	byName  map[string]int // JSON name -> index into fields (direct fields only)
}

// typeInfos memoizes typeInfo per struct type, like encoding/json's field
// cache. It holds only facts derived from Go types, never user data.
var typeInfos sync.Map // reflect.Type -> *typeInfo

func infoFor(t reflect.Type) *typeInfo {
	if ti, ok := typeInfos.Load(t); ok {
		return ti.(*typeInfo)
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
			f := fieldInfo{index: i, name: name, mergeKey: sf.Tag.Get("patchMergeKey")}
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
	actual, _ := typeInfos.LoadOrStore(t, ti)
	return actual.(*typeInfo)
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
