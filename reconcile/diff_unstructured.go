package reconcile

import (
	"fmt"
	"math"
	"reflect"
	"strconv"

	"k8s.io/apimachinery/pkg/api/resource"
)

// quantityMaps are the map fields of built-in types whose values are
// resource.Quantity; in unstructured content their values compare as
// quantities, since the server canonicalizes them ("1024Mi" comes back "1Gi").
var quantityMaps = map[string]bool{
	"limits": true, "requests": true, "hard": true, "capacity": true, "allocatable": true, "overhead": true,
}

func (w *walker) udiffers(d, a any, hasD, hasA bool) bool {
	if hasD && hasA && len(w.cfg.cmpOpts) > 0 && cmpEqual(reflect.ValueOf(a), reflect.ValueOf(d), w.cfg.cmpOpts) {
		return false
	}
	if w.explain {
		w.drifts = append(w.drifts, drift{path: string(w.path), actual: a, desired: d})
	}
	return true
}

// uobject walks the top of an unstructured object.
func (w *walker) uobject(d, a map[string]any) bool {
	eq := true
	for k, dv := range d {
		switch k {
		case "apiVersion", "kind":
			continue
		case "status":
			if !w.cfg.compareStatus {
				continue
			}
		}
		n := w.pushField(k)
		if w.ignored() {
			w.path = w.path[:n]
			continue
		}
		var ok bool
		if k == "metadata" {
			ok = w.umeta(dv, a)
		} else {
			ok = w.uentry(d, a, k, dv, false)
		}
		w.path = w.path[:n]
		if !ok {
			eq = false
			if !w.explain {
				return false
			}
		}
	}
	return eq
}

func (w *walker) umeta(dv any, parent map[string]any) bool {
	dm, ok := dv.(map[string]any)
	if !ok {
		return true
	}
	am, _ := parent["metadata"].(map[string]any)
	if am == nil {
		if w.overlay {
			am = map[string]any{}
			parent["metadata"] = am
		} else {
			am = map[string]any{}
		}
	}
	eq := true
	for k, v := range dm {
		switch k {
		case "labels", "annotations":
		case "ownerReferences":
			if !w.cfg.compareOwnerRefs {
				continue
			}
		default:
			continue
		}
		n := w.pushField(k)
		if !w.ignored() && !w.uentry(dm, am, k, v, false) {
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

// uentry compares d[k] (= dv) with a[k]; the path already ends with k.
func (w *walker) uentry(d, a map[string]any, k string, dv any, quantity bool) bool {
	if dv == nil {
		return true
	}
	av, found := a[k]
	if !found {
		if isEmptyContainer(dv) {
			// Nothing required; an owned empty map or list is "no
			// entries", which an absent one satisfies.
			return true
		}
		if w.udiffers(dv, nil, true, false) {
			if w.overlay {
				a[k] = dv
			}
			return false
		}
		return true
	}
	quantity = quantity || k == "sizeLimit"
	tmp := av
	ok := w.uvalue(dv, &tmp, k, quantity)
	if !ok && w.overlay {
		a[k] = tmp
	}
	return ok
}

func isEmptyContainer(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		return len(v) == 0
	case []any:
		return len(v) == 0
	}
	return false
}

// uvalue compares d with *ap; name is the field or key d sits under.
func (w *walker) uvalue(d any, ap *any, name string, quantity bool) bool {
	switch dv := d.(type) {
	case nil:
		return true
	case map[string]any:
		am, ok := (*ap).(map[string]any)
		if !ok {
			return w.uwhole(d, ap)
		}
		return w.umap(dv, am, quantityMaps[name])
	case []any:
		return w.ulist(dv, ap)
	}
	if uscalarEqual(d, *ap, quantity) {
		return true
	}
	return w.uwhole(d, ap)
}

func (w *walker) uwhole(d any, ap *any) bool {
	if w.udiffers(d, *ap, true, *ap != nil) {
		if w.overlay {
			*ap = d
		}
		return false
	}
	return true
}

func (w *walker) umap(d, a map[string]any, quantity bool) bool {
	owned := len(w.cfg.ownMap) > 0 && anyMatch(w.cfg.ownMap, w.path)
	eq := true
	for k, dv := range d {
		n := w.pushKeyOrField(k)
		if !w.ignored() && !w.uentry(d, a, k, dv, quantity) {
			eq = false
			if !w.explain {
				w.path = w.path[:n]
				return false
			}
		}
		w.path = w.path[:n]
	}
	if owned && !dropExtraKeys(w, d, a, w.pushKeyOrField, func(v any) bool { return w.udiffers(nil, v, false, true) }) {
		eq = false
	}
	return eq
}

// pushKeyOrField names a key of an unstructured map. Without a schema the
// walk cannot tell struct fields from map keys, so it writes keys that look
// like identifiers as fields (spec.replicas) and others in brackets
// (metadata.labels[app.kubernetes.io/name]), matching the typed form for the
// common cases.
func (w *walker) pushKeyOrField(k string) int {
	if isIdent(k) {
		return w.pushField(k)
	}
	return w.pushKey(k)
}

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

// ukey returns the key field for a desired list, or "".
func (w *walker) ukey(d []any) string {
	key := ""
	for _, r := range w.cfg.listKeys {
		if r.at.match(w.path) {
			key = r.key
			break
		}
	}
	explicit := key != ""
	if !explicit {
		key = "name"
	}
	for _, e := range d {
		m, ok := e.(map[string]any)
		if !ok {
			return ""
		}
		switch m[key].(type) {
		case string, int64, int, int32, float64:
		default:
			return ""
		}
	}
	return key
}

func (w *walker) ulist(d []any, ap *any) bool {
	owned := len(w.cfg.ownList) > 0 && anyMatch(w.cfg.ownList, w.path)
	if len(d) == 0 && !owned {
		return true
	}
	al, ok := (*ap).([]any)
	if !ok && *ap != nil {
		return w.uwhole(d, ap)
	}
	key := w.ukey(d)
	if key == "" && !owned && allObjects(d) {
		return w.uunkeyed(d, al, ap)
	}
	if key == "" {
		if len(d) != len(al) {
			return w.uwhole(d, ap)
		}
		eq := true
		for i := range d {
			n := w.pushIndex(i)
			if !w.ignored() && !w.uvalue(d[i], &al[i], "", false) {
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
	eq := true
	for _, de := range d {
		kv := de.(map[string]any)[key]
		n := w.pushUElem(key, kv)
		if w.ignored() {
			w.path = w.path[:n]
			continue
		}
		j := ufind(al, key, kv)
		var ok bool
		if j < 0 {
			ok = !w.udiffers(de, nil, true, false)
			if !ok && w.overlay {
				al = append(al, de)
				*ap = al
			}
		} else {
			ok = w.uvalue(de, &al[j], "", false)
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
		kept := al[:0:0]
		for _, ae := range al {
			m, _ := ae.(map[string]any)
			if m != nil && ufind(d, key, m[key]) >= 0 {
				kept = append(kept, ae)
				continue
			}
			var kv any
			if m != nil {
				kv = m[key]
			}
			n := w.pushUElem(key, kv)
			if !w.ignored() && w.udiffers(nil, ae, false, true) {
				eq = false
				if !w.explain && !w.overlay {
					w.path = w.path[:n]
					return false
				}
			} else {
				kept = append(kept, ae)
			}
			w.path = w.path[:n]
		}
		if w.overlay && len(kept) != len(al) {
			*ap = kept
		}
	}
	return eq
}

// uunkeyed is unkeyedList for unstructured lists of objects with no key:
// every desired element must equal a distinct actual element, in any order.
func (w *walker) uunkeyed(d, al []any, ap *any) bool {
	eq := func(i, j int) bool {
		trial := walker{cfg: w.cfg, track: w.track, path: append([]byte(nil), w.path...)}
		ae := al[j]
		return trial.uvalue(d[i], &ae, "", false)
	}
	if w.subset(len(d), len(al), eq) {
		return true
	}
	return w.uwhole(d, ap)
}

func allObjects(list []any) bool {
	for _, e := range list {
		if _, ok := e.(map[string]any); !ok {
			return false
		}
	}
	return true
}

func (w *walker) pushUElem(key string, kv any) int {
	n := len(w.path)
	if w.track {
		w.path = append(w.path, '[')
		w.path = append(w.path, key...)
		w.path = append(w.path, '=')
		w.path = fmt.Append(w.path, kv)
		w.path = append(w.path, ']')
	}
	return n
}

func ufind(list []any, key string, kv any) int {
	for j, e := range list {
		if m, ok := e.(map[string]any); ok {
			if v, found := m[key]; found && uscalarEqual(kv, v, false) {
				return j
			}
		}
	}
	return -1
}

// uscalarEqual compares JSON scalars; numbers compare by value whatever
// their Go type, and with quantity set, numbers and strings compare as
// resource quantities.
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
	if di, ok := toInt(d); ok {
		if ai, ok := toInt(a); ok {
			return di == ai
		}
	}
	if df, ok := toFloat(d); ok {
		if af, ok := toFloat(a); ok {
			return df == af || math.IsNaN(df) && math.IsNaN(af)
		}
		return false
	}
	return reflect.DeepEqual(d, a)
}

func toInt(v any) (int64, bool) {
	switch v := v.(type) {
	case int64:
		return v, true
	case int:
		return int64(v), true
	case int32:
		return int64(v), true
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
			return int64(v), true
		}
	}
	return 0, false
}

func toFloat(v any) (float64, bool) {
	switch v := v.(type) {
	case float64:
		return v, true
	case float32:
		return float64(v), true
	case int64:
		return float64(v), true
	case int:
		return float64(v), true
	case int32:
		return float64(v), true
	}
	return 0, false
}

func toQuantity(v any) (resource.Quantity, bool) {
	var s string
	switch v := v.(type) {
	case string:
		s = v
	case int64:
		s = strconv.FormatInt(v, 10)
	case int:
		s = strconv.Itoa(v)
	case float64:
		s = strconv.FormatFloat(v, 'f', -1, 64)
	default:
		return resource.Quantity{}, false
	}
	q, err := resource.ParseQuantity(s)
	return q, err == nil
}
