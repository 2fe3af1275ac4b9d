package managedfields

import (
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/reconcilekit/reconcilekit/internal/jsonnum"
)

// KeyDefault is the content of a compare.KeyDefault rule: a list element
// that leaves the key field Field missing or empty has Value there, the API
// server's default, which managedFields record in the element's key.
type KeyDefault struct {
	Field, Value string
}

// KeyDefaultsOf returns the KeyDefault rules among compare options (its
// argument is a []compare.Option), as a comparison with those options
// applies them. Package compare sets it when it is initialised (this
// package cannot import compare, which imports it); package drift calls it
// with the options of a Writer's call, so that its partial takeover finds
// list elements by the rules its comparison used.
var KeyDefaultsOf func(compareOptions any) []KeyDefault

// defaultOf returns the value the key field name defaults to, if a rule
// says.
func defaultOf(keys []KeyDefault, name string) (string, bool) {
	for _, k := range keys {
		if k.Field == name {
			return k.Value, true
		}
	}
	return "", false
}

// Sets reports whether the JSON content sets the field, list element or
// map entry at p, the path of a managedFields entry: a list element is
// found by its key fields (a missing or empty field a KeyDefault of keys
// names has its default) or by its value, numbers comparing by value
// (package jsonnum); null, an empty list and an empty map set nothing.
//
// zeroIsUnset says content was converted from a Go struct, where a zero
// value ("", 0, false) is unset, as compare's walk of typed objects has it;
// otherwise, in unstructured content, a key present with a zero value sets
// it, as compare's walk of unstructured content has it.
func Sets(content any, p fieldpath.Path, keys []KeyDefault, zeroIsUnset bool) bool {
	v := content
	for _, pe := range p {
		switch {
		case pe.FieldName != nil:
			m, _ := v.(map[string]any)
			v = m[*pe.FieldName]
		case pe.Key != nil:
			v = elementOf(v, func(e any) bool {
				m, ok := e.(map[string]any)
				if !ok {
					return false
				}
				for _, f := range *pe.Key {
					if !keyMatches(keys, f.Name, f.Value.Unstructured(), m[f.Name]) {
						return false
					}
				}
				return true
			})
		case pe.Value != nil:
			want := (*pe.Value).Unstructured()
			v = elementOf(v, func(e any) bool { return scalarEqual(want, e) })
		case pe.Index != nil:
			l, _ := v.([]any)
			v = nil
			if *pe.Index < len(l) {
				v = l[*pe.Index]
			}
		default:
			return false
		}
		if v == nil {
			return false
		}
	}
	switch v := v.(type) {
	case map[string]any:
		return len(v) > 0
	case []any:
		return len(v) > 0
	case string:
		return v != "" || !zeroIsUnset
	case bool:
		return v || !zeroIsUnset
	}
	return !zeroIsUnset || !jsonnum.IsZero(v)
}

// keyMatches reports whether a list element's key field name, whose value
// in the element is got (nil when missing), has the value want of a
// managedFields key; a missing or empty field a KeyDefault names has its
// default.
func keyMatches(keys []KeyDefault, name string, want, got any) bool {
	if got == nil || got == "" {
		if def, ok := defaultOf(keys, name); ok {
			return want == def
		}
	}
	return scalarEqual(want, got)
}

// scalarEqual compares JSON scalars; numbers compare by value whatever
// their Go type.
func scalarEqual(x, y any) bool {
	if eq, numbers := jsonnum.Equal(x, y); numbers {
		return eq
	}
	switch x := x.(type) {
	case nil:
		return y == nil
	case string:
		y, ok := y.(string)
		return ok && x == y
	case bool:
		y, ok := y.(bool)
		return ok && x == y
	}
	return false
}

// elementOf returns the element of the JSON list v that matches, or nil.
func elementOf(v any, match func(any) bool) any {
	l, _ := v.([]any)
	for _, e := range l {
		if match(e) {
			return e
		}
	}
	return nil
}
