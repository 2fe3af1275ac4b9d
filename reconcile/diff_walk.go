package reconcile

import (
	"fmt"
	"math"
	"reflect"
	"strconv"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// mode tells the struct walk where it is, for the default ignores.
type mode uint8

const (
	modeNormal mode = iota
	modeRoot        // the object itself: skip apiVersion, kind, status
	modeMeta        // metadata: compare labels, annotations (and owner refs on request)
)

// drift is one field that differs. A missing value (absent from actual, or
// from desired for owned maps and lists) is a nil interface.
type drift struct {
	path    string
	actual  any
	desired any
}

// walker compares desired against actual. Deciding (explain == false) stops
// at the first drift and allocates nothing on the common paths; explaining
// visits everything and records each drift with its path. With overlay, the
// walk also writes desired's value into actual at each drift: actual must
// then be an addressable copy that may be changed.
type walker struct {
	cfg     *diffConfig
	explain bool
	overlay bool
	track   bool // maintain path: explaining, or path rules present
	path    []byte
	drifts  []drift
}

func (w *walker) pushField(name string) int {
	n := len(w.path)
	if w.track {
		if n > 0 {
			w.path = append(w.path, '.')
		}
		w.path = append(w.path, name...)
	}
	return n
}

func (w *walker) pushKey(key string) int {
	n := len(w.path)
	if w.track {
		w.path = append(w.path, '[')
		w.path = append(w.path, key...)
		w.path = append(w.path, ']')
	}
	return n
}

func (w *walker) pushIndex(i int) int {
	n := len(w.path)
	if w.track {
		w.path = append(w.path, '[')
		w.path = strconv.AppendInt(w.path, int64(i), 10)
		w.path = append(w.path, ']')
	}
	return n
}

// pushElem pushes "[key=value]" for a keyed list element.
func (w *walker) pushElem(key string, kv reflect.Value) int {
	n := len(w.path)
	if w.track {
		w.path = append(w.path, '[')
		w.path = append(w.path, key...)
		w.path = append(w.path, '=')
		w.path = appendScalar(w.path, kv)
		w.path = append(w.path, ']')
	}
	return n
}

func appendScalar(b []byte, v reflect.Value) []byte {
	switch v.Kind() {
	case reflect.String:
		return append(b, v.String()...)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.AppendInt(b, v.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.AppendUint(b, v.Uint(), 10)
	default:
		return fmt.Append(b, v.Interface())
	}
}

func (w *walker) ignored() bool {
	return len(w.cfg.ignore) > 0 && anyMatch(w.cfg.ignore, w.path)
}

// differs is called where desired and actual differ by the walk's rules. It
// asks the caller's cmp options for a second opinion, records the drift when
// explaining, and reports whether it counts.
func (w *walker) differs(d, a reflect.Value, hasD, hasA bool) bool {
	if hasD && hasA && len(w.cfg.cmpOpts) > 0 && cmpEqual(a, d, w.cfg.cmpOpts) {
		return false
	}
	if w.explain {
		dr := drift{path: string(w.path)}
		if hasD {
			dr.desired = d.Interface()
		}
		if hasA {
			dr.actual = a.Interface()
		}
		w.drifts = append(w.drifts, dr)
	}
	return true
}

// cmpEqual is cmp.Equal that treats a panic (for example on unexported
// fields the options do not handle) as "not equal".
func cmpEqual(a, d reflect.Value, opts []cmp.Option) (eq bool) {
	defer func() {
		if recover() != nil {
			eq = false
		}
	}()
	return cmp.Equal(a.Interface(), d.Interface(), opts...)
}

// value compares one value. set is true when desired's value is known to be
// set by its position (a map value, a list element, a pointer's target), so a
// zero scalar is compared instead of meaning "don't care".
func (w *walker) value(d, a reflect.Value, set bool) bool {
	switch d.Kind() {
	case reflect.Pointer:
		if d.IsNil() {
			return true
		}
		if a.IsNil() {
			if w.differs(d, a, true, false) {
				if w.overlay {
					a.Set(d)
				}
				return false
			}
			return true
		}
		return w.value(d.Elem(), a.Elem(), true)
	case reflect.Interface:
		if d.IsNil() {
			return true
		}
		if a.IsNil() || d.Elem().Type() != a.Elem().Type() {
			if w.differs(d, a, true, !a.IsNil()) {
				if w.overlay {
					a.Set(d)
				}
				return false
			}
			return true
		}
		if w.overlay {
			tmp := reflect.New(a.Elem().Type()).Elem()
			tmp.Set(a.Elem())
			eq := w.value(d.Elem(), tmp, true)
			if !eq {
				a.Set(tmp)
			}
			return eq
		}
		return w.value(d.Elem(), a.Elem(), true)
	case reflect.Struct:
		return w.structValue(d, a, modeNormal, set)
	case reflect.Slice:
		return w.slice(d, a, "")
	case reflect.Array:
		eq := true
		for i := range d.Len() {
			n := w.pushIndex(i)
			if !w.ignored() && !w.value(d.Index(i), a.Index(i), true) {
				eq = false
				if !w.explain {
					w.path = w.path[:n]
					return false
				}
			}
			w.path = w.path[:n]
		}
		return eq
	case reflect.Map:
		return w.mapValue(d, a)
	}
	if !set && d.IsZero() {
		return true
	}
	if scalarEqual(d, a) {
		return true
	}
	if w.differs(d, a, true, true) {
		if w.overlay {
			a.Set(d)
		}
		return false
	}
	return true
}

func scalarEqual(d, a reflect.Value) bool {
	switch d.Kind() {
	case reflect.String:
		return d.String() == a.String()
	case reflect.Bool:
		return d.Bool() == a.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return d.Int() == a.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return d.Uint() == a.Uint()
	case reflect.Float32, reflect.Float64:
		x, y := d.Float(), a.Float()
		return x == y || (math.IsNaN(x) && math.IsNaN(y))
	case reflect.Complex64, reflect.Complex128:
		return d.Complex() == a.Complex()
	default:
		// Channels and functions are not part of API objects: never drift.
		return true
	}
}

// ptrTo returns a pointer to v's memory, copying when v is not addressable.
func ptrTo[T any](v reflect.Value) *T {
	if v.CanAddr() {
		return (*T)(v.Addr().UnsafePointer())
	}
	x := v.Interface().(T)
	return &x
}

func (w *walker) structValue(d, a reflect.Value, m mode, set bool) bool {
	ti := infoFor(d.Type())
	if ti.special != notSpecial {
		return w.specialValue(ti.special, d, a, set)
	}
	eq := true
	for i := range ti.fields {
		f := &ti.fields[i]
		sub := modeNormal
		switch m {
		case modeRoot:
			switch f.name {
			case "apiVersion", "kind":
				continue
			case "metadata":
				sub = modeMeta
			case "status":
				if !w.cfg.compareStatus {
					continue
				}
			}
		case modeMeta:
			switch f.name {
			case "labels", "annotations":
			case "ownerReferences":
				if !w.cfg.compareOwnerRefs {
					continue
				}
			default:
				continue
			}
		}
		fd, fa := d.Field(f.index), a.Field(f.index)
		if f.inline {
			if !w.structValue(fd, fa, m, false) {
				eq = false
				if !w.explain {
					return false
				}
			}
			continue
		}
		n := w.pushField(f.name)
		if !w.ignored() {
			var ok bool
			switch {
			case sub == modeMeta && fd.Kind() == reflect.Struct:
				ok = w.structValue(fd, fa, modeMeta, false)
			case fd.Kind() == reflect.Slice:
				ok = w.slice(fd, fa, f.mergeKey)
			default:
				ok = w.value(fd, fa, false)
			}
			if !ok {
				eq = false
				if !w.explain {
					w.path = w.path[:n]
					return false
				}
			}
		}
		w.path = w.path[:n]
	}
	return eq
}

func (w *walker) specialValue(s special, d, a reflect.Value, set bool) bool {
	var eq bool
	switch s {
	case specialQuantity:
		dq := ptrTo[resource.Quantity](d)
		if !set && dq.IsZero() {
			return true
		}
		eq = dq.Cmp(*ptrTo[resource.Quantity](a)) == 0
	case specialTime:
		dt, at := ptrTo[metav1.Time](d), ptrTo[metav1.Time](a)
		if !set && dt.IsZero() {
			return true
		}
		// metav1.Time travels with second precision.
		eq = dt.IsZero() == at.IsZero() && dt.Unix() == at.Unix()
	case specialMicroTime:
		dt, at := ptrTo[metav1.MicroTime](d), ptrTo[metav1.MicroTime](a)
		if !set && dt.IsZero() {
			return true
		}
		eq = dt.IsZero() == at.IsZero() && dt.UnixMicro() == at.UnixMicro()
	case specialIntOrString:
		di, ai := ptrTo[intstr.IntOrString](d), ptrTo[intstr.IntOrString](a)
		if !set && di.Type == intstr.Int && di.IntVal == 0 {
			return true
		}
		eq = *di == *ai
	}
	if eq {
		return true
	}
	if w.differs(d, a, true, true) {
		if w.overlay {
			a.Set(d)
		}
		return false
	}
	return true
}

// listKey returns the key for the list at the current path: a ListKey rule
// wins over the type's patchMergeKey.
func (w *walker) listKey(tagKey string) string {
	for _, r := range w.cfg.listKeys {
		if r.at.match(w.path) {
			return r.key
		}
	}
	return tagKey
}

func (w *walker) slice(d, a reflect.Value, tagKey string) bool {
	owned := len(w.cfg.ownList) > 0 && anyMatch(w.cfg.ownList, w.path)
	if d.Len() == 0 && !owned {
		return true
	}
	if d.Type() == bytesType {
		if string(d.Bytes()) == string(a.Bytes()) {
			return true
		}
		return w.wholeList(d, a)
	}
	key := w.listKey(tagKey)
	et := d.Type().Elem()
	if key != "" && et.Kind() == reflect.Struct {
		if ki := keyFieldIndex(et, key); ki >= 0 {
			return w.keyedList(d, a, key, ki, owned)
		}
	}
	if et.Kind() == reflect.Struct && !owned {
		return w.unkeyedList(d, a)
	}
	if d.Len() != a.Len() {
		return w.wholeList(d, a)
	}
	eq := true
	for i := range d.Len() {
		n := w.pushIndex(i)
		if !w.ignored() && !w.value(d.Index(i), a.Index(i), true) {
			eq = false
			if !w.explain {
				w.path = w.path[:n]
				return false
			}
		}
		w.path = w.path[:n]
	}
	return eq
}

// wholeList records a drift of the list as one value.
func (w *walker) wholeList(d, a reflect.Value) bool {
	if w.differs(d, a, true, true) {
		if w.overlay {
			a.Set(d)
		}
		return false
	}
	return true
}

func keyEqual(x, y reflect.Value) bool {
	switch x.Kind() {
	case reflect.String:
		return x.String() == y.String()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return x.Int() == y.Int()
	default:
		return x.Uint() == y.Uint()
	}
}

// unkeyedList compares a list of structs that has no merge key
// (tolerations, for one) as a set that desired must be part of: every
// desired element must equal, by the walk's rules, a distinct element of
// actual, in any order. Elements the server or an admission plugin added
// (default tolerations) are not drift. A missing element is drift of the
// whole list, which has no key to address one element by; OwnList makes the
// list compared whole, in order.
func (w *walker) unkeyedList(d, a reflect.Value) bool {
	if w.subset(d.Len(), a.Len(), func(i, j int) bool { return w.equal(d.Index(i), a.Index(j)) }) {
		return true
	}
	return w.wholeList(d, a)
}

// subset reports whether each of the nd desired elements that is not
// ignored equals (by eq) a distinct one of the na actual elements.
func (w *walker) subset(nd, na int, eq func(i, j int) bool) bool {
	used := make([]bool, na)
	for i := range nd {
		n := w.pushIndex(i)
		found := w.ignored()
		for j := 0; j < na && !found; j++ {
			if !used[j] && eq(i, j) { // eq sees the element's path, for ignore rules inside it
				used[j], found = true, true
			}
		}
		w.path = w.path[:n]
		if !found {
			return false
		}
	}
	return true
}

// equal reports whether d and a compare equal by the walk's rules, without
// recording drift or changing a.
func (w *walker) equal(d, a reflect.Value) bool {
	trial := walker{cfg: w.cfg, track: w.track, path: append([]byte(nil), w.path...)}
	return trial.value(d, a, true)
}

// findKeyed returns the index of the element of list that pairs with the
// desired element de, whose key field is ki: the occurrence-th element with
// the same key, counting only those with the same protocol when the type has
// a protocol field (ports: Kubernetes keys them by port and protocol, so 53
// UDP and 53 TCP are two elements), or -1.
func findKeyed(list reflect.Value, ki, pi int, de reflect.Value, occurrence int) int {
	kv := de.Field(ki)
	for j := range list.Len() {
		e := list.Index(j)
		if !keyEqual(e.Field(ki), kv) || (pi >= 0 && protocol(e.Field(pi)) != protocol(de.Field(pi))) {
			continue
		}
		if occurrence == 0 {
			return j
		}
		occurrence--
	}
	return -1
}

// occurrence counts the elements of d before i that findKeyed cannot tell
// from d[i]: the same key (and protocol).
func occurrence(d reflect.Value, i, ki, pi int) int {
	de := d.Index(i)
	n := 0
	for j := range i {
		e := d.Index(j)
		if keyEqual(e.Field(ki), de.Field(ki)) && (pi < 0 || protocol(e.Field(pi)) == protocol(de.Field(pi))) {
			n++
		}
	}
	return n
}

// protocol is a port's protocol with the API's default: empty means TCP.
func protocol(v reflect.Value) string {
	if v.Kind() != reflect.String || v.String() == "" {
		return "TCP"
	}
	return v.String()
}

// protocolFieldIndex is the Go field index of a string "protocol" field of
// the struct type t, or -1.
func protocolFieldIndex(t reflect.Type) int {
	pi := keyFieldIndex(t, "protocol")
	if pi >= 0 && t.Field(pi).Type.Kind() != reflect.String {
		return -1
	}
	return pi
}

func (w *walker) keyedList(d, a reflect.Value, key string, ki int, owned bool) bool {
	eq := true
	pi := -1
	if key != "protocol" {
		pi = protocolFieldIndex(d.Type().Elem())
	}
	matched := make([]bool, a.Len())
	for i := range d.Len() {
		de := d.Index(i)
		kv := de.Field(ki)
		n := w.pushElem(key, kv)
		if w.ignored() {
			w.path = w.path[:n]
			continue
		}
		j := findKeyed(a, ki, pi, de, occurrence(d, i, ki, pi))
		if j >= 0 && j < len(matched) {
			matched[j] = true
		}
		var ok bool
		if j < 0 {
			ok = !w.differs(de, reflect.Value{}, true, false)
			if !ok && w.overlay {
				a.Set(reflect.Append(a, de))
			}
		} else {
			ok = w.value(de, a.Index(j), true)
		}
		w.path = w.path[:n]
		if !ok {
			eq = false
			if !w.explain {
				return false
			}
		}
	}
	if !owned {
		return eq
	}
	var keep []int
	for j := range a.Len() {
		ae := a.Index(j)
		kv := ae.Field(ki)
		// Elements appended by the overlay above come from desired.
		if j >= len(matched) || matched[j] {
			keep = append(keep, j)
			continue
		}
		n := w.pushElem(key, kv)
		if !w.ignored() && w.differs(reflect.Value{}, ae, false, true) {
			eq = false
			if !w.explain {
				w.path = w.path[:n]
				return false
			}
		} else {
			keep = append(keep, j)
		}
		w.path = w.path[:n]
	}
	if w.overlay && len(keep) != a.Len() {
		kept := reflect.MakeSlice(a.Type(), 0, len(keep))
		for _, j := range keep {
			kept = reflect.Append(kept, a.Index(j))
		}
		a.Set(kept)
	}
	return eq
}

func (w *walker) mapValue(d, a reflect.Value) bool {
	owned := len(w.cfg.ownMap) > 0 && anyMatch(w.cfg.ownMap, w.path)
	if d.Len() == 0 && !owned {
		return true
	}
	switch d.Type() {
	case stringMapType:
		return w.stringMap(d, a, owned)
	case resourceListType:
		return w.resourceList(d, a, owned)
	}
	if w.overlay && a.IsNil() {
		a.Set(reflect.MakeMap(a.Type()))
	}
	eq := true
	var it reflect.MapIter
	it.Reset(d)
	for it.Next() {
		k := it.Key()
		n := w.pushKey(fmt.Sprint(k.Interface()))
		if w.ignored() {
			w.path = w.path[:n]
			continue
		}
		dv := it.Value()
		av := a.MapIndex(k)
		var ok bool
		switch {
		case !av.IsValid():
			ok = !w.differs(dv, av, true, false)
			if !ok && w.overlay {
				a.SetMapIndex(k, dv)
			}
		case w.overlay:
			tmp := reflect.New(av.Type()).Elem()
			tmp.Set(av)
			ok = w.value(dv, tmp, true)
			if !ok {
				a.SetMapIndex(k, tmp)
			}
		default:
			ok = w.value(dv, av, true)
		}
		w.path = w.path[:n]
		if !ok {
			eq = false
			if !w.explain {
				return false
			}
		}
	}
	if owned {
		for _, k := range a.MapKeys() {
			if d.MapIndex(k).IsValid() {
				continue
			}
			n := w.pushKey(fmt.Sprint(k.Interface()))
			if !w.ignored() && w.differs(reflect.Value{}, a.MapIndex(k), false, true) {
				eq = false
				if w.overlay {
					a.SetMapIndex(k, reflect.Value{})
				}
				if !w.explain {
					w.path = w.path[:n]
					return false
				}
			}
			w.path = w.path[:n]
		}
	}
	return eq
}

// stringMap is the allocation-free path for map[string]string (labels,
// annotations, selectors).
func (w *walker) stringMap(d, a reflect.Value, owned bool) bool {
	dm := d.Interface().(map[string]string)
	am := a.Interface().(map[string]string)
	if w.overlay && am == nil {
		am = map[string]string{}
		a.Set(reflect.ValueOf(am))
	}
	eq := true
	for k, dv := range dm {
		n := w.pushKey(k)
		if w.ignored() {
			w.path = w.path[:n]
			continue
		}
		av, found := am[k]
		if !found || av != dv {
			if w.differs(reflect.ValueOf(dv), reflect.ValueOf(av), true, found) {
				eq = false
				if w.overlay {
					am[k] = dv
				}
				if !w.explain {
					w.path = w.path[:n]
					return false
				}
			}
		}
		w.path = w.path[:n]
	}
	if owned && !dropExtraKeys(w, dm, am, w.pushKey, func(v string) bool {
		return w.differs(reflect.Value{}, reflect.ValueOf(v), false, true)
	}) {
		eq = false
	}
	return eq
}

// resourceList is the allocation-free path for corev1.ResourceList.
func (w *walker) resourceList(d, a reflect.Value, owned bool) bool {
	dm := d.Interface().(corev1.ResourceList)
	am := a.Interface().(corev1.ResourceList)
	if w.overlay && am == nil {
		am = corev1.ResourceList{}
		a.Set(reflect.ValueOf(am))
	}
	eq := true
	for k, dv := range dm {
		n := w.pushKey(string(k))
		if w.ignored() {
			w.path = w.path[:n]
			continue
		}
		av, found := am[k]
		if !found || dv.Cmp(av) != 0 {
			if w.differs(reflect.ValueOf(dv), reflect.ValueOf(av), true, found) {
				eq = false
				if w.overlay {
					am[k] = dv.DeepCopy()
				}
				if !w.explain {
					w.path = w.path[:n]
					return false
				}
			}
		}
		w.path = w.path[:n]
	}
	if owned && !dropExtraKeys(w, dm, am, w.pushKey, func(v resource.Quantity) bool {
		return w.differs(reflect.Value{}, reflect.ValueOf(v), false, true)
	}) {
		eq = false
	}
	return eq
}

// dropExtraKeys handles the keys of an owned map that actual has and
// desired lacks: each one not ignored is drift (removed from a when
// overlaying). It reports whether there was none; without explain it stops
// at the first.
func dropExtraKeys[K ~string, V any](w *walker, d, a map[K]V, push func(string) int, differs func(V) bool) bool {
	eq := true
	for k, av := range a {
		if _, found := d[k]; found {
			continue
		}
		n := push(string(k))
		if !w.ignored() && differs(av) {
			eq = false
			if w.overlay {
				delete(a, k)
			}
			if !w.explain {
				w.path = w.path[:n]
				return false
			}
		}
		w.path = w.path[:n]
	}
	return eq
}
