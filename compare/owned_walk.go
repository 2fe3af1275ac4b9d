package compare

import (
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
)

// How the walk uses what our field owner owns (see owned.go): walker.own
// follows the walk; where desired leaves a value unset (unset, jsonUnset),
// or lacks a list element (extras) or map entry (dropOwned, jsonOwned)
// actual has, what we own and may drop is drift, removed when overlaying.

// sharesKey reports whether, for a strategic merge patch, the element a[j]
// cannot be removed alone: the patch deletes by the merge key only, so it
// would delete every element with that key (53/UDP and 53/TCP alike).
func (w *walker) sharesKey(a reflect.Value, j int, k keying) bool {
	if !w.cfg.smp || k.name == "" || k.field < 0 || k.extra < 0 {
		return false
	}
	for i := range a.Len() {
		if i != j && sameKey(k.of(a.Index(i)), k.of(a.Index(j))) {
			return true
		}
	}
	return false
}

// pushOwned pushes "[k1=v1,k2=v2]" (or "[value]") for an element we own.
func (w *walker) pushOwned(oe *ownedElem) int {
	n := len(w.path)
	if w.track {
		w.path = append(w.path, '[')
		if oe.key == nil {
			w.path = fmt.Append(w.path, oe.value)
		}
		for i, k := range oe.key {
			if i > 0 {
				w.path = append(w.path, ',')
			}
			w.path = fmt.Appendf(w.path, "%s=%v", k.name, k.value)
		}
		w.path = append(w.path, ']')
	}
	return n
}

// unset handles actual's value a where desired leaves the value unset: what
// we own there and may drop is drift (see ownedNode.drops). Struct fields
// are looked into; list elements and map entries are dropped whole or not
// at all. f is the struct field holding a, nil for none.
func (w *walker) unset(a reflect.Value, f *fieldInfo) bool {
	o := w.own
	if o == nil || !o.below && !(o.apply && o.removable) || !a.IsValid() || a.IsZero() {
		return true
	}
	if o.drops(false) {
		if !w.differs(reflect.Value{}, a) {
			return true
		}
		if w.overlay {
			a.Set(reflect.Zero(a.Type()))
		}
		return false
	}
	switch a.Kind() {
	case reflect.Pointer:
		return w.unset(a.Elem(), f)
	case reflect.Interface:
		return !isJSON(a.Type()) || w.jsonUnset(ptrTo[any](a))
	case reflect.Map:
		return w.dropOwned(reflect.Value{}, a)
	case reflect.Slice:
		k, _ := f.keying(a.Type().Elem())
		k = w.withDefault(a.Type().Elem(), k)
		return w.extras(a, make([]bool, a.Len()), k, false)
	case reflect.Struct:
		ti := infoFor(a.Type())
		if ti.special != notSpecial {
			return true
		}
		eq, kids := true, o.kidsFor(a.Type())
		for i := range ti.fields {
			f, kid := &ti.fields[i], kids[i]
			n := len(w.path)
			if f.inline {
				kid = o
			} else if kid == nil || !kid.reach {
				continue
			} else {
				n = w.pushField(f.name)
			}
			w.own = kid
			ok := w.ignored() || w.unset(a.Field(f.index), f)
			w.own = o
			if w.done(n, &eq, ok) {
				return false
			}
		}
		return eq
	}
	return true
}

// dropOwned handles the entries of the map a that we own, desired d lacks
// (d may be invalid: no map) and we may drop.
func (w *walker) dropOwned(d, a reflect.Value) bool {
	switch a.Type() {
	case stringMapType:
		return dropNative[map[string]string](w, d, a)
	case resourceListType:
		return dropNative[corev1.ResourceList](w, d, a)
	case bytesMapType:
		return dropNative[map[string][]byte](w, d, a)
	}
	if !d.IsValid() {
		d = reflect.MakeMap(a.Type())
	}
	return w.reflectExtras(d, a, false)
}

func dropNative[M ~map[K]V, K ~string, V any](w *walker, d, a reflect.Value) bool {
	var dm M
	if d.IsValid() {
		dm = d.Interface().(M)
	}
	return dropKeys(w, dm, a.Interface().(M), false, w.pushKey)
}

// dropKeys handles the keys of the map a that desired's d lacks: with owned
// (Own) each is drift; otherwise those we own and may drop are (not the
// keys a CopiedDefault copies, such as a Pod's requests from its limits). Drift is removed from a
// when overlaying. It reports whether there was none; without explain it
// stops at the first.
func dropKeys[M ~map[K]V, K ~string, V any](w *walker, d, a M, owned bool, push func(string) int) bool {
	eq := true
	drop := func(k K, av V) (stop bool) {
		if string(k) == traceContextAnnotation {
			return false // never drift, even in a map desired owns
		}
		n := push(string(k))
		// Through &av, so that a null value is present, not missing.
		extra := !w.ignored() && w.differs(reflect.Value{}, reflect.ValueOf(&av).Elem())
		if extra && w.overlay {
			delete(a, k)
		}
		return w.done(n, &eq, !extra)
	}
	if owned {
		for k, av := range a {
			if _, set := d[k]; !set && drop(k, av) {
				return false
			}
		}
		return eq
	}
	for _, f := range w.own.fields {
		k := K(f.name)
		if _, set := d[k]; set || !f.node.drops(true) || w.protected(f.name) {
			continue
		}
		if av, found := a[k]; found && drop(k, av) {
			return false
		}
	}
	return eq
}

// jsonUnset is unset for JSON content *ap.
func (w *walker) jsonUnset(ap *any) bool {
	switch av := (*ap).(type) {
	case map[string]any:
		return w.jsonOwned(nil, av, modeNormal)
	case []any:
		return w.jsonList(ap, func(a reflect.Value) bool { return w.extras(a, make([]bool, len(av)), keying{}, false) })
	}
	return true
}

// jsonOwned handles the keys of the JSON object a that we own and desired d
// lacks or sets to null: the entries of a map (as the Go type says: without
// one, only labels and annotations are known maps) are dropped whole when
// we may drop them; fields are dropped when our Apply entry owns them, and
// otherwise looked into.
func (w *walker) jsonOwned(d, a map[string]any, m mode) bool {
	eq, own, jt, protect := true, w.own, w.jt, w.protect
	entry := m == modeNormal && jt != nil && jt.Kind() == reflect.Map
	for _, f := range own.fields {
		av := a[f.name]
		if _, visible := w.visible(m, f.name); !visible || d[f.name] != nil || av == nil || !f.node.reach {
			continue
		}
		n := w.pushName(f.name)
		ok := true
		switch {
		case w.ignored():
		case f.node.drops(entry):
			if !entry || !w.protected(f.name) {
				ok = !w.differs(reflect.Value{}, reflect.ValueOf(av))
			}
			if !ok && w.overlay {
				delete(a, f.name)
			}
		case !entry:
			w.own, w.jt = f.node, childType(jt, m, f.name)
			if r := w.copiedInto(f.name); r != nil {
				w.protect = d[r.From]
			}
			if ok = w.jsonUnset(&av); !ok && w.overlay {
				a[f.name] = av
			}
			w.own, w.jt, w.protect = own, jt, protect
		}
		if w.done(n, &eq, ok) {
			return false
		}
	}
	return eq
}
