// Package managedfields is the library's one reading of
// metadata.managedFields: the one decoder of an entry's fields (with
// structured-merge-diff's fieldpath, never a panic), and the one rule of
// which entries are the operator's, which are those of a manager it
// replaces, and whether it wrote an object before. Package compare reads
// what we own through it (what we wrote and desired no longer sets is
// drift), diet keeps in a cache what compare will read, and drift takes
// over the entries of replaced managers and refuses objects somebody else
// wrote; each asks the same [Query], with the parameters its use needs.
//
// It imports only apimachinery, structured-merge-diff and
// internal/jsonnum, so that compare, which uses it, stays a pure function
// (compare/purity_test.go). internal/apicheck fails on a decoder of
// managedFields anywhere else.
package managedfields

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// ErrMalformed stands for an entry whose fields structured-merge-diff
// panicked on.
var ErrMalformed = errors.New("managedfields: malformed fieldsV1")

// Entry is one managedFields entry: from a typed object (Raw, the
// FieldsV1 bytes) or from unstructured content (Tree, the decoded
// fieldsV1).
type Entry struct {
	Manager, Operation, APIVersion, Subresource string
	Raw                                         []byte
	Tree                                        any
}

// Of returns the Entry of a typed entry; it copies nothing.
func Of(e *metav1.ManagedFieldsEntry) Entry {
	return Entry{Manager: e.Manager, Operation: string(e.Operation), APIVersion: e.APIVersion,
		Subresource: e.Subresource, Raw: e.FieldsV1.GetRawBytes()}
}

// Each calls f with each managedFields entry of obj (typed: anything with
// GetManagedFields) or, when content is not nil, of unstructured content,
// in order and without allocating, until f returns false.
func Each(obj any, content map[string]any, f func(Entry) bool) {
	if content != nil {
		meta, _ := content["metadata"].(map[string]any)
		list, _ := meta["managedFields"].([]any)
		for _, v := range list {
			m, _ := v.(map[string]any)
			e := Entry{Tree: m["fieldsV1"]}
			e.Manager, _ = m["manager"].(string)
			e.Operation, _ = m["operation"].(string)
			e.APIVersion, _ = m["apiVersion"].(string)
			e.Subresource, _ = m["subresource"].(string)
			if !f(e) {
				return
			}
		}
		return
	}
	o, ok := obj.(interface {
		GetManagedFields() []metav1.ManagedFieldsEntry
	})
	if !ok {
		return
	}
	for i, mfs := 0, o.GetManagedFields(); i < len(mfs); i++ {
		if !f(Of(&mfs[i])) {
			return
		}
	}
}

// Decode returns the fields of an entry. Fields that do not parse are an
// error, never a panic (malformed input must not take a reconciler down);
// no fields are an empty set.
func Decode(e *Entry) (s *fieldpath.Set, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, ErrMalformed
		}
	}()
	raw := e.Raw
	if e.Tree != nil {
		if raw, err = json.Marshal(e.Tree); err != nil {
			return nil, err
		}
	}
	s = &fieldpath.Set{}
	if len(raw) == 0 {
		return s, nil
	}
	if err := s.FromJSON(bytes.NewReader(raw)); err != nil {
		return nil, err
	}
	return s, nil
}

// Encode returns s as an entry's FieldsV1.
func Encode(s *fieldpath.Set) (*metav1.FieldsV1, error) {
	raw, err := s.ToJSON()
	if err != nil {
		return nil, err
	}
	return &metav1.FieldsV1{Raw: raw}, nil
}

// Union returns the union of a and b, either of which may be nil (no set).
func Union(a, b *fieldpath.Set) *fieldpath.Set {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	return a.Union(b)
}

// Select returns the members of s that keep selects.
func Select(s *fieldpath.Set, keep func(fieldpath.Path) bool) *fieldpath.Set {
	var paths []fieldpath.Path
	s.Iterate(func(p fieldpath.Path) {
		if keep(p) {
			paths = append(paths, p.Copy())
		}
	})
	return fieldpath.NewSet(paths...)
}

// Managers is a set of field manager names as one comparable string (the
// names sorted, joined by NUL), so that a [Query] is a comparable value.
type Managers string

// NewManagers returns the set of names; empty names are left out.
func NewManagers(names ...string) Managers {
	s := make([]string, 0, len(names))
	for _, n := range names {
		if n != "" {
			s = append(s, n)
		}
	}
	if len(s) == 0 {
		return ""
	}
	slices.Sort(s)
	s = slices.Compact(s)
	return Managers(strings.Join(s, "\x00"))
}

// Union returns the set of the names of m and of o.
func (m Managers) Union(o Managers) Managers {
	switch {
	case m == "":
		return o
	case o == "":
		return m
	}
	return NewManagers(append(strings.Split(string(m), "\x00"), strings.Split(string(o), "\x00")...)...)
}

// Has reports whether name is in the set, without allocating.
func (m Managers) Has(name string) bool {
	set := string(m)
	for set != "" {
		var n string
		n, set, _ = strings.Cut(set, "\x00")
		if n == name {
			return true
		}
	}
	return false
}

// Query is the one rule of which managedFields entries are ours. Its
// fields are the differences between the library's uses: compare reads
// the entries of one apiVersion, with OnlyApplied only our Apply entry;
// drift's takeover takes the replaced entries of the live object's
// apiVersion; diet keeps, and drift's refusal of foreign objects counts,
// every entry of ours whatever its version or operation. Only entries of
// the object itself count, never a subresource's (status).
type Query struct {
	// Owner is the operator's field manager: its entries are ours.
	Owner string
	// Replaces are the managers whose entries are ours too (compare.Replaced,
	// drift.Replaces, diet.Replaces): the controller the operator replaces.
	Replaces Managers
	// APIVersion, when set, is the only apiVersion of the entries that
	// count (entries of another version record paths of another schema).
	APIVersion string
	// ApplyOnly counts, of Owner's entries, only its Apply entry (what a
	// server-side apply can release); a replaced manager's entry counts by
	// its own operation still.
	ApplyOnly bool
	// AnyOperation counts entries of any operation; otherwise only Apply
	// and Update (the two the API server records).
	AnyOperation bool
}

// Own reports whether e is an entry of Owner's that counts.
func (q *Query) Own(e *Entry) bool {
	return e.Manager == q.Owner && q.main(e) && q.operation(e, q.ApplyOnly)
}

// Replaced reports whether e is an entry of a manager of Replaces (other
// than Owner) that counts.
func (q *Query) Replaced(e *Entry) bool {
	return q.Replaces != "" && e.Manager != q.Owner && q.main(e) && q.Replaces.Has(e.Manager) && q.operation(e, false)
}

// Ours reports whether e is Owner's or a replaced manager's entry that
// counts.
func (q *Query) Ours(e *Entry) bool {
	return q.Own(e) || q.Replaced(e)
}

// WroteBefore reports whether one of entries is ours. No entries at all
// says yes: an object read without managedFields (a cache that strips
// them, a fake client that does not record them) cannot tell who wrote it,
// and counts as written before.
func (q *Query) WroteBefore(entries []metav1.ManagedFieldsEntry) bool {
	if len(entries) == 0 {
		return true
	}
	for i := range entries {
		if e := Of(&entries[i]); q.Ours(&e) {
			return true
		}
	}
	return false
}

// main reports whether e is of the object itself, in the version asked.
func (q *Query) main(e *Entry) bool {
	return e.Subresource == "" && (q.APIVersion == "" || e.APIVersion == q.APIVersion)
}

// operation reports whether e's operation counts.
func (q *Query) operation(e *Entry, applyOnly bool) bool {
	switch {
	case e.Operation == string(metav1.ManagedFieldsOperationApply):
		return true
	case applyOnly:
		return false
	case e.Operation == string(metav1.ManagedFieldsOperationUpdate):
		return true
	}
	return q.AnyOperation
}
