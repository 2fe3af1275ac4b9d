package diet

import (
	"bytes"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/internal/managedfields"
)

// Option is an optional setting of [ManagedFields] and [CacheOptions].
type Option func(*options)

type options struct {
	replaces []string
}

// Replaces names the field managers the operator takes over from, as
// drift.Replaces does on its writes: an object that still carries an entry
// of one of them keeps its managedFields whole, since the takeover rewrites
// the whole list (drift's Replaces patch). Pass the same names to both.
func Replaces(managers ...string) Option {
	return func(o *options) { o.replaces = append(o.replaces, managers...) }
}

// ManagedFields returns a cache transform (for controller-runtime's
// cache.Options.DefaultTransform or a ByObject's Transform, client-go's
// SharedIndexInformer.SetTransform) that keeps, of each object's
// metadata.managedFields, what the library reads and nothing else:
//
//   - the entries of fieldOwner for the object itself (not a subresource),
//     every operation and version: compare.Diff reads them to find what the
//     operator wrote before and no longer wants (drift's removals);
//   - the entry of any other manager that owns a field at or beneath a
//     field those entries own (another controller's env var in the
//     operator's container, a label both set): compare.Diff never removes
//     what another manager owns too, and reads their entries to know;
//   - every entry, untouched, while an entry of a manager named in
//     [Replaces] is there: drift's takeover writes the whole list, and
//     must not drop what it did not read;
//   - the entry a [Fields] transform leaves.
//
// The rest goes: the status entries of the operator and of every other
// controller, the creator's, kubectl's on fields the operator does not own.
// An object none of whose entries is the operator's keeps one entry of
// another manager with no fields: it says somebody else wrote the object,
// which drift reads to refuse writing over it (drift.ForeignError). Everything
// outside managedFields stays as the API server sent it.
//
// The transform changes the object it is given (the informer's own copy,
// not yet shared) and returns it; it is idempotent, and objects that are
// not Kubernetes objects pass through. Deciding which other entries to
// keep costs nothing when their top-level fields differ from the
// operator's (a status entry against a spec entry); otherwise both are
// parsed. An entry that does not parse is kept.
//
// A cached object then carries only part of its managedFields, which is
// all the library's writers need: they patch (a patch leaves the server's
// managedFields alone). Never send such an object back whole with an
// Update (PUT) of the object itself: the API server takes a non-empty
// managedFields list in an Update for the new truth, and would forget the
// entries the cache dropped. Status updates are safe (the server keeps its
// own list for a subresource).
//
// With an empty fieldOwner it returns an error wrapping
// errors.ErrNoFieldOwner: without it, the operator's entries cannot be told
// from the others.
func ManagedFields(fieldOwner string, opts ...Option) (toolscache.TransformFunc, error) {
	if fieldOwner == "" {
		return nil, errors.Permanent(fmt.Errorf("diet: ManagedFields: %w: pass the operator's field owner, the name its writers write under", errors.ErrNoFieldOwner))
	}
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return newManagedFields(fieldOwner, o.replaces...).transform, nil
}

// managedFields is the state of one ManagedFields transform.
type managedFields struct {
	query managedfields.Query
}

// newManagedFields returns the transform's state for fieldOwner. It keeps
// the entries of the object itself that compare reads or drift takes over,
// of every apiVersion and operation: a superset of what any one comparison
// reads.
func newManagedFields(fieldOwner string, replaces ...string) *managedFields {
	return &managedFields{query: managedfields.Query{Owner: fieldOwner, Replaces: managedfields.NewManagers(replaces...), AnyOperation: true}}
}

// transform keeps what keep says of obj's managedFields.
func (d *managedFields) transform(in any) (any, error) {
	obj, ok := in.(metav1.Object)
	if !ok {
		return in, nil
	}
	entries := obj.GetManagedFields()
	if len(entries) == 0 {
		return in, nil
	}
	kept, changed := d.keep(entries)
	if changed {
		obj.SetManagedFields(kept)
	}
	return in, nil
}

// ours reports whether e is one of the operator's entries for the object
// itself.
func (d *managedFields) ours(e *metav1.ManagedFieldsEntry) bool {
	me := managedfields.Of(e)
	return d.query.Own(&me)
}

// replaced reports whether e is an entry drift's takeover would take.
func (d *managedFields) replaced(e *metav1.ManagedFieldsEntry) bool {
	me := managedfields.Of(e)
	return d.query.Replaced(&me)
}

// keep returns the entries to keep, and whether that is not all of them.
// The result is a new slice; entries is not changed.
func (d *managedFields) keep(entries []metav1.ManagedFieldsEntry) ([]metav1.ManagedFieldsEntry, bool) {
	var own []*metav1.ManagedFieldsEntry
	for i := range entries {
		e := &entries[i]
		if d.replaced(e) {
			return entries, false
		}
		if d.ours(e) {
			own = append(own, e)
		}
	}
	var ownTop [][]byte
	for _, e := range own {
		keys, ok := topKeys(e.FieldsV1.GetRawBytes())
		if !ok {
			// Ours does not parse: compare removes nothing then, so
			// keeping the others costs memory but changes nothing.
			return entries, false
		}
		ownTop = append(ownTop, keys...)
	}
	var ownSet *fieldpath.Set // parsed only when an other entry shares a top-level field
	ownParsed := false
	out := make([]metav1.ManagedFieldsEntry, 0, len(own)+1)
	for i := range entries {
		e := &entries[i]
		switch {
		case d.ours(e), e.Manager == PartialManager:
			out = append(out, *e)
			continue
		case len(own) == 0:
			continue
		}
		keys, ok := topKeys(e.FieldsV1.GetRawBytes())
		if ok && !sharesKey(keys, ownTop) {
			continue
		}
		if !ownParsed {
			ownParsed = true
			ownSet = parseUnion(own)
		}
		if ownSet == nil || overlaps(ownSet, e) {
			out = append(out, *e)
		}
	}
	if len(out) == len(entries) {
		return entries, false
	}
	if len(out) == 0 {
		return writtenByAnother(entries)
	}
	return out, true
}

// writtenByAnother returns what is kept of entries none of which is the
// operator's: one entry of another manager, without its fields. An empty
// list would say nothing of who wrote the object, and drift takes an object
// read without managedFields for one it may have written (a cache that
// strips them cannot tell); this entry says somebody else did, so drift
// refuses to write over it (drift.ForeignError), and it owns no field
// compare.Diff could read. An entry of the object itself is chosen over a
// subresource's.
func writtenByAnother(entries []metav1.ManagedFieldsEntry) ([]metav1.ManagedFieldsEntry, bool) {
	if len(entries) == 1 && entries[0].FieldsV1 == nil {
		return entries, false // kept so already
	}
	i := max(slices.IndexFunc(entries, func(e metav1.ManagedFieldsEntry) bool { return e.Subresource == "" }), 0)
	stub := entries[i]
	stub.FieldsV1 = nil
	return []metav1.ManagedFieldsEntry{stub}, true
}

// parseUnion returns the union of the entries' fields, nil when one does not
// parse.
func parseUnion(entries []*metav1.ManagedFieldsEntry) *fieldpath.Set {
	var union *fieldpath.Set
	for _, e := range entries {
		s, err := parse(e)
		if err != nil {
			return nil
		}
		union = managedfields.Union(union, s)
	}
	return union
}

// overlaps reports whether e owns a field at or beneath a field ours owns,
// or does not parse.
func overlaps(ours *fieldpath.Set, e *metav1.ManagedFieldsEntry) bool {
	theirs, err := parse(e)
	if err != nil {
		return true
	}
	found := false
	theirs.Iterate(func(p fieldpath.Path) {
		for i := 1; !found && i <= len(p); i++ {
			found = ours.Has(p[:i])
		}
	})
	return found
}

// parse decodes an entry's fields; malformed input is an error, never a
// panic.
func parse(e *metav1.ManagedFieldsEntry) (*fieldpath.Set, error) {
	me := managedfields.Of(e)
	return managedfields.Decode(&me)
}

// sharesKey reports whether a key of keys is one of others.
func sharesKey(keys, others [][]byte) bool {
	for _, k := range keys {
		for _, o := range others {
			if bytes.Equal(k, o) {
				return true
			}
		}
	}
	return false
}

// topKeys returns the keys of the JSON object raw (as raw bytes, escapes
// and all), without decoding it; ok is false when raw is not a JSON object
// this scanner can read. An empty raw has no keys.
func topKeys(raw []byte) (keys [][]byte, ok bool) {
	s := scanner{b: raw}
	s.space()
	if s.done() {
		return nil, true
	}
	if !s.byte('{') {
		return nil, false
	}
	s.space()
	if s.byte('}') {
		return nil, s.end()
	}
	for {
		s.space()
		k, ok := s.str()
		if !ok {
			return nil, false
		}
		keys = append(keys, k)
		s.space()
		if !s.byte(':') || !s.value(0) {
			return nil, false
		}
		s.space()
		if s.byte(',') {
			continue
		}
		if s.byte('}') {
			return keys, s.end()
		}
		return nil, false
	}
}

// scanner reads just enough JSON to skip values.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) done() bool { return s.i >= len(s.b) }

func (s *scanner) end() bool { s.space(); return s.done() }

func (s *scanner) space() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

func (s *scanner) byte(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// str reads a string and returns it with its quotes.
func (s *scanner) str() ([]byte, bool) {
	start := s.i
	if !s.byte('"') {
		return nil, false
	}
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '\\':
			s.i += 2
		case '"':
			s.i++
			return s.b[start:s.i], true
		default:
			s.i++
		}
	}
	return nil, false
}

// maxDepth bounds the nesting the scanner follows.
const maxDepth = 10000

// value skips one JSON value.
func (s *scanner) value(depth int) bool {
	if depth > maxDepth {
		return false
	}
	s.space()
	if s.done() {
		return false
	}
	switch c := s.b[s.i]; c {
	case '"':
		_, ok := s.str()
		return ok
	case '{', '[':
		s.i++
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		s.space()
		if s.byte(closing) {
			return true
		}
		for {
			s.space()
			if c == '{' {
				if _, ok := s.str(); !ok {
					return false
				}
				s.space()
				if !s.byte(':') {
					return false
				}
			}
			if !s.value(depth + 1) {
				return false
			}
			s.space()
			if s.byte(',') {
				continue
			}
			return s.byte(closing)
		}
	default:
		// A number, true, false or null: up to the next delimiter.
		start := s.i
		for s.i < len(s.b) && !delimiter(s.b[s.i]) {
			s.i++
		}
		return s.i > start
	}
}

// delimiter reports whether c ends a JSON number or literal.
func delimiter(c byte) bool {
	switch c {
	case ',', '}', ']', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}
