package compare

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/reconcilekit/reconcilekit/internal/managedfields"
)

// ErrNotComparable is returned (wrapped) by [Diff] and [Overlay] when
// desired and actual cannot be compared: nil, or of different types that are
// not an object and its [unstructured.Unstructured] form.
//
// [unstructured.Unstructured]: https://pkg.go.dev/k8s.io/apimachinery/pkg/apis/meta/v1/unstructured#Unstructured
var ErrNotComparable = errors.New("compare: values are not comparable")

// ErrInvalidPath is returned (wrapped) by [Diff] and [Overlay] when a path
// given to an option such as [IgnorePaths] cannot be parsed.
var ErrInvalidPath = errors.New("compare: invalid path")

// Comparison is the outcome of [Diff]: whether actual already has everything
// desired sets and, when not, where and how it differs.
type Comparison struct {
	// Equal is true when actual has every field desired sets.
	Equal bool
	// Paths lists the drifted fields, sorted, in the form
	// "spec.template.spec.containers[name=web].image": fields joined by dots,
	// keyed list elements as [key=value], other list elements as [index],
	// map entries as [key]. Empty when Equal.
	Paths []string
	// Report is a readable diff, one block per path, "-" lines showing
	// actual and "+" lines showing desired. Empty when Equal.
	Report string

	drifts []drift
}

// String returns the Report, or "no drift" when Equal.
func (c Comparison) String() string {
	if c.Equal {
		return "no drift"
	}
	return c.Report
}

// Fingerprint identifies the drift: a hash of the drifted paths and of the
// desired values at them, not the actual ones. Two comparisons whose drift
// would be written the same way have the same fingerprint, so a drift that
// keeps coming back is recognised (package drift's HotLoopDetector) while a
// desired object that changed is not taken for it. It is 0 when Equal.
func (c Comparison) Fingerprint() uint64 {
	if c.Equal {
		return 0
	}
	h := fnv.New64a()
	for _, d := range c.drifts {
		h.Write([]byte(d.path))
		h.Write([]byte{0})
		b, err := json.Marshal(d.desired)
		if err != nil {
			b = fmt.Appendf(nil, "%v", d.desired)
		}
		h.Write(b)
		h.Write([]byte{0})
	}
	return h.Sum64()
}

// Diff compares desired against actual and reports drift: the fields desired
// sets that actual lacks or holds with another value.
//
// desired and actual are API objects of the same Go type (usually pointers
// to typed objects), or [unstructured.Unstructured] (either side may be
// unstructured while the other is typed), or any two values of one Go type
// (two specs, say). The rules:
//
//   - A field desired leaves at its zero value ("", 0, false, nil, an empty
//     list or map, a zero Quantity or time) is not set, so it is never drift:
//     the server may default it and other writers may own it. To demand a
//     zero value, use a pointer field (a non-nil pointer is always compared,
//     even to 0 or false) or, for maps and lists, [Own].
//     Map values and list elements are always compared, zero or not.
//   - apiVersion, kind, status and metadata other than labels and
//     annotations are ignored ([IncludeStatus], [IncludeOwnerReferences]).
//   - resource.Quantity compares by value ("1Gi" equals "1024Mi");
//     metav1.Time to the second and metav1.MicroTime to the microsecond,
//     as they travel on the wire.
//   - Lists whose Go field declares a patchMergeKey (containers and env by
//     name, container ports by containerPort, service ports by port, ...)
//     are matched by that key: order and extra elements in actual are not
//     drift, a desired element missing from actual is. With the
//     [KubernetesRules], ports are paired by number and protocol (53/UDP
//     and 53/TCP are two elements), as the API keys them. Other lists of
//     structs (tolerations, ...) are sets that desired must be part of: each
//     desired element must equal a distinct actual element, in any order, so
//     elements an admission plugin added are not drift; a missing one is
//     drift of the whole list. Lists of scalars (args, command) are one
//     value: same length, same order.
//   - Maps: desired's keys must be present with equal values; extra keys in
//     actual are not drift unless [Own] says so.
//   - Fields we wrote before: what the field owner ([WithFieldOwner]) owns
//     in actual's metadata.managedFields, no other field manager owns, and
//     desired no longer sets is drift: any field of our server-side apply
//     entry; list elements and map entries of our create and patch (Update)
//     entry, whose struct fields include server defaults. See the package
//     documentation, "Fields we wrote before", for the rule and what is
//     detected for custom resources. Without WithFieldOwner, Diff owns
//     nothing and compares only what desired sets.
//
// For [unstructured.Unstructured] there are no Go types, so: a key present in
// desired is set, even with a zero value ("", 0, false), and null means not
// set; a list is matched by "name" when every desired element is an object
// with a "name" (or by the key given with [ListKey]), is a set that desired
// must be part of when its elements are objects without such a key, and is
// one value otherwise; values of maps named limits, requests, hard, capacity,
// allocatable or overhead, and fields named sizeLimit, compare as quantities;
// and since fields and map keys look alike without Go types, keys that are
// identifiers are written as fields in paths ("data.mode" where the typed
// form says "data[mode]"), others in brackets ("metadata.labels[app.kubernetes.io/name]").
// Path options must use the form of the content they apply to.
//
// Diff is a pure function of its arguments: it reads no clock, no client
// and no global scheme ([WithScheme] passes one), and it never changes
// desired or actual. Deciding allocates little and does not use go-cmp
// (unless [CmpOptions] asks for it); only when there is drift does Diff walk
// again to collect paths and explain them, each drifted value as JSON.
//
// [unstructured.Unstructured]: https://pkg.go.dev/k8s.io/apimachinery/pkg/apis/meta/v1/unstructured#Unstructured
func Diff(desired, actual any, opts ...Option) (Comparison, error) {
	var cfg options
	cfg.apply(opts)
	if cfg.err != nil {
		return Comparison{}, cfg.err
	}
	ops, err := operands(desired, actual)
	if err != nil {
		return Comparison{}, err
	}
	ops.owners(&cfg, actual)
	var buf [128]byte
	w := newWalker(&cfg, &ops, false, false, buf[:0])
	if w.root(&ops) {
		return Comparison{Equal: true}, nil
	}
	w = newWalker(&cfg, &ops, true, false, buf[:0])
	if w.root(&ops) || len(w.drifts) == 0 {
		// Deciding and explaining follow the same rules; reaching this
		// means they disagree, which the fuzz tests guard against.
		return Comparison{Equal: true}, nil
	}
	return explain(w.drifts), nil
}

// Overlay writes into actual what [Diff] with the same options reports as
// drift: desired's value at every drifted path, and the removal of what is
// ours to drop ([Own], [WithFieldOwner]). Afterwards Diff finds no drift, and
// a patch from the object actual was to what it is now carries exactly the
// drift: package drift's Ensure builds its patches so.
//
// actual must be a pointer to a typed object or an
// [unstructured.Unstructured], and it is changed in place: pass a copy of
// the live object. It may share memory with desired afterwards (maps, lists,
// pointers desired holds), so copy desired first if either will change.
//
// [unstructured.Unstructured]: https://pkg.go.dev/k8s.io/apimachinery/pkg/apis/meta/v1/unstructured#Unstructured
func Overlay(desired, actual any, opts ...Option) error {
	var cfg options
	cfg.apply(opts)
	if cfg.err != nil {
		return cfg.err
	}
	p, err := operands(desired, actual)
	if err != nil {
		return err
	}
	if !p.unstr && !p.av.CanSet() {
		return fmt.Errorf("%w: Overlay changes actual, which must be a pointer, not a %T", ErrNotComparable, actual)
	}
	p.owners(&cfg, actual)
	w := newWalker(&cfg, &p, true, true, nil)
	w.root(&p)
	return nil
}

// pair is the normalized inputs of a comparison: both reflect values of one
// type, or both unstructured content; and what our field owner owns in
// actual (see owned.go).
type pair struct {
	unstr  bool
	dv, av reflect.Value
	dm, am map[string]any

	own    *ownedNode
	copied []CopiedDefault // the rules of actual's kind
	jt     reflect.Type    // Go type of the unstructured content's kind, if known
}

// owners finds what our field owner owns in actual: nothing without one.
func (p *pair) owners(cfg *options, actual any) {
	if cfg.fieldOwner == "" {
		return
	}
	q := managedfields.Query{Owner: cfg.fieldOwner, Replaces: cfg.replaced, ApplyOnly: cfg.applyOnly}
	gvk, jt := kindOf(cfg.scheme, actual, p.am)
	if !gvk.Empty() {
		q.APIVersion = apiVersionOf(gvk.GroupVersion())
	}
	if p.unstr {
		p.own = ownedFor(&q, nil, p.am)
	} else {
		p.own = ownedFor(&q, actual, nil)
	}
	if p.own != nil {
		p.jt = jt
		p.copied = copiedFor(cfg.copied, gvk)
	}
}

// operands normalizes the inputs.
func operands(desired, actual any) (pair, error) {
	if desired == nil || actual == nil {
		return pair{}, fmt.Errorf("%w: desired and actual must not be nil", ErrNotComparable)
	}
	du, dIsU := desired.(*unstructured.Unstructured)
	au, aIsU := actual.(*unstructured.Unstructured)
	if dIsU || aIsU {
		dm, err := unstructuredContent(desired, du, dIsU)
		if err != nil {
			return pair{}, err
		}
		am, err := unstructuredContent(actual, au, aIsU)
		if err != nil {
			return pair{}, err
		}
		return pair{unstr: true, dm: dm, am: am}, nil
	}
	dv, av := reflect.ValueOf(desired), reflect.ValueOf(actual)
	if dv.Type() != av.Type() {
		return pair{}, fmt.Errorf("%w: desired is %s, actual is %s", ErrNotComparable, dv.Type(), av.Type())
	}
	for dv.Kind() == reflect.Pointer {
		if dv.IsNil() || av.IsNil() {
			return pair{}, fmt.Errorf("%w: nil %s", ErrNotComparable, dv.Type())
		}
		dv, av = dv.Elem(), av.Elem()
	}
	return pair{dv: dv, av: av}, nil
}

func unstructuredContent(obj any, u *unstructured.Unstructured, isU bool) (map[string]any, error) {
	if isU {
		if u == nil {
			return nil, fmt.Errorf("%w: nil *unstructured.Unstructured", ErrNotComparable)
		}
		if u.Object == nil {
			return map[string]any{}, nil
		}
		return u.Object, nil
	}
	if v := reflect.ValueOf(obj); v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("%w: %T is neither unstructured nor a pointer to a struct", ErrNotComparable, obj)
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("%w: converting %T to unstructured: %w", ErrNotComparable, obj, err)
	}
	return m, nil
}

// root walks the top of the object.
func (w *walker) root(p *pair) bool {
	if p.unstr {
		return w.jsonObject(p.dm, p.am, modeRoot, false)
	}
	dv, av := p.dv, p.av
	if dv.Kind() == reflect.Struct {
		if _, isObject := infoFor(dv.Type()).byName["metadata"]; isObject {
			return w.object(dv, av, modeRoot, false)
		}
	}
	return w.value(dv, av, false)
}

func explain(drifts []drift) Comparison {
	slices.SortStableFunc(drifts, func(x, y drift) int { return strings.Compare(x.path, y.path) })
	c := Comparison{drifts: drifts}
	var b strings.Builder
	for _, dr := range drifts {
		if len(c.Paths) == 0 || c.Paths[len(c.Paths)-1] != dr.path {
			c.Paths = append(c.Paths, dr.path)
		}
		p := dr.path
		if p == "" {
			p = "<root>"
		}
		b.WriteString(p)
		b.WriteString(":\n")
		b.WriteString(explainOne(dr))
	}
	c.Report = b.String()
	return c
}

// explainOne renders one drift: a "-" line with the actual value and a "+"
// line with the desired one, each as the compact JSON the API server would
// show (Go syntax for a value JSON cannot encode). A missing side has no
// line; a null one is "null". Unlike go-cmp's report, the text is stable:
// logs, events and tests can rely on it.
func explainOne(dr drift) string {
	var b strings.Builder
	if dr.hasActual {
		b.WriteString("- ")
		b.WriteString(render(dr.actual))
		b.WriteByte('\n')
	}
	if dr.hasDesired {
		b.WriteString("+ ")
		b.WriteString(render(dr.desired))
		b.WriteByte('\n')
	}
	return b.String()
}

// render is v as compact JSON without HTML escaping (a URL or a shell
// command reads as written), or in Go syntax when it has no JSON form.
func render(v any) (s string) {
	defer func() {
		if recover() != nil {
			s = fmt.Sprintf("%#v", v)
		}
	}()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf("%#v", v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
