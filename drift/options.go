package drift

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/google/go-cmp/cmp"
)

// Option configures [Diff], [Ensure], [EnsureMutate] and [EnsureApplied]:
// the same values compare by the same rules everywhere. Options that shape a
// write ([Owner], [OptimisticLock], [DetectHotLoops], [ForceOwnership],
// [Replaces]) mean nothing to Diff, which ignores them. Options are plain values: build them
// once and reuse them.
type Option func(*config)

// diffConfig is what the Options say about comparing.
type diffConfig struct {
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
	fieldOwner string // WithFieldOwner; "" means none: Diff then owns nothing, Ensure refuses
	err        error  // first invalid option, reported by Diff

	// Set by Ensure and its variants, not by options:
	applyOnly  bool         // EnsureApplied: only our Apply entry counts
	apiVersion string       // the object's apiVersion by the client's scheme
	smp        bool         // the drift is written by a strategic merge patch
	kindType   reflect.Type // Go type of unstructured content's kind, by the client's scheme
	replaced   string       // Replaces' names (replacedSet) whose entries are ours whole: the object is our Owner's
}

type listKeyRule struct {
	at  pathPattern
	key string
}

// hasRules reports whether the walk must track the current path even when it
// is only deciding equality.
func (c *diffConfig) hasRules() bool {
	return len(c.ignore) > 0 || len(c.own) > 0 || len(c.listKeys) > 0
}

func (c *diffConfig) addPatterns(dst *[]pathPattern, paths []string) {
	for _, p := range paths {
		pp, err := parsePathPattern(p)
		if err != nil {
			if c.err == nil {
				c.err = err
			}
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
	return func(c *config) { c.diff.addPatterns(&c.diff.ignore, paths) }
}

// CompareStatus makes [Diff] compare the status field, which it ignores by
// default. [Ensure] never writes status, whatever the options: status belongs
// to the status subresource.
func CompareStatus() Option {
	return func(c *config) { c.diff.compareStatus = true }
}

// CompareOwnerReferences makes [Diff] compare metadata.ownerReferences
// (matched by uid), which it ignores by default. [Ensure] turns it on by
// itself when given an [Owner].
func CompareOwnerReferences() Option {
	return func(c *config) { c.diff.compareOwnerRefs = true }
}

// Own declares that desired owns the whole map or list at each path: keys
// or elements the actual map or list has and desired lacks are drift (and
// [Ensure] removes them). An empty or nil desired value then means "no keys"
// or "no elements". By default extra keys are someone else's business, and
// so are extra elements of a keyed list or of an unkeyed list of objects;
// an owned list is one value, compared whole and in order.
func Own(paths ...string) Option {
	return func(c *config) { c.diff.addPatterns(&c.diff.own, paths) }
}

// ListKey matches the elements of the list at path by the field key instead
// of by position. Typed Kubernetes objects need it only for lists whose Go
// type declares no patchMergeKey; for [unstructured.Unstructured] it is how a
// caller declares keys other than "name". The key is a JSON field name.
//
// [unstructured.Unstructured]: https://pkg.go.dev/k8s.io/apimachinery/pkg/apis/meta/v1/unstructured#Unstructured
func ListKey(path, key string) Option {
	return func(c *config) {
		pp, err := parsePathPattern(path)
		if err == nil && key == "" {
			err = fmt.Errorf("%w: empty list key for %q", ErrInvalidPath, path)
		}
		if err != nil {
			if c.diff.err == nil {
				c.diff.err = err
			}
			return
		}
		c.diff.listKeys = append(c.diff.listKeys, listKeyRule{at: pp, key: key})
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
	return func(c *config) {
		if len(opts) == 0 {
			return
		}
		c.diff.cmpOpts = append(c.diff.cmpOpts, opts...)
		c.diff.cmpEqual = cmpEqual
	}
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
