package compare

import (
	"reflect"
	"strconv"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/reconcilekit/reconcilekit/internal/jsonnum"
)

// jsonValue compares JSON content d with *ap; name is the field or key d
// sits under, and quantity says that numbers and strings compare as
// resource quantities.
func (w *walker) jsonValue(d any, ap *any, name string, quantity bool) bool {
	switch dv := d.(type) {
	case nil:
		return true
	case map[string]any:
		am, ok := (*ap).(map[string]any)
		if !ok {
			return w.jsonReplace(d, ap)
		}
		return w.jsonObject(dv, am, modeNormal, quantityMaps[name])
	case []any:
		if _, ok := (*ap).([]any); !ok && *ap != nil {
			return w.jsonReplace(d, ap)
		}
		jt := w.jt
		w.jt = elemType(jt)
		ok := w.jsonList(ap, func(a reflect.Value) bool { return w.list(reflect.ValueOf(d), a, nil) })
		w.jt = jt
		return ok
	}
	return uscalarEqual(d, *ap, quantity) || w.jsonReplace(d, ap)
}

// jsonList runs walk on the JSON list *ap (null is an empty list), as a
// reflect value the overlay may change.
func (w *walker) jsonList(ap *any, walk func(a reflect.Value) bool) bool {
	if !w.overlay {
		if *ap == nil {
			return walk(noList)
		}
		return walk(reflect.ValueOf(*ap))
	}
	merged, _ := (*ap).([]any)
	eq := walk(reflect.ValueOf(&merged).Elem())
	if !eq {
		*ap = merged
	}
	return eq
}

// noList is the actual list of a JSON list that actual has as null.
var noList = reflect.ValueOf([]any(nil))

// jsonReplace is replace for JSON content.
func (w *walker) jsonReplace(d any, ap *any) bool {
	if !w.differs(reflect.ValueOf(d), reflect.ValueOf(*ap)) {
		return true
	}
	if w.overlay {
		*ap = d
	}
	return false
}

// jsonObject compares a JSON object key by key; m is where it sits and
// quantity says its values compare as quantities. A key present in desired
// is set, even with a zero value; null means not set.
func (w *walker) jsonObject(d, a map[string]any, m mode, quantity bool) bool {
	eq, own, jt, protect := true, w.own, w.jt, w.protect
	for k, dv := range d {
		sub, visible := w.visible(m, k)
		if !visible {
			continue
		}
		var n int
		if m == modeNormal {
			n = w.pushName(k)
		} else {
			n = w.pushField(k)
		}
		if own != nil {
			if w.own = own.field(k); w.own != nil {
				w.jt = childType(jt, m, k)
			}
			if r := w.copiedInto(k); r != nil {
				w.protect = d[r.From]
			}
		}
		ok := w.ignored() || w.jsonEntry(a, k, dv, sub, quantity || k == "sizeLimit")
		if own != nil {
			w.own, w.jt, w.protect = own, jt, protect
		}
		if w.done(n, &eq, ok) {
			return false
		}
	}
	switch {
	case m == modeNormal && len(w.cfg.own) > 0 && anyMatch(w.cfg.own, w.path):
		eq = dropKeys(w, d, a, true, w.pushName) && eq
	case own != nil:
		eq = w.jsonOwned(d, a, m) && eq
	}
	return eq
}

// jsonEntry compares d[k] (= dv) with a[k]; the path already ends with k.
func (w *walker) jsonEntry(a map[string]any, k string, dv any, m mode, quantity bool) bool {
	if m == modeMeta {
		dm, ok := dv.(map[string]any)
		if !ok {
			return true
		}
		am, _ := a[k].(map[string]any)
		if am == nil {
			am = map[string]any{}
			if w.overlay {
				a[k] = am
			}
		}
		return w.jsonObject(dm, am, modeMeta, false)
	}
	if dv == nil {
		return true
	}
	av, found := a[k]
	if !found && isEmptyContainer(dv) {
		// Nothing required; an owned empty map or list is "no entries",
		// which an absent one satisfies.
		return true
	}
	var ok bool
	if found {
		ok = w.jsonValue(dv, &av, k, quantity)
	} else {
		ok = w.jsonReplace(dv, &av)
	}
	if !ok && w.overlay {
		a[k] = av
	}
	return ok
}

// quantityMaps are the map fields of built-in types whose values are
// resource.Quantity; in unstructured content their values compare as
// quantities, since the server canonicalizes them ("1024Mi" comes back "1Gi").
var quantityMaps = map[string]bool{
	"limits": true, "requests": true, "hard": true, "capacity": true, "allocatable": true, "overhead": true,
}

// isEmptyContainer reports whether v is an empty JSON object or list.
func isEmptyContainer(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		return len(v) == 0
	case []any:
		return len(v) == 0
	}
	return false
}

// isIdent reports whether s looks like a Go identifier.
func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// uscalarEqual compares JSON scalars; numbers compare by value whatever
// their Go type (package jsonnum: integers exactly, float32 too), and with
// quantity set, numbers and strings compare as resource quantities.
func uscalarEqual(d, a any, quantity bool) bool {
	if quantity {
		if dq, ok := toQuantity(d); ok {
			if aq, ok := toQuantity(a); ok {
				return dq.Cmp(aq) == 0
			}
		}
	}
	switch dv := d.(type) {
	case string:
		av, ok := a.(string)
		return ok && av == dv
	case bool:
		av, ok := a.(bool)
		return ok && av == dv
	}
	if eq, numbers := jsonnum.Equal(d, a); numbers {
		return eq
	}
	if _, number := jsonnum.Float(d); number {
		return false
	}
	return reflect.DeepEqual(d, a)
}

func toQuantity(v any) (resource.Quantity, bool) {
	var s string
	if i, ok := jsonnum.Int(v); ok {
		s = strconv.FormatInt(i, 10)
	} else {
		switch v := v.(type) {
		case string:
			s = v
		case float64:
			s = strconv.FormatFloat(v, 'f', -1, 64)
		case float32:
			s = strconv.FormatFloat(float64(v), 'f', -1, 32)
		default:
			return resource.Quantity{}, false
		}
	}
	q, err := resource.ParseQuantity(s)
	return q, err == nil
}
