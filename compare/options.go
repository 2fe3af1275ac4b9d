package compare

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/reconcilekit/reconcilekit/internal/managedfields"
)

// Option configures [Diff] and [Overlay]. Options are plain values: build
// them once and reuse them. A path an option takes that does not parse, or
// a [Rule] that cannot work, makes Diff and Overlay return an error
// wrapping [ErrInvalidPath] or [ErrInvalidRule]; the first such error wins.
type Option func(*options)

// options is what the Options say about comparing.
type options struct {
	compareStatus    bool
	compareOwnerRefs bool
	ignore           []pathPattern
	own              []pathPattern
	listKeys         []listKeyRule
	cmpOpts          []cmp.Option
	// cmpEqual is cmp.Equal under cmpOpts; set only by CmpOptions, so that
	// a program that never asks for go-cmp does not link it (see
	// CmpOptions).
	cmpEqual   func(a, d reflect.Value, opts []cmp.Option) bool
	fieldOwner string                 // WithFieldOwner; "" means none: nothing is ours
	replaced   managedfields.Managers // Replaces' names, whose entries are ours whole
	applyOnly  bool                   // OnlyApplied: only our Apply entry counts
	smp        bool                   // StrategicMerge: the drift is written by a strategic merge patch
	scheme     *runtime.Scheme
	keys       []KeyDefault    // Rules
	copied     []CopiedDefault // Rules
	err        error           // first invalid option
}

type listKeyRule struct {
	at  pathPattern
	key string
}

// apply applies opts to c.
func (c *options) apply(opts []Option) {
	for _, o := range opts {
		o(c)
	}
}

// hasRules reports whether the walk must track the current path even when it
// is only deciding equality.
func (c *options) hasRules() bool {
	return len(c.ignore) > 0 || len(c.own) > 0 || len(c.listKeys) > 0
}

func (c *options) fail(err error) {
	if c.err == nil {
		c.err = err
	}
}

func (c *options) addPatterns(dst *[]pathPattern, paths []string) {
	for _, p := range paths {
		pp, err := parsePathPattern(p)
		if err != nil {
			c.fail(err)
			continue
		}
		*dst = append(*dst, pp)
	}
}

// IgnorePaths makes [Diff] skip the fields at the given paths and everything
// below them. Paths use the syntax of [Comparison.Paths]; a bracket segment
// may be the wildcard [*], matching any list element or map key, as in
// "spec.template.spec.containers[*].imagePullPolicy".
func IgnorePaths(paths ...string) Option {
	return func(c *options) { c.addPatterns(&c.ignore, paths) }
}

// IncludeStatus makes [Diff] compare the status field, which it ignores by
// default. [IgnoreStatus] undoes it.
func IncludeStatus() Option {
	return func(c *options) { c.compareStatus = true }
}

// IgnoreStatus makes [Diff] ignore the status field, as it does by default:
// it undoes a [IncludeStatus] given before it. A writer of the main resource
// (package drift's) passes it last, since status belongs to the status
// subresource whatever its caller's options say.
func IgnoreStatus() Option {
	return func(c *options) { c.compareStatus = false }
}

// IncludeOwnerReferences makes [Diff] compare metadata.ownerReferences
// (matched by uid), which it ignores by default.
func IncludeOwnerReferences() Option {
	return func(c *options) { c.compareOwnerRefs = true }
}

// Own declares that desired owns the whole map or list at each path: keys
// or elements the actual map or list has and desired lacks are drift (and
// [Overlay] removes them). An empty or nil desired value then means "no keys"
// or "no elements". By default extra keys are someone else's business, and
// so are extra elements of a keyed list or of an unkeyed list of objects.
//
// Owning a list does not change how its elements pair up: a keyed list
// (containers and env by name, ports by number and protocol, or a [ListKey])
// is still matched by key, so its order is not drift and an element actual
// has beyond desired's is; any other list is one value, compared whole and
// in order.
func Own(paths ...string) Option {
	return func(c *options) { c.addPatterns(&c.own, paths) }
}

// ListKey matches the elements of the list at path by the field key instead
// of by position. Typed Kubernetes objects need it only for lists whose Go
// type declares no patchMergeKey; for [unstructured.Unstructured] it is how a
// caller declares keys other than "name". The key is a JSON field name.
//
// [unstructured.Unstructured]: https://pkg.go.dev/k8s.io/apimachinery/pkg/apis/meta/v1/unstructured#Unstructured
func ListKey(path, key string) Option {
	return func(c *options) {
		pp, err := parsePathPattern(path)
		if err == nil && key == "" {
			err = fmt.Errorf("%w: empty list key for %q", ErrInvalidPath, path)
		}
		if err != nil {
			c.fail(err)
			return
		}
		c.listKeys = append(c.listKeys, listKeyRule{at: pp, key: key})
	}
}

// CmpOptions adds go-cmp options. They are consulted for every field the walk
// finds different: if cmp.Equal reports the two values equal under these
// options, the field is not drift.
//
// Only a program that calls CmpOptions links go-cmp's comparison code (its
// package initialisers run in every program that imports this package).
// That matters for its size: go-cmp looks up methods by reflection, which
// turns off the Go linker's removal of unused methods for the whole
// program. The At operator's binary is 62 MB with that code and 48 MB
// without, and its resident memory at rest 5 MiB larger.
func CmpOptions(opts ...cmp.Option) Option {
	return func(c *options) {
		if len(opts) == 0 {
			return
		}
		c.cmpOpts = append(c.cmpOpts, opts...)
		c.cmpEqual = cmpEqual
	}
}

// WithFieldOwner names the field manager whose entries in the actual
// object's metadata.managedFields are ours: a field, list element or map
// entry it wrote that desired no longer sets is drift (see "Fields we wrote
// before" in the package documentation). Without it, or with "", nothing is
// ours and [Diff] compares only what desired sets.
func WithFieldOwner(name string) Option {
	return func(c *options) { c.fieldOwner = name }
}

// Replaces makes the managedFields entries of the given field managers ours
// too, whole and whatever their operation, as if [WithFieldOwner]'s name
// had written them: the controller an operator replaces, whose fields it
// takes over. Package drift passes it for the managers of drift.Replaces on
// the objects its Owner controls. Without WithFieldOwner it does nothing.
func Replaces(managers ...string) Option {
	set := managedfields.NewManagers(managers...)
	return func(c *options) {
		if c.replaced == "" {
			c.replaced = set
			return
		}
		c.replaced = c.replaced.Union(set)
	}
}

// OnlyApplied makes only the field owner's Apply entry (server-side apply)
// count as what we wrote before, not its Update entry: the comparison
// server-side apply makes, since an apply releases what it applied before
// and cannot remove what an update wrote. Package drift's EnsureApplied
// passes it.
func OnlyApplied() Option {
	return func(c *options) { c.applyOnly = true }
}

// StrategicMerge says the drift will be written with a strategic merge
// patch, which deletes a list element by its merge key alone: an element we
// own that shares its merge key with another (53/UDP beside 53/TCP) is then
// not drift to remove, since the patch would delete both. Package drift's
// Ensure passes it for built-in types.
func StrategicMerge() Option {
	return func(c *options) { c.smp = true }
}

// WithScheme is where [Diff] learns the apiVersion and kind of a typed
// object, and the Go type of unstructured content's kind: which
// managedFields entries are of the object's version (only those count as
// ours), which [Rule] applies, and, for unstructured content, which fields
// are maps (see "Fields we wrote before"). Without it a typed object's kind
// is its TypeMeta's (often empty: then entries of every version count and
// no rule limited to a kind applies), and unstructured content is treated
// like a custom resource whose Go type is unknown.
func WithScheme(s *runtime.Scheme) Option {
	return func(c *options) { c.scheme = s }
}

// pathPattern is a parsed path with optional [*] wildcards.
type pathPattern string

func parsePathPattern(p string) (pathPattern, error) {
	if p == "" {
		return "", fmt.Errorf("%w: empty path", ErrInvalidPath)
	}
	depth := 0
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '[':
			if depth > 0 {
				return "", fmt.Errorf("%w: nested '[' in %q", ErrInvalidPath, p)
			}
			depth++
		case ']':
			if depth == 0 {
				return "", fmt.Errorf("%w: unbalanced ']' in %q", ErrInvalidPath, p)
			}
			depth--
		case '.':
			if depth == 0 && (i == 0 || i == len(p)-1 || p[i-1] == '.') {
				return "", fmt.Errorf("%w: empty field name in %q", ErrInvalidPath, p)
			}
		}
	}
	if depth != 0 {
		return "", fmt.Errorf("%w: unbalanced '[' in %q", ErrInvalidPath, p)
	}
	if strings.HasPrefix(p, "[") {
		return "", fmt.Errorf("%w: %q starts with a bracket", ErrInvalidPath, p)
	}
	return pathPattern(p), nil
}

// match reports whether path matches the pattern exactly, where a "[*]"
// segment in the pattern matches any one bracket segment of the path.
func (pp pathPattern) match(path []byte) bool {
	p := string(pp)
	i, j := 0, 0
	for i < len(p) && j < len(path) {
		if p[i] == '[' && i+2 < len(p) && p[i+1] == '*' && p[i+2] == ']' && path[j] == '[' {
			i += 3
			j++
			for j < len(path) && path[j] != ']' {
				j++
			}
			if j == len(path) {
				return false
			}
			j++
			continue
		}
		if p[i] != path[j] {
			return false
		}
		i++
		j++
	}
	return i == len(p) && j == len(path)
}

func anyMatch(pats []pathPattern, path []byte) bool {
	for _, p := range pats {
		if p.match(path) {
			return true
		}
	}
	return false
}
