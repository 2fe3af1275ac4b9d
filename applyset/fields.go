package applyset

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"

	"github.com/reconcilekit/reconcilekit/internal/managedfields"
)

// What metadata.managedFields says of who set what, for two questions: did
// the Set write this object (its field owner owns the PartOfLabel), and did
// someone else change a drifted field (another manager owns it now). The
// entries are decoded, and which are ours decided, by the library's one
// reading of managedFields (internal/managedfields), as packages compare
// and drift read them; only on these rare paths (a prune candidate, a
// drifted child), never on a converged one.

// partOfPath is the PartOfLabel's path in managedFields.
var partOfPath = fieldpath.MakePathOrDie("metadata", "labels", PartOfLabel)

// wrote reports whether fieldOwner set obj's PartOfLabel: an entry of its
// own, of the main resource, owns the label. An object that copied the
// label from one of ours, by any other field manager, did not. A
// malformed entry owns nothing.
func wrote(obj client.Object, fieldOwner string) bool {
	q := managedfields.Query{Owner: fieldOwner, AnyOperation: true}
	found := false
	managedfields.Each(obj, nil, func(e managedfields.Entry) bool {
		if q.Own(&e) {
			s, err := managedfields.Decode(&e)
			found = err == nil && s.Has(partOfPath)
		}
		return !found
	})
	return found
}

// corrected returns the drifted paths of live that a field manager other
// than fieldOwner and those it replaces owns, at, above or beneath the
// path, and those managers, sorted: fields someone else changed since we
// last wrote them. A field we still own whose value differs is our own
// change of what we want, and a field nobody owns (removed by someone, or
// new in desired) cannot be told apart: neither is returned. Status entries
// do not count.
func corrected(live client.Object, paths []string, fieldOwner string, replaces []string) (fields, managers []string) {
	if live == nil || len(paths) == 0 {
		return nil, nil
	}
	parsed := make([][]segment, len(paths))
	for i, p := range paths {
		parsed[i] = parsePath(p)
	}
	q := managedfields.Query{Owner: fieldOwner, Replaces: managedfields.NewManagers(replaces...), AnyOperation: true}
	hit := make([]bool, len(paths))
	others := map[string]bool{}
	managedfields.Each(live, nil, func(e managedfields.Entry) bool {
		if q.Ours(&e) || e.Subresource == "status" {
			return true
		}
		s, err := managedfields.Decode(&e)
		if err != nil {
			return true
		}
		s.Iterate(func(m fieldpath.Path) {
			for j, p := range parsed {
				if related(p, m) {
					hit[j] = true
					others[e.Manager] = true
				}
			}
		})
		return true
	})
	for j, h := range hit {
		if h {
			fields = append(fields, paths[j])
		}
	}
	for m := range others {
		managers = append(managers, m)
	}
	slices.Sort(managers)
	return fields, managers
}

// segment is one step of a path as package compare writes it: a field, map
// key, list index or value (name), or a keyed list element (keys).
type segment struct {
	name string
	keys [][2]string
}

// parsePath splits "spec.template.spec.containers[name=web].image" or
// "metadata.labels[app.kubernetes.io/name]" into segments.
func parsePath(p string) []segment {
	var out []segment
	for len(p) > 0 {
		switch p[0] {
		case '.':
			p = p[1:]
		case '[':
			end := strings.IndexByte(p, ']')
			if end < 0 {
				end = len(p)
			}
			inner := p[1:end]
			p = p[min(end+1, len(p)):]
			if !strings.Contains(inner, "=") {
				out = append(out, segment{name: inner})
				continue
			}
			var seg segment
			for kv := range strings.SplitSeq(inner, ",") {
				k, v, _ := strings.Cut(kv, "=")
				seg.keys = append(seg.keys, [2]string{k, v})
			}
			out = append(out, seg)
		default:
			end := strings.IndexAny(p, ".[")
			if end < 0 {
				end = len(p)
			}
			out = append(out, segment{name: p[:end]})
			p = p[end:]
		}
	}
	return out
}

// related reports whether the path p and the managed path m name the same
// field, or one lies beneath the other.
func related(p []segment, m fieldpath.Path) bool {
	for i := range min(len(p), len(m)) {
		if !p[i].matches(m[i]) {
			return false
		}
	}
	return true
}

// matches reports whether the segment names the path element.
func (s segment) matches(pe fieldpath.PathElement) bool {
	switch {
	case pe.FieldName != nil:
		return s.keys == nil && *pe.FieldName == s.name
	case pe.Key != nil:
		if s.keys == nil {
			return false
		}
		for _, kv := range s.keys {
			i := slices.IndexFunc(*pe.Key, func(f value.Field) bool { return f.Name == kv[0] })
			if i < 0 || scalar((*pe.Key)[i].Value.Unstructured()) != kv[1] {
				return false
			}
		}
		return true
	case pe.Value != nil:
		return s.keys == nil && scalar((*pe.Value).Unstructured()) == s.name
	case pe.Index != nil:
		return s.keys == nil && strconv.Itoa(*pe.Index) == s.name
	}
	return false
}

// scalar writes a JSON scalar as package compare writes it in a path.
func scalar(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}
