package compare

import (
	"errors"
	"fmt"
	"reflect"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/reconcilekit/reconcilekit/internal/managedfields"
)

// ErrInvalidRule is returned (wrapped) by [Diff] and [Overlay] when a
// [Rule] given to [Rules] cannot work: a field, value or kind left empty.
var ErrInvalidRule = errors.New("compare: invalid rule")

// Rule is a default the API server fills in that neither the Go types nor
// the JSON of an object show, and that the comparison must know not to take
// for drift or to pair list elements by. The walk itself knows no kind of
// object; [Rules] passes it the rules, and [KubernetesRules] are those of
// the built-in API. The rules there are: [KeyDefault] and [CopiedDefault].
type Rule interface {
	validate() error
}

// KeyDefault says that a keyed list whose elements have the string field
// Field pairs its elements by that field too, beside the list's key, and
// that an element which leaves it empty has Value there, the API server's
// default. The built-in port lists are keyed so: a container's ports by
// containerPort and protocol, a Service's by port and protocol, TCP by
// default, so that 53/UDP and 53/TCP are two elements and a port desired
// leaves without a protocol is the server's TCP port. It also applies to
// the keys of list elements in metadata.managedFields, where the server
// records the default.
type KeyDefault struct {
	// Field is the JSON name of the key field, such as "protocol".
	Field string
	// Value is what an element that leaves Field empty has, such as "TCP".
	Value string
}

func (r KeyDefault) validate() error {
	if r.Field == "" || r.Value == "" {
		return fmt.Errorf("%w: KeyDefault %+v needs a Field and a Value", ErrInvalidRule, r)
	}
	return nil
}

// CopiedDefault says that in objects of APIVersion and Kind the API server
// copies the entries of the map field From into the sibling map field To
// where To lacks them: a key of To that desired's From has is the server's
// default, never drift to remove, even when our field owner wrote it before.
// A Pod's requests are so copied from its limits (not a Deployment's pod
// template: the server defaults only Pods).
type CopiedDefault struct {
	// APIVersion and Kind name the objects the server does it to, such as
	// "v1" and "Pod".
	APIVersion, Kind string
	// From and To are the JSON names of the two map fields of one struct,
	// such as "limits" and "requests".
	From, To string
}

func (r CopiedDefault) validate() error {
	if r.APIVersion == "" || r.Kind == "" || r.From == "" || r.To == "" || r.From == r.To {
		return fmt.Errorf("%w: CopiedDefault %+v needs an APIVersion, a Kind and two different map fields", ErrInvalidRule, r)
	}
	return nil
}

// KubernetesRules returns the rules of the built-in Kubernetes API: a port's
// protocol defaults to TCP and pairs ports ([KeyDefault]), and a Pod's
// requests are copied from its limits ([CopiedDefault]). Package drift's
// writers pass them to every comparison; pass them to [Diff] yourself with
// Rules(compare.KubernetesRules()...) to compare as they do.
func KubernetesRules() []Rule {
	return []Rule{
		KeyDefault{Field: "protocol", Value: "TCP"},
		CopiedDefault{APIVersion: "v1", Kind: "Pod", From: "limits", To: "requests"},
	}
}

// Rules adds rules to the comparison (see [Rule]). Without any, the walk
// knows only what Go types and JSON say. A rule that cannot work (a nil
// one, an empty field) makes Diff return an error wrapping
// [ErrInvalidRule].
func Rules(rules ...Rule) Option {
	// Checked and sorted once, here: the Option only hands the slices over,
	// so that a Diff allocates nothing for its rules.
	var (
		keys   []KeyDefault
		copied []CopiedDefault
		err    error
	)
	for _, r := range rules {
		if r == nil {
			err = firstErr(err, fmt.Errorf("%w: nil rule", ErrInvalidRule))
			continue
		}
		if verr := r.validate(); verr != nil {
			err = firstErr(err, verr)
			continue
		}
		switch r := r.(type) {
		case KeyDefault:
			keys = append(keys, r)
		case CopiedDefault:
			copied = append(copied, r)
		}
	}
	return func(c *options) {
		if err != nil {
			c.fail(err)
		}
		c.keys = appendShared(c.keys, keys)
		c.copied = appendShared(c.copied, copied)
	}
}

// firstErr returns the first non-nil error.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// appendShared appends src to dst without writing into either's array,
// which Options built once share between calls: src itself when dst is
// empty.
func appendShared[T any](dst, src []T) []T {
	if len(dst) == 0 {
		return src
	}
	return append(slices.Clip(dst), src...)
}

// copiedFor returns the rules of copied that apply to objects of gvk.
func copiedFor(copied []CopiedDefault, gvk schema.GroupVersionKind) []CopiedDefault {
	var out []CopiedDefault
	for _, r := range copied {
		if r.Kind == gvk.Kind && r.APIVersion == apiVersionOf(gvk.GroupVersion()) {
			out = append(out, r)
		}
	}
	return out
}

// copiedInto returns the rule whose To is the field name, or nil.
func (w *walker) copiedInto(name string) *CopiedDefault {
	for i := range w.copied {
		if w.copied[i].To == name {
			return &w.copied[i]
		}
	}
	return nil
}

// protectTyped returns the value of the From map of the rule whose To is the
// field name, in the struct d of type info ti; nil when none.
func (w *walker) protectTyped(d reflect.Value, ti *typeInfo, name string) any {
	r := w.copiedInto(name)
	if r == nil {
		return nil
	}
	if i, ok := ti.byName[r.From]; ok && ti.fields[i].typ.Kind() == reflect.Map {
		return d.Field(ti.fields[i].index).Interface()
	}
	return nil
}

// protectJSON is protectTyped for the JSON object d.
func (w *walker) protectJSON(d map[string]any, name string) any {
	if r := w.copiedInto(name); r != nil {
		return d[r.From]
	}
	return nil
}

// protected reports whether key is a key of the map a CopiedDefault copies
// from while the walk is in the map it copies into: such an entry is a
// default, never drift.
func (w *walker) protected(key string) bool {
	switch l := w.protect.(type) {
	case nil:
		return false
	case map[string]any:
		_, ok := l[key]
		return ok
	case map[string]string:
		_, ok := l[key]
		return ok
	}
	m := reflect.ValueOf(w.protect)
	if m.Kind() != reflect.Map || m.Type().Key().Kind() != reflect.String {
		return false
	}
	return m.MapIndex(reflect.ValueOf(key).Convert(m.Type().Key())).IsValid()
}

// keyDefault returns the KeyDefault for a keyed list whose elements are
// structs of type et keyed by the field key: its Go field index in et and
// the default value, or -1.
func (c *options) keyDefault(et reflect.Type, key string) (int, string) {
	for _, r := range c.keys {
		if r.Field == key {
			continue
		}
		if i := keyFieldIndex(et, r.Field); i >= 0 && et.Field(i).Type.Kind() == reflect.String {
			return i, r.Value
		}
	}
	return -1, ""
}

func init() {
	// Package drift's partial takeover finds list elements by the rules of
	// its comparison: the KeyDefaults of the options a Writer's call
	// compares with, drift.CompareOptions' included.
	managedfields.KeyDefaultsOf = func(opts any) []managedfields.KeyDefault {
		var c options
		if o, ok := opts.([]Option); ok {
			c.apply(o)
		}
		keys := make([]managedfields.KeyDefault, len(c.keys))
		for i, k := range c.keys {
			keys[i] = managedfields.KeyDefault(k)
		}
		return keys
	}
}

// defaultOf returns the KeyDefault value of the key field name, when a rule
// defaults it.
func defaultOf(keys []KeyDefault, name string) (string, bool) {
	for _, r := range keys {
		if r.Field == name {
			return r.Value, true
		}
	}
	return "", false
}
