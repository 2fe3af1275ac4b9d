package applyset

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/drift"
	"github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/health"
)

// Child is one desired member of a set: an object, what it needs first,
// and how its health is read.
type Child struct {
	// Object is the desired object, typed or unstructured, as for
	// drift.Writer.Ensure: it sets the fields the operator wants, its name,
	// and its namespace unless its kind is cluster-scoped. [Set.Apply]
	// adds the PartOfLabel and the parent as owner (a controller reference,
	// or an ownership link where one cannot reach), and leaves in it the
	// object as the server returned it.
	Object client.Object
	// DependsOn are other children of the same set this one needs first:
	// it is written only once each of them is unchanged by this Apply and
	// healthy by its own Health (a Secret present, a database Ready). Until
	// then it waits: no write, no error, and the parent's health says what
	// it waits for. Each must be the Object of another Child of the set, or
	// a copy naming the same kind, namespace and name.
	DependsOn []client.Object
	// Health reads the child's health from the object the server returned
	// (or the cache holds), for the parent's conditions and for the
	// children that depend on it. Nil: health.Of (never Current on a
	// cached copy older than the Set's own write when the Set's client is
	// guarded by a freshness.Tracker, as [New] says). [Exists] is Current
	// as soon as the object exists, for an object whose status says nothing
	// (a custom resource without one).
	Health HealthFunc
	// Options are options of the drift.Writer's call for this child
	// (drift.CompareOptions, drift.Adopt, drift.OptimisticLock). The Set
	// sets the owner itself: do not pass drift.Owner.
	Options []drift.Option
}

// HealthFunc says a child's health from the object; see [Child].Health.
// A Health of Status Current means ready. The Set fills in the Health's
// Kind, Namespace and Name when it leaves them empty.
type HealthFunc func(obj client.Object) (health.Health, error)

// Exists is a [HealthFunc] for which a child is Current as soon as it
// exists: for kinds whose status says nothing of readiness.
func Exists(client.Object) (health.Health, error) {
	return health.Health{Status: health.Current}, nil
}

// Ref names a child: its group, kind, namespace (empty when
// cluster-scoped) and name.
type Ref struct {
	schema.GroupKind
	Namespace, Name string
}

// String returns "Kind namespace/name", "Kind.group namespace/name", or
// without the namespace for a cluster-scoped child.
func (r Ref) String() string {
	name := r.Name
	if r.Namespace != "" {
		name = r.Namespace + "/" + name
	}
	return r.GroupKind.String() + " " + name
}

// object names the child in a message as health names objects: "Kind
// namespace/name", without the group.
func (r Ref) object() string {
	name := r.Name
	if r.Namespace != "" {
		name = r.Namespace + "/" + name
	}
	return r.Kind + " " + name
}

// compareRefs orders Refs by group, kind, namespace and name.
func compareRefs(a, b Ref) int {
	return cmpStrings(a.Group, b.Group, a.Kind, b.Kind, a.Namespace, b.Namespace, a.Name, b.Name)
}

func cmpStrings(pairs ...string) int {
	for i := 0; i+1 < len(pairs); i += 2 {
		if c := strings.Compare(pairs[i], pairs[i+1]); c != 0 {
			return c
		}
	}
	return 0
}

// ErrInvalidChildren is matched (errors.Is) by the error of an Apply whose
// children cannot make a set: a nil object, one without a name, two
// children of the same kind, namespace and name, a dependency on a child
// not in the set, a dependency cycle, a cluster-scoped child with a
// namespace or a namespaced one without. The error names the children; it
// is permanent, with reason [ReasonInvalidChildren], and is returned
// before any write.
var ErrInvalidChildren = errors.New("applyset: invalid children")

// ReasonInvalidChildren is the condition reason of an error wrapping
// [ErrInvalidChildren].
const ReasonInvalidChildren = "InvalidChildren"

// scope is what the API says of a kind's objects.
type scope uint8

const (
	scopeUnknown    scope = iota // the kind is not installed (yet)
	scopeNamespaced              // its objects live in a namespace
	scopeCluster                 // its objects are cluster-scoped
)

// node is a child as the ordering sees it.
type node struct {
	ref   Ref
	scope scope
	deps  []Ref // explicit dependencies
	// implied dependencies: the Namespace it lives in, the CRD of its kind,
	// when either is in the set (filled by order)
	implied []Ref
	// crdOf is the kind a CustomResourceDefinition child defines.
	crdOf schema.GroupKind
}

// invalid returns the error of children that cannot make a set.
func invalid(format string, args ...any) error {
	err := fmt.Errorf("%w: "+format, append([]any{ErrInvalidChildren}, args...)...)
	return errors.Permanent(errors.WithReason(err, ReasonInvalidChildren))
}

// isNil reports whether obj is nil or a nil pointer.
func isNil(obj client.Object) bool {
	if obj == nil {
		return true
	}
	v := reflect.ValueOf(obj)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// order checks the nodes and returns the order to write them in: each
// after the nodes it depends on (explicitly, or on the Namespace it lives
// in and the CustomResourceDefinition of its kind when they are in the
// set), and otherwise in Helm's install order of kinds, then by group,
// kind, namespace and name. It fills each node's implied dependencies. It
// is a pure function of the nodes: the fuzz test drives it.
func order(nodes []node) ([]int, error) {
	index := make(map[Ref]int, len(nodes))
	for i, n := range nodes {
		if n.ref.Name == "" {
			return nil, invalid("%s has no name", n.ref)
		}
		if j, dup := index[n.ref]; dup {
			return nil, invalid("children %d and %d are both %s", j, i, n.ref)
		}
		index[n.ref] = i
		switch {
		case n.scope == scopeCluster && n.ref.Namespace != "":
			return nil, invalid("%s is cluster-scoped and has namespace %q", n.ref, n.ref.Namespace)
		case n.scope == scopeNamespaced && n.ref.Namespace == "":
			return nil, invalid("%s is namespaced and has no namespace", n.ref)
		}
	}
	crds := map[schema.GroupKind]Ref{}
	for _, n := range nodes {
		if !n.crdOf.Empty() {
			crds[n.crdOf] = n.ref
		}
	}
	for i := range nodes {
		n := &nodes[i]
		n.implied = n.implied[:0]
		if n.ref.Namespace != "" {
			ns := Ref{GroupKind: schema.GroupKind{Kind: "Namespace"}, Name: n.ref.Namespace}
			if _, ok := index[ns]; ok {
				n.implied = append(n.implied, ns)
			}
		}
		if crd, ok := crds[n.ref.GroupKind]; ok {
			n.implied = append(n.implied, crd)
		}
		for _, d := range n.deps {
			if _, ok := index[d]; !ok {
				return nil, invalid("%s depends on %s, which is not in the set", n.ref, d)
			}
			if d == n.ref {
				return nil, invalid("%s depends on itself", n.ref)
			}
		}
	}
	// Kahn's algorithm; among the nodes ready at a step, the first by
	// install order goes first.
	waitingOn := make([]int, len(nodes))
	dependents := make([][]int, len(nodes))
	for i, n := range nodes {
		for _, d := range slices.Concat(n.deps, n.implied) {
			j := index[d]
			if slices.Contains(dependents[j], i) {
				continue // named twice
			}
			dependents[j] = append(dependents[j], i)
			waitingOn[i]++
		}
	}
	var ready []int
	for i := range nodes {
		if waitingOn[i] == 0 {
			ready = append(ready, i)
		}
	}
	out := make([]int, 0, len(nodes))
	for len(ready) > 0 {
		best := 0
		for k := 1; k < len(ready); k++ {
			if installBefore(nodes[ready[k]].ref, nodes[ready[best]].ref) {
				best = k
			}
		}
		i := ready[best]
		ready = slices.Delete(ready, best, best+1)
		out = append(out, i)
		for _, j := range dependents[i] {
			if waitingOn[j]--; waitingOn[j] == 0 {
				ready = append(ready, j)
			}
		}
	}
	if len(out) < len(nodes) {
		var cycle []string
		for i := range nodes {
			if waitingOn[i] > 0 {
				cycle = append(cycle, nodes[i].ref.String())
			}
		}
		slices.Sort(cycle)
		return nil, invalid("a dependency cycle among %s", strings.Join(cycle, ", "))
	}
	return out, nil
}

// installOrder is the order of kinds at install: Namespaces and
// CustomResourceDefinitions first, then Helm's order (its InstallOrder):
// what others need comes first. Kinds not listed come after these.
var installOrder = []string{
	"Namespace", "CustomResourceDefinition", "PriorityClass", "NetworkPolicy", "ResourceQuota", "LimitRange",
	"PodSecurityPolicy", "PodDisruptionBudget", "ServiceAccount", "Secret", "SecretList", "ConfigMap", "StorageClass",
	"PersistentVolume", "PersistentVolumeClaim", "ClusterRole",
	"ClusterRoleList", "ClusterRoleBinding", "ClusterRoleBindingList", "Role", "RoleList", "RoleBinding",
	"RoleBindingList", "Service", "DaemonSet", "Pod", "ReplicationController", "ReplicaSet", "Deployment",
	"HorizontalPodAutoscaler", "StatefulSet", "Job", "CronJob", "IngressClass", "Ingress", "APIService",
	"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration",
}

// kindRank is the place of a kind in installOrder, len(installOrder) for
// the others.
func kindRank(kind string) int {
	if i := slices.Index(installOrder, kind); i >= 0 {
		return i
	}
	return len(installOrder)
}

// installBefore reports whether a is installed before b: by installOrder,
// then by group, kind, namespace and name.
func installBefore(a, b Ref) bool {
	if ra, rb := kindRank(a.Kind), kindRank(b.Kind); ra != rb {
		return ra < rb
	}
	return compareRefs(a, b) < 0
}
