package compare

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The walk compares desired against actual once, whatever their form and
// whatever it is asked to do with a difference, the way go-cmp separates
// walking from reporting:
//
//   - Forms: typed objects are walked as reflect values; unstructured content
//     is JSON (map[string]any, []any, scalars). Both meet in the same list
//     and map rules (keyed, subset and positional lists; owned maps and
//     lists); only the leaves differ (Go types say what is set; in JSON a
//     present key is set), see jsonValue.
//   - Modes: deciding stops at the first drift and allocates nothing on the
//     common paths; explaining (explain) visits everything and records each
//     drift with its path; overlaying (overlay) also writes desired's value
//     into actual at each drift, so actual must then be an addressable copy
//     that may be changed. All three go through differs, replace and done.
//   - Ownership: own follows the walk through what our field owner owns in
//     the actual object (owned.go); where desired leaves a value unset, or
//     lacks a list element or map entry actual has, what we own and may drop
//     is drift too (unset, extras, dropOwned).

// mode tells the object walk where it is, for the default ignores.
type mode uint8

const (
	modeNormal mode = iota
	modeRoot        // the object itself: skip apiVersion, kind, status
	modeMeta        // metadata: compare labels, annotations (and owner refs on request)
)

// drift is one field that differs. A missing value (absent from actual, or
// from desired for owned maps and lists) is a nil interface with its has
// flag false; a present nil (a JSON null) has it true.
type drift struct {
	path                  string
	actual                any
	desired               any
	hasActual, hasDesired bool
}

// walker compares desired against actual; see the comment above.
type walker struct {
	cfg     *options
	explain bool
	overlay bool
	track   bool // maintain path: explaining, or path rules present
	path    []byte
	drifts  []drift

	own     *ownedNode      // what our field owner owns at path, or nil
	copied  []CopiedDefault // the rules of the object's kind (only looked at with own)
	protect any             // while in a map a CopiedDefault copies into: desired's map it copies from, whose keys stay
	jt      reflect.Type    // Go type of the JSON value at path, when known
}

// newWalker starts a walk of p in the given mode.
func newWalker(cfg *options, p *pair, explain, overlay bool, path []byte) walker {
	return walker{cfg: cfg, explain: explain, overlay: overlay, track: explain || cfg.hasRules(), path: path, own: p.own, copied: p.copied, jt: p.jt}
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

// pushName names a key of a JSON object. Without a schema the walk cannot
// tell struct fields from map keys, so it writes keys that look like
// identifiers as fields (spec.replicas) and others in brackets
// (metadata.labels[app.kubernetes.io/name]), matching the typed form for the
// common cases.
func (w *walker) pushName(k string) int {
	if !w.track {
		return len(w.path)
	}
	if isIdent(k) {
		return w.pushField(k)
	}
	return w.pushKey(k)
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

// pushElem pushes "[key=value]" for the element e of a list keyed by k.
func (w *walker) pushElem(k keying, e reflect.Value) int {
	n := len(w.path)
	if w.track {
		w.path = append(w.path, '[')
		w.path = append(w.path, k.name...)
		w.path = append(w.path, '=')
		w.path = appendScalar(w.path, k.of(e))
		w.path = append(w.path, ']')
	}
	return n
}

func appendScalar(b []byte, v reflect.Value) []byte {
	switch v.Kind() {
	case reflect.Invalid:
		return append(b, "<nil>"...)
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

// done ends the visit of a child pushed at n: it pops the path, folds the
// child's verdict ok into eq and reports whether the walk stops here
// (deciding stops at the first drift, explaining visits everything).
func (w *walker) done(n int, eq *bool, ok bool) bool {
	w.path = w.path[:n]
	if !ok {
		*eq = false
	}
	return !*eq && !w.explain
}

func (w *walker) ignored() bool {
	return len(w.cfg.ignore) > 0 && anyMatch(w.cfg.ignore, w.path)
}

// differs is called where desired d and actual a differ by the walk's rules;
// an invalid value is a missing one. It asks the caller's cmp options for a
// second opinion, records the drift when explaining, and reports whether the
// difference counts.
func (w *walker) differs(d, a reflect.Value) bool {
	if d.IsValid() && a.IsValid() && w.cfg.cmpEqual != nil && w.cfg.cmpEqual(a, d, w.cfg.cmpOpts) {
		return false
	}
	if w.explain {
		dr := drift{path: string(w.path), hasActual: a.IsValid(), hasDesired: d.IsValid()}
		if d.IsValid() {
			dr.desired = d.Interface()
		}
		if a.IsValid() {
			dr.actual = a.Interface()
		}
		w.drifts = append(w.drifts, dr)
	}
	return true
}

// replace reports d and a as different, a whole, and when overlaying makes
// a hold d. It reports whether they are equal after all (cmp options).
func (w *walker) replace(d, a reflect.Value) bool {
	seen := a
	if (a.Kind() == reflect.Pointer || a.Kind() == reflect.Interface) && a.IsNil() {
		seen = reflect.Value{}
	}
	if !w.differs(d, seen) {
		return true
	}
	if w.overlay {
		a.Set(d)
	}
	return false
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

// visible reports whether the walk compares the field name of an object in
// mode m, and in which mode it walks the field's value.
func (w *walker) visible(m mode, name string) (mode, bool) {
	switch m {
	case modeRoot:
		switch name {
		case "apiVersion", "kind":
			return modeNormal, false
		case "metadata":
			return modeMeta, true
		case "status":
			return modeNormal, w.cfg.compareStatus
		}
	case modeMeta:
		switch name {
		case "labels", "annotations":
			return modeNormal, true
		case "ownerReferences":
			return modeNormal, w.cfg.compareOwnerRefs
		}
		return modeNormal, false
	}
	return modeNormal, true
}

// value compares one typed value. set is true when desired's value is known
// to be set by its position (a map value, a list element, a pointer's
// target), so a zero scalar is compared instead of meaning "don't care".
func (w *walker) value(d, a reflect.Value, set bool) bool {
	switch d.Kind() {
	case reflect.Pointer:
		if d.IsNil() {
			return w.own == nil || w.unset(a, nil)
		}
		if a.IsNil() {
			return w.replace(d, a)
		}
		return w.value(d.Elem(), a.Elem(), true)
	case reflect.Interface:
		if d.IsNil() {
			return w.own == nil || w.unset(a, nil)
		}
		if d.Type() == anyType { // JSON: unstructured content
			return w.jsonValue(*ptrTo[any](d), ptrTo[any](a), "", false)
		}
		if a.IsNil() || d.Elem().Type() != a.Elem().Type() {
			return w.replace(d, a)
		}
		if !w.overlay {
			return w.value(d.Elem(), a.Elem(), true)
		}
		tmp := reflect.New(a.Elem().Type()).Elem()
		tmp.Set(a.Elem())
		eq := w.value(d.Elem(), tmp, true)
		if !eq {
			a.Set(tmp)
		}
		return eq
	case reflect.Struct:
		return w.object(d, a, modeNormal, set)
	case reflect.Slice:
		return w.list(d, a, nil)
	case reflect.Array:
		eq, own := true, w.own
		w.own = nil
		for i := range d.Len() {
			if n := w.pushIndex(i); w.done(n, &eq, w.ignored() || w.value(d.Index(i), a.Index(i), true)) {
				w.own = own
				return false
			}
		}
		w.own = own
		return eq
	case reflect.Map:
		return w.mapValue(d, a)
	}
	if !set && d.IsZero() {
		return w.own == nil || w.unset(a, nil)
	}
	return scalarEqual(d, a) || w.replace(d, a)
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
		return (*T)(unsafe.Pointer(v.UnsafeAddr())) // Addr would build v's pointer type
	}
	x := v.Interface().(T)
	return &x
}

// object compares a struct field by field; m is where it sits.
func (w *walker) object(d, a reflect.Value, m mode, set bool) bool {
	ti := infoFor(d.Type())
	if ti.special != notSpecial {
		return w.special(ti.special, d, a, set)
	}
	eq, own, protect := true, w.own, w.protect
	var kids []*ownedNode
	if own != nil {
		kids = own.kidsFor(d.Type())
	}
	for i := range ti.fields {
		f := &ti.fields[i]
		sub, visible := w.visible(m, f.name)
		if !visible {
			continue
		}
		fd, fa := d.Field(f.index), a.Field(f.index)
		if f.inline {
			if w.done(len(w.path), &eq, w.object(fd, fa, m, false)) {
				return false
			}
			continue
		}
		n := w.pushField(f.name)
		if kids != nil {
			w.own = kids[i]
			if f.sent { // a field JSON carries at zero is set, for ownership
				w.own = nil
			}
			if len(w.copied) > 0 && w.copiedInto(f.name) != nil {
				w.protect = w.protectTyped(d, ti, f.name)
			}
		}
		ok := w.ignored()
		switch {
		case ok:
		case sub == modeMeta && fd.Kind() == reflect.Struct:
			ok = w.object(fd, fa, modeMeta, false)
		case fd.Kind() == reflect.Slice:
			ok = w.list(fd, fa, f)
		default:
			ok = w.value(fd, fa, false)
		}
		if kids != nil {
			w.own, w.protect = own, protect
		}
		if w.done(n, &eq, ok) {
			return false
		}
	}
	return eq
}

// special compares the struct types compared as one value.
func (w *walker) special(s special, d, a reflect.Value, set bool) bool {
	var eq bool
	switch s {
	case specialQuantity:
		dq := ptrTo[resource.Quantity](d)
		if !set && dq.IsZero() {
			return w.own == nil || w.unset(a, nil)
		}
		eq = dq.Cmp(*ptrTo[resource.Quantity](a)) == 0
	case specialTime:
		dt, at := ptrTo[metav1.Time](d), ptrTo[metav1.Time](a)
		if !set && dt.IsZero() {
			return w.own == nil || w.unset(a, nil)
		}
		// metav1.Time travels with second precision.
		eq = dt.IsZero() == at.IsZero() && dt.Unix() == at.Unix()
	case specialMicroTime:
		dt, at := ptrTo[metav1.MicroTime](d), ptrTo[metav1.MicroTime](a)
		if !set && dt.IsZero() {
			return w.own == nil || w.unset(a, nil)
		}
		eq = dt.IsZero() == at.IsZero() && dt.UnixMicro() == at.UnixMicro()
	case specialIntOrString:
		di, ai := ptrTo[intstr.IntOrString](d), ptrTo[intstr.IntOrString](a)
		if !set && di.Type == intstr.Int && di.IntVal == 0 {
			return w.own == nil || w.unset(a, nil)
		}
		eq = *di == *ai
	}
	return eq || w.replace(d, a)
}

// list compares a typed slice or a JSON list ([]any); f is the struct field
// holding it, nil for none.
func (w *walker) list(d, a reflect.Value, f *fieldInfo) bool {
	owned := len(w.cfg.own) > 0 && anyMatch(w.cfg.own, w.path)
	if d.Len() == 0 && !owned {
		return w.own == nil || w.unset(a, f)
	}
	if d.Type() == bytesType {
		return string(d.Bytes()) == string(a.Bytes()) || w.replace(d, a)
	}
	if k, ok := w.keying(d, f); ok {
		return w.keyedList(d, a, k, owned)
	}
	if !owned && objects(d) {
		used, ok := w.subset(d, a)
		if !ok {
			return w.replace(d, a)
		}
		return w.own == nil || w.extras(a, used, keying{}, false)
	}
	if d.Len() != a.Len() {
		return w.replace(d, a)
	}
	eq := true
	for i := range d.Len() {
		if n := w.pushIndex(i); w.done(n, &eq, w.ignored() || w.value(d.Index(i), a.Index(i), true)) {
			return false
		}
	}
	return eq
}

// isJSON reports whether t is the type of JSON content, any.
func isJSON(t reflect.Type) bool {
	return t == anyType
}

var anyType = reflect.TypeFor[any]()

// objects reports whether the list's elements are structs or JSON objects.
func objects(list reflect.Value) bool {
	et := list.Type().Elem()
	if !isJSON(et) {
		return et.Kind() == reflect.Struct
	}
	for i := range list.Len() {
		if _, ok := (*ptrTo[any](list.Index(i))).(map[string]any); !ok {
			return false
		}
	}
	return true
}

// keying says how the elements of a keyed list pair up: by the JSON field
// name, read from the Go field at index field (typed) or from the element
// object (JSON, field < 0), and for typed elements also by the string field
// a KeyDefault rule names (a port's protocol), empty meaning its default.
type keying struct {
	name   string
	field  int
	extra  int    // Go field index of the KeyDefault field, or -1
	extraV string // its default
}

// keying returns the key of the list d at the current path: a ListKey rule
// wins over the type's patchMergeKey; a JSON list is keyed by "name" when
// every desired element is an object with a scalar name.
func (w *walker) keying(d reflect.Value, f *fieldInfo) (keying, bool) {
	tagKey := ""
	if f != nil {
		tagKey = f.mergeKey
	}
	key, explicit := w.listKey(tagKey)
	if et := d.Type().Elem(); !isJSON(et) {
		var k keying
		var ok bool
		if !explicit {
			k, ok = f.keying(et)
		} else {
			k, ok = typedKeying(et, key)
		}
		return w.withDefault(et, k), ok
	}
	if !explicit {
		key = "name"
	}
	for i := range d.Len() {
		m, ok := (*ptrTo[any](d.Index(i))).(map[string]any)
		if !ok {
			return keying{}, false
		}
		switch m[key].(type) {
		case string, int64, int, int32, float64:
		default:
			return keying{}, false
		}
	}
	return keying{name: key, field: -1, extra: -1}, true
}

// withDefault adds to the typed keying k of a list of et the field a
// KeyDefault rule names, when et has it.
func (w *walker) withDefault(et reflect.Type, k keying) keying {
	if k.field >= 0 && k.name != "" && len(w.cfg.keys) > 0 {
		k.extra, k.extraV = w.cfg.keyDefault(et, k.name)
	}
	return k
}

// listKey returns the key a ListKey rule gives the list at the current path,
// or tagKey.
func (w *walker) listKey(tagKey string) (key string, explicit bool) {
	for _, r := range w.cfg.listKeys {
		if r.at.match(w.path) {
			return r.key, true
		}
	}
	return tagKey, false
}

// typedKeying is the keying of a list of structs of type et by the JSON
// field key.
func typedKeying(et reflect.Type, key string) (keying, bool) {
	if key == "" || et.Kind() != reflect.Struct {
		return keying{}, false
	}
	k := keying{name: key, field: keyFieldIndex(et, key), extra: -1}
	if k.field < 0 {
		return keying{}, false
	}
	return k, true
}

// of returns the key of list element e, invalid when it has none.
func (k keying) of(e reflect.Value) reflect.Value {
	if k.field >= 0 {
		return e.Field(k.field)
	}
	return reflect.ValueOf(k.json(e))
}

// json returns the key of the JSON list element e, nil when it has none.
func (k keying) json(e reflect.Value) any {
	m, _ := (*ptrTo[any](e)).(map[string]any)
	return m[k.name]
}

// elemKey is the key of a list element: a Go field (typed) or a JSON value.
type elemKey struct {
	field reflect.Value
	json  any
	extra string
}

func (k keying) key(e reflect.Value) elemKey {
	if k.field < 0 {
		return elemKey{json: k.json(e)}
	}
	ek := elemKey{field: e.Field(k.field)}
	if k.extra >= 0 {
		ek.extra = k.extraOf(e)
	}
	return ek
}

// has reports whether element e has the key (and the KeyDefault field,
// empty meaning its default, as the API does: 53/UDP and 53/TCP are two
// elements).
func (k keying) has(e reflect.Value, key elemKey) bool {
	if k.field < 0 {
		v := k.json(e)
		return v != nil && key.json != nil && uscalarEqual(key.json, v, false)
	}
	return sameKey(e.Field(k.field), key.field) && (k.extra < 0 || k.extraOf(e) == key.extra)
}

// find returns the index of the element of a that pairs with d[i]: the
// occurrence-th element with its key, counting the elements of d before i
// with the same key, or -1.
func (k keying) find(a, d reflect.Value, i int) int {
	key, occurrence := k.key(d.Index(i)), 0
	for j := range i {
		if k.has(d.Index(j), key) {
			occurrence++
		}
	}
	for j := range a.Len() {
		if k.has(a.Index(j), key) {
			if occurrence == 0 {
				return j
			}
			occurrence--
		}
	}
	return -1
}

func sameKey(x, y reflect.Value) bool {
	if !x.IsValid() || !y.IsValid() {
		return false
	}
	if x.Kind() == y.Kind() {
		switch x.Kind() {
		case reflect.String:
			return x.String() == y.String()
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			return x.Int() == y.Int()
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			return x.Uint() == y.Uint()
		}
	}
	return uscalarEqual(x.Interface(), y.Interface(), false)
}

// extraOf is the KeyDefault field of the typed element e, with the rule's
// default for empty (a port's protocol: empty means TCP).
func (k keying) extraOf(e reflect.Value) string {
	if v := e.Field(k.extra).String(); v != "" {
		return v
	}
	return k.extraV
}

// keyedList matches the elements of d with those of a by key: order and
// extra elements in actual are not drift, unless the list is owned or the
// element is ours to drop (extras).
func (w *walker) keyedList(d, a reflect.Value, k keying, owned bool) bool {
	eq, own := true, w.own
	matched := make([]bool, a.Len())
	for i := range d.Len() {
		de := d.Index(i)
		n := w.pushElem(k, de)
		ok := w.ignored()
		if !ok {
			if j := k.find(a, d, i); j < 0 {
				ok = !w.differs(de, reflect.Value{})
				if !ok && w.overlay {
					a.Set(reflect.Append(a, de))
				}
			} else {
				if j < len(matched) { // not an element the overlay appended
					matched[j] = true
				}
				if own != nil {
					w.own = own.elemFor(a.Index(j), w.cfg.keys).nodeOrNil()
				}
				ok = w.value(de, a.Index(j), true)
				w.own = own
			}
		}
		if w.done(n, &eq, ok) {
			return false
		}
	}
	if (owned || own != nil) && !w.extras(a, matched, k, owned) {
		eq = false
	}
	return eq
}

// extras handles the elements of the list a that desired does not keep
// (keep[j] false): with owned (Own) each is drift; otherwise those we
// own and may drop are. Drift is removed from a when overlaying. k names
// elements in paths when the list is keyed by the walk's rules; elements
// dropped for ownership are named by the key the API server gives them.
func (w *walker) extras(a reflect.Value, keep []bool, k keying, owned bool) bool {
	eq, removed := true, false
	for j := range keep {
		if keep[j] {
			continue
		}
		ae := a.Index(j)
		var n int
		if owned {
			n = w.pushElem(k, ae)
		} else {
			oe := w.own.elemFor(ae, w.cfg.keys)
			if oe == nil || !oe.node.drops(true) || w.sharesKey(a, j, k) {
				keep[j] = true
				continue
			}
			n = w.pushOwned(oe)
		}
		extra := !w.ignored() && w.differs(reflect.Value{}, ae)
		keep[j], removed = !extra, removed || extra
		if w.done(n, &eq, !extra) {
			return false
		}
	}
	if w.overlay && removed {
		kept := reflect.MakeSlice(a.Type(), 0, a.Len())
		for j := range a.Len() {
			if j >= len(keep) || keep[j] {
				kept = reflect.Append(kept, a.Index(j))
			}
		}
		a.Set(kept)
	}
	return eq
}

// subset compares a list of objects that has no key (tolerations, for one)
// as a set that desired must be part of: every desired element must equal,
// by the walk's rules, a distinct element of actual, in any order.
// Elements the server or an admission plugin added (default tolerations)
// are not drift. A missing element is drift of the whole list, which has no
// key to address one element by; Own makes the list compared whole, in
// order. It returns which actual elements desired used.
func (w *walker) subset(d, a reflect.Value) ([]bool, bool) {
	used := make([]bool, a.Len())
	for i := range d.Len() {
		n := w.pushIndex(i)
		found := w.ignored()
		for j := 0; j < len(used) && !found; j++ {
			if !used[j] && w.equal(d.Index(i), a.Index(j)) { // sees the element's path, for ignore rules inside it
				used[j], found = true, true
			}
		}
		w.path = w.path[:n]
		if !found {
			return nil, false
		}
	}
	return used, true
}

// equal reports whether d and a compare equal by the walk's rules, without
// recording drift or changing a.
func (w *walker) equal(d, a reflect.Value) bool {
	trial := walker{cfg: w.cfg, track: w.track, path: append([]byte(nil), w.path...)}
	return trial.value(d, a, true)
}

func (w *walker) mapValue(d, a reflect.Value) bool {
	owned := len(w.cfg.own) > 0 && anyMatch(w.cfg.own, w.path)
	if d.Len() == 0 && !owned {
		return w.own == nil || w.unset(a, nil)
	}
	switch d.Type() {
	case stringMapType:
		return nativeMap[map[string]string](w, d, a, owned, func(x, y string) bool { return x == y }, func(s string) string { return s })
	case resourceListType:
		return nativeMap[corev1.ResourceList](w, d, a, owned, func(x, y resource.Quantity) bool { return x.Cmp(y) == 0 }, resource.Quantity.DeepCopy)
	case bytesMapType:
		return nativeMap[map[string][]byte](w, d, a, owned, bytes.Equal, bytes.Clone)
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
		dv, av := it.Value(), a.MapIndex(k)
		ok := w.ignored()
		switch {
		case ok:
		case !av.IsValid():
			ok = !w.differs(dv, av)
			if !ok && w.overlay {
				a.SetMapIndex(k, dv)
			}
		case !w.overlay:
			ok = w.entryValue(dv, av)
		default:
			tmp := reflect.New(av.Type()).Elem()
			tmp.Set(av)
			if ok = w.entryValue(dv, tmp); !ok {
				a.SetMapIndex(k, tmp)
			}
		}
		if w.done(n, &eq, ok) {
			return false
		}
	}
	if (owned || w.own != nil) && !w.reflectExtras(d, a, owned) {
		eq = false
	}
	return eq
}

// entryValue compares the values of a map entry; what we own inside an
// entry is not looked into (an entry is dropped whole or not at all).
func (w *walker) entryValue(d, a reflect.Value) bool {
	own := w.own
	w.own = nil
	ok := w.value(d, a, true)
	w.own = own
	return ok
}

// reflectExtras is extras for maps the walk compares by reflection: keys
// of a that d lacks are drift when the map is owned (Own), or when we own
// them and may drop them.
func (w *walker) reflectExtras(d, a reflect.Value, owned bool) bool {
	var keys []reflect.Value
	if owned {
		keys = a.MapKeys()
	} else if a.Type().Key().Kind() == reflect.String {
		for _, f := range w.own.fields {
			if f.node.drops(true) {
				k := reflect.New(a.Type().Key()).Elem()
				k.SetString(f.name)
				keys = append(keys, k)
			}
		}
	}
	eq := true
	for _, k := range keys {
		if d.MapIndex(k).IsValid() || !a.MapIndex(k).IsValid() {
			continue
		}
		n := w.pushKey(fmt.Sprint(k.Interface()))
		extra := !w.ignored() && w.differs(reflect.Value{}, a.MapIndex(k))
		if extra && w.overlay {
			a.SetMapIndex(k, reflect.Value{})
		}
		if w.done(n, &eq, !extra) {
			return false
		}
	}
	return eq
}

// nativeMap is the allocation-free path for maps with string keys the walk
// meets often: map[string]string (labels, annotations, selectors) and
// corev1.ResourceList. same compares two values; clone copies desired's
// value into actual when overlaying.
func nativeMap[M ~map[K]V, K ~string, V any](w *walker, d, a reflect.Value, owned bool, same func(V, V) bool, clone func(V) V) bool {
	dm, am := d.Interface().(M), a.Interface().(M)
	if w.overlay && am == nil {
		am = M{}
		a.Set(reflect.ValueOf(am))
	}
	eq := true
	for k, dv := range dm {
		n := w.pushKey(string(k))
		ok := w.ignored()
		if av, found := am[k]; !ok && !(found && same(dv, av)) {
			var seen reflect.Value
			if found {
				seen = reflect.ValueOf(av)
			}
			ok = !w.differs(reflect.ValueOf(dv), seen)
			if !ok && w.overlay {
				am[k] = clone(dv)
			}
		} else {
			ok = true
		}
		if w.done(n, &eq, ok) {
			return false
		}
	}
	if (owned || w.own != nil) && !dropKeys(w, dm, am, owned, w.pushKey) {
		eq = false
	}
	return eq
}
