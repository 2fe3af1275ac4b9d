package ranges

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Support is what an API server does with a ShardSelector, for one kind.
// Its values complete the sentence "ShardSelector is ... by the server".
type Support string

const (
	// Honoured: the server lists and watches only the objects in the
	// selected ranges (kube-apiserver 1.36 and later with the feature gate
	// ShardedListAndWatch on).
	Honoured Support = "honoured"
	// Ignored: the server returns every object, as if no selector had been
	// sent (the gate is off, or the server predates it). Filter in the
	// process with [Predicate].
	Ignored Support = "ignored"
	// Refused: the server fails a list that carries a selector and serves
	// the same list without one. Do not send a selector; filter in the
	// process with [Predicate].
	Refused Support = "refused"
)

// Detection is the result of [Detect]: what the server does, and the
// evidence, in one sentence fit for a log line or an event.
type Detection struct {
	// Support is what the server does with a ShardSelector.
	Support Support
	// Reason is the evidence: what was asked, and what the server did.
	Reason string
}

// String returns "honoured: " (or "ignored: ", "refused: ") and the reason.
func (d Detection) String() string {
	return string(d.Support) + ": " + d.Reason
}

// probe is a range the server should find (nearly) empty: the one hash 0.
var probe = Range{Start: 0, Last: 0}

// invalidSelector is a selector a server that reads selectors refuses: its
// range is empty (start equals end).
const invalidSelector = "shardRange(object.metadata.uid, '0x0000000000000001', '0x0000000000000001')"

// Detect finds out whether the API server honours ShardSelector for the
// kind of list (a typed list such as &corev1.ConfigMapList{}, or an
// unstructured or metadata list with its GroupVersionKind set), by asking
// it; opts (client.InNamespace, say) narrow the lists it sends, for a
// controller whose RBAC covers only some namespaces. list itself is left
// untouched.
//
// c must read from the API server, not from an informer cache: give it a
// manager's GetAPIReader(), never its GetClient().
//
// Detect sends at most three lists of at most one object each:
//   - a list with the selector of a range the server should find empty (it
//     holds the one hash 0). If the server echoes the selector in the
//     list's metadata (listMeta.shardInfo, which built-in kinds carry and
//     custom resources do not), it is Honoured; if the list fails while the
//     same list without the selector succeeds, it is Refused; if it
//     returns an object outside the range, it is Ignored.
//   - when that list is empty and carries no echo (custom resources, or no
//     object of the kind exists): a list with a selector of an empty range,
//     which a server that reads selectors fails ("shard range start ...
//     must be less than end ...": Honoured) and one that ignores them
//     serves (Ignored).
//
// An error means the question could not be asked (no such kind, no right
// to list it, no server).
//
// The result is also the gauge reconcilekit_shard_selector_support, by the
// list's Go type.
func Detect(ctx context.Context, c client.Reader, list client.ObjectList, opts ...client.ListOption) (d Detection, err error) {
	defer func() {
		if err == nil {
			kind := fmt.Sprintf("%T", list)
			for _, s := range []Support{Honoured, Ignored, Refused} {
				v := 0.0
				if s == d.Support {
					v = 1
				}
				selectorSupport.WithLabelValues(kind, string(s)).Set(v)
			}
		}
	}()
	sel := probe.Selector()
	got := list.DeepCopyObject().(client.ObjectList)
	err = c.List(ctx, got, append(slices.Clone(opts), client.Limit(1), rawSelector(sel))...)
	if err != nil {
		plain := list.DeepCopyObject().(client.ObjectList)
		if perr := c.List(ctx, plain, append(slices.Clone(opts), client.Limit(1))...); perr != nil {
			return Detection{}, fmt.Errorf("shard: detecting ShardSelector support: %w", perr)
		}
		return Detection{Refused, fmt.Sprintf("a list with ShardSelector %q fails (%v), the same list without it succeeds", sel, err)}, nil
	}
	if echo := shardInfo(got); echo != "" {
		return Detection{Honoured, fmt.Sprintf("the server applied ShardSelector %q: it echoed it in listMeta.shardInfo", echo)}, nil
	}
	items, err := meta.ExtractList(got)
	if err != nil {
		return Detection{}, fmt.Errorf("shard: detecting ShardSelector support: %w", err)
	}
	for _, item := range items {
		obj, ok := item.(client.Object)
		if !ok || probe.Contains(obj) {
			continue
		}
		return Detection{Ignored, fmt.Sprintf("asked for the objects whose UID hashes into %s, the server returned %s, whose UID hashes to %s",
			probe, client.ObjectKeyFromObject(obj), hex(Hash(obj)))}, nil
	}
	bad := list.DeepCopyObject().(client.ObjectList)
	err = c.List(ctx, bad, append(slices.Clone(opts), client.Limit(1), rawSelector(invalidSelector))...)
	switch {
	case err == nil:
		return Detection{Ignored, fmt.Sprintf("the server served a list with the invalid ShardSelector %q (an empty range), so it does not read selectors", invalidSelector)}, nil
	case strings.Contains(err.Error(), "shard"):
		return Detection{Honoured, fmt.Sprintf("the server applied ShardSelector %q (no object in the range), and it validates selectors: it refused an empty range with %q", sel, err.Error())}, nil
	default:
		return Detection{}, fmt.Errorf("shard: detecting ShardSelector support: a list with the invalid ShardSelector %q failed for another reason: %w", invalidSelector, err)
	}
}

// rawSelector is a ListOption that sends a selector as written.
type rawSelector string

func (s rawSelector) ApplyToList(opts *client.ListOptions) { setSelector(opts, string(s)) }

// shardInfo returns the selector a list response echoes in
// metadata.shardInfo, or "".
func shardInfo(list client.ObjectList) string {
	if l, ok := list.(interface{ GetShardInfo() *metav1.ShardInfo }); ok {
		if si := l.GetShardInfo(); si != nil {
			return si.Selector
		}
		return ""
	}
	if u, ok := list.(*unstructured.UnstructuredList); ok {
		s, _, _ := unstructured.NestedString(u.Object, "metadata", "shardInfo", "selector")
		return s
	}
	return ""
}
