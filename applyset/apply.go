package applyset

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/reconcilekit/reconcilekit/drift"
	"github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/health"
	"github.com/reconcilekit/reconcilekit/ownership"
)

// ErrForeignSet is matched (errors.Is) by the error of an Apply on a
// parent whose ToolingAnnotation names another tool: the set is that
// tool's, and the Set writes nothing. It is permanent, with reason
// [ReasonForeignSet].
var ErrForeignSet = errors.New("applyset: the parent's set belongs to another tool")

// ReasonForeignSet is the condition reason of an error wrapping
// [ErrForeignSet].
const ReasonForeignSet = "ForeignApplySet"

// ReasonDriftCorrected is the reason of the event a Set records on the
// parent when a patch puts back fields another field manager changed.
const ReasonDriftCorrected = "DriftCorrected"

// Apply makes parent's set of children what children says, and returns
// what it did (with [Plan], what it would do, doing nothing).
//
// First it checks children: a nil object, a child without a name, two
// children of one kind, namespace and name, a dependency on a child not in
// children, a dependency cycle, a cluster-scoped child with a namespace or a
// namespaced one without are an error wrapping [ErrInvalidChildren],
// permanent, returned before any write. Then, in this order:
//
//  1. It lists the members: the objects carrying the PartOfLabel of the
//     parent's ID, of the kinds the parent records and those of children
//     (from the cache, with a manager's client).
//  2. It records the set on the parent: IDLabel, ToolingAnnotation, and
//     in GroupKindsAnnotation and NamespacesAnnotation the kinds and
//     namespaces of the children and of the members still there, in one
//     merge patch, only when they changed. A kind leaves the record once
//     no member of it is left, so a tool that reads the record always
//     finds every member. A parent whose ToolingAnnotation names another
//     tool is an error wrapping [ErrForeignSet], and nothing is written.
//  3. It writes the children, each with drift.Writer.Ensure's rules (only
//     what drifted, fields it wrote before and no longer wants removed,
//     never somebody else's object, Replaces taken over, hot loops
//     stopped), dependencies first (Namespaces and CustomResourceDefinitions
//     in the set before what they hold or define, then Child.DependsOn),
//     otherwise by kind in Helm's install order. Each child gets the
//     PartOfLabel, and the parent as owner: a controller reference when one
//     can reach it (same namespace, or a cluster-scoped parent), an
//     ownership.SetLink link otherwise. A child waits (ActionWait: nothing
//     sent, no error) while a child it depends on was written by this Apply,
//     waits itself, failed, or is not healthy by its Child.Health, and while
//     its kind is not installed; [Set.EnqueueWaiting] wakes the parent when
//     a CustomResourceDefinition changes, the parent's own watches of its
//     children when they do. A patch that puts back fields another field
//     manager changed records a DriftCorrected event on the parent, naming
//     the child, the fields and the managers, and counts the child in
//     reconcilekit_drift_corrected_total.
//  4. When every write succeeded, it deletes the members that left the
//     set (ActionPrune), in the reverse of the install order, each with
//     its UID and resourceVersion as preconditions and the Set's
//     Propagation. Only a member the Set wrote is deleted: its field
//     owner owns the member's PartOfLabel in managedFields, and no other
//     owner controls or links it; any other object carrying the label
//     (someone copied it) is left alone and listed in Result.Kept. A
//     member already being deleted waits for it (ActionWait). A delete
//     the server refuses (an admission webhook, RBAC) is an error naming
//     the child ([*PruneError], retried with backoff); the member stays in
//     the record until it is gone.
//
// Errors of children (a write refused, a hot loop, somebody else's object)
// are joined, each naming its child; the other children are still written,
// and nothing is pruned. The Result says what was done up to then.
//
// Apply changes the children's objects (the label, the owner, and, once
// written, the object as the server returned it, as Ensure does) and, when
// it records the set, the parent's labels, annotations and resourceVersion.
// A converged set costs no request: the reads come from the cache, and
// nothing is written.
func (s *Set) Apply(ctx context.Context, parent client.Object, children []Child, opts ...Option) (Result, error) {
	o := newOptions(opts)
	if err := s.Validate(); err != nil {
		return Result{}, err
	}
	if isNil(parent) {
		return Result{}, errors.Permanent(fmt.Errorf("applyset: %w: nil parent", ErrInvalidSet))
	}
	pgvk, err := apiutil.GVKForObject(parent, s.client.Scheme())
	if err != nil {
		return Result{}, errors.Permanent(fmt.Errorf("applyset: the parent %T: %w", parent, err))
	}
	if parent.GetUID() == "" {
		return Result{}, errors.Permanent(fmt.Errorf("applyset: the parent %s %q has no UID: %w", pgvk.Kind, client.ObjectKeyFromObject(parent), ownership.ErrNoUID))
	}
	if tool, ok := parent.GetAnnotations()[ToolingAnnotation]; ok && toolName(tool) != toolName(s.tooling()) {
		err := fmt.Errorf("%w: %s %q is managed by %q, not %q: left as it is", ErrForeignSet, pgvk.Kind, client.ObjectKeyFromObject(parent), tool, s.tooling())
		return Result{}, errors.Permanent(errors.WithReason(err, ReasonForeignSet))
	}
	id := ID(pgvk.GroupKind(), parent.GetNamespace(), parent.GetName())
	p := pass{s: s, ctx: ctx, parent: parent, id: id, plan: o.plan}
	if err := p.resolve(children); err != nil {
		return Result{}, err
	}
	if err := p.inventory(); err != nil {
		return p.res, err
	}
	p.write()
	if len(p.errs) == 0 {
		p.prune()
	}
	if !p.plan {
		key := types.NamespacedName{Namespace: parent.GetNamespace(), Name: parent.GetName()}
		limit := s.MaxWaiting
		if limit == 0 {
			limit = DefaultMaxWaiting
		}
		s.waiting.set(key, p.waitGroups, limit)
	}
	if len(p.pruneErr.Failed) > 0 {
		p.errs = append(p.errs, &p.pruneErr)
	}
	return p.res, errors.Join(p.errs...)
}

// toolName is the name part of a "<name>/<version>" tooling value.
func toolName(tooling string) string {
	name, _, _ := strings.Cut(tooling, "/")
	return name
}

// pass is one Apply.
type pass struct {
	s      *Set
	ctx    context.Context
	parent client.Object
	id     string
	plan   bool

	children []Child
	nodes    []node
	gvks     []schema.GroupVersionKind
	order    []int
	index    map[Ref]int
	members  []member // found with the label, not desired, the Set's own
	// live holds, by child, the object the list of members found (the
	// reader's own: read only), nil for a child not yet labelled: what its
	// managedFields say before this pass writes it.
	live   []client.Object
	states []state

	res        Result
	errs       []error
	pruneErr   PruneError
	waitGroups []string
}

// state is what became of a child in this pass, for its dependents.
type state struct {
	written bool // created or patched by this pass
	waiting bool
	failed  bool
	health  health.Health
}

// resolve finds each child's kind, scope and dependencies, and the order
// to write them in.
func (p *pass) resolve(children []Child) error {
	p.children = children
	p.nodes = make([]node, len(children))
	p.gvks = make([]schema.GroupVersionKind, len(children))
	scopes := map[schema.GroupVersionKind]scope{}
	scheme := p.s.client.Scheme()
	refOf := func(obj client.Object, what string) (Ref, schema.GroupVersionKind, error) {
		if isNil(obj) {
			return Ref{}, schema.GroupVersionKind{}, invalid("%s is nil", what)
		}
		gvk, err := apiutil.GVKForObject(obj, scheme)
		if err != nil {
			return Ref{}, gvk, invalid("%s (%T %q): %v", what, obj, obj.GetName(), err)
		}
		return Ref{GroupKind: gvk.GroupKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()}, gvk, nil
	}
	for i, ch := range children {
		ref, gvk, err := refOf(ch.Object, fmt.Sprintf("child %d", i))
		if err != nil {
			return err
		}
		sc, seen := scopes[gvk]
		if !seen {
			if sc, err = p.s.scopeOf(gvk); err != nil {
				return err
			}
			scopes[gvk] = sc
		}
		n := node{ref: ref, scope: sc}
		for j, d := range ch.DependsOn {
			dref, _, err := refOf(d, fmt.Sprintf("dependency %d of %s", j, ref))
			if err != nil {
				return err
			}
			n.deps = append(n.deps, dref)
		}
		if ref.GroupKind == crdKind {
			n.crdOf = definedKind(ch.Object)
		}
		p.nodes[i], p.gvks[i] = n, gvk
	}
	ord, err := order(p.nodes)
	if err != nil {
		return err
	}
	p.order = ord
	p.index = make(map[Ref]int, len(p.nodes))
	for i, n := range p.nodes {
		p.index[n.ref] = i
	}
	p.states = make([]state, len(p.nodes))
	p.live = make([]client.Object, len(p.nodes))
	return nil
}

var crdKind = schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}

// definedKind returns the kind a CustomResourceDefinition defines
// (spec.group, spec.names.kind), empty when it says none.
func definedKind(crd client.Object) schema.GroupKind {
	var content map[string]any
	if u, ok := crd.(*unstructured.Unstructured); ok {
		content = u.Object
	} else if m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd); err == nil {
		content = m
	}
	group, _, _ := unstructured.NestedString(content, "spec", "group")
	kind, _, _ := unstructured.NestedString(content, "spec", "names", "kind")
	return schema.GroupKind{Group: group, Kind: kind}
}

// scopeOf returns whether gvk's objects are namespaced, unknown when the
// kind is not installed.
func (s *Set) scopeOf(gvk schema.GroupVersionKind) (scope, error) {
	mapper := s.client.RESTMapper()
	if mapper == nil {
		return scopeUnknown, errors.Permanent(fmt.Errorf("applyset: %w: the client has no RESTMapper", ErrInvalidSet))
	}
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	switch {
	case notInstalled(err):
		return scopeUnknown, nil
	case err != nil:
		return scopeUnknown, fmt.Errorf("applyset: the scope of %s: %w", gvk.GroupKind(), err)
	case mapping.Scope.Name() == meta.RESTScopeNameNamespace:
		return scopeNamespaced, nil
	}
	return scopeCluster, nil
}

// inventory lists the members and records the set on the parent.
func (p *pass) inventory() error {
	kinds := map[schema.GroupKind]bool{}
	var desired []Ref
	for _, n := range p.nodes {
		if n.scope != scopeUnknown {
			kinds[n.ref.GroupKind] = true
			desired = append(desired, n.ref)
		}
	}
	for _, k := range recorded(p.parent).kinds {
		kinds[schema.ParseGroupKind(k)] = true
	}
	list := make([]schema.GroupKind, 0, len(kinds))
	for gk := range kinds {
		list = append(list, gk)
	}
	slices.SortFunc(list, func(a, b schema.GroupKind) int { return cmpStrings(a.Group, b.Group, a.Kind, b.Kind) })
	found, err := p.s.listMembers(p.ctx, p.id, list)
	if err != nil {
		return err
	}
	record := desired
	for _, m := range found {
		if i, want := p.index[m.ref]; want {
			p.live[i] = m.obj
			continue
		}
		if !p.s.ours(m, p.parent) {
			p.res.Kept = append(p.res.Kept, m.ref)
			continue
		}
		p.members = append(p.members, m)
		record = append(record, m.ref)
	}
	patch, paths, err := p.s.parentPatch(p.parent, p.id, inventoryOf(record, p.parent.GetNamespace()))
	if err != nil {
		return err
	}
	p.res.Parent = ActionUnchanged
	if len(paths) == 0 {
		return nil
	}
	p.res.Parent, p.res.ParentPaths = ActionPatch, paths
	if p.plan {
		return nil
	}
	return p.s.writeParent(p.ctx, p.parent, patch)
}

// write writes the children in order.
func (p *pass) write() {
	for _, i := range p.order {
		p.res.Children = append(p.res.Children, p.writeChild(i))
	}
}

// writeChild writes child i, or says why it waits.
func (p *pass) writeChild(i int) Outcome {
	n, ch, st := p.nodes[i], p.children[i], &p.states[i]
	out := Outcome{Ref: n.ref}
	if n.scope == scopeUnknown {
		st.waiting = true
		p.waitGroups = append(p.waitGroups, n.ref.Group)
		out.Action, out.Health = ActionWait, notInstalledHealth(n.ref, p.gvks[i])
		return out
	}
	if h, waits := p.blocked(n); waits {
		st.waiting = true
		out.Action, out.Health = ActionWait, h
		return out
	}
	obj := ch.Object
	opts, err := p.own(n, obj)
	if err != nil {
		return p.fail(st, out, err)
	}
	opts = append(opts, ch.Options...)
	live := p.live[i]
	w := p.s.drift()
	var d drift.Outcome
	if p.plan {
		d, err = w.Plan(p.ctx, obj, opts...)
	} else {
		d, err = w.Ensure(p.ctx, obj, opts...)
	}
	if err != nil {
		return p.fail(st, out, err)
	}
	switch d.Operation {
	case drift.OperationCreated:
		out.Action, st.written = ActionCreate, true
	case drift.OperationUpdated:
		out.Action, st.written = ActionPatch, true
		out.Paths = d.Drift.Paths
		var managers []string
		out.Corrected, managers = corrected(live, d.Drift.Paths, p.s.fieldOwner, p.s.Replaces)
		if len(out.Corrected) > 0 && !p.plan {
			p.s.driftCorrected(p.parent, obj, n.ref, out.Corrected, managers)
		}
	default:
		out.Action = ActionUnchanged
	}
	h, err := healthOf(ch, n.ref, obj)
	if err != nil {
		return p.fail(st, out, err)
	}
	st.health, out.Health = h, h
	return out
}

// fail records a child's error: the child counts as unchanged and
// unhealthy, its dependents wait, and nothing is pruned.
func (p *pass) fail(st *state, out Outcome, err error) Outcome {
	st.failed = true
	p.errs = append(p.errs, fmt.Errorf("applyset: %s: %w", out.Ref, err))
	out.Action = ActionUnchanged
	out.Health = health.Health{Status: health.InProgress, Reason: errors.Reason(err), Message: errors.Message(err),
		Kind: out.Ref.Kind, Namespace: out.Ref.Namespace, Name: out.Ref.Name}
	return out
}

// blocked reports whether n waits for a child it depends on, and the
// health that says so.
func (p *pass) blocked(n node) (health.Health, bool) {
	for _, dep := range slices.Concat(n.implied, n.deps) {
		st := p.states[p.index[dep]]
		var why string
		switch {
		case st.failed:
			why = "its write failed"
		case st.waiting:
			why = "it waits too"
		case st.written:
			why = "written by this reconcile, not yet observed"
		case st.health.Status != health.Current:
			why = string(st.health.Status)
			if st.health.Reason != "" {
				why = st.health.Reason
			}
			if st.health.Message != "" {
				why += ": " + st.health.Message
			}
		default:
			continue
		}
		return health.Health{Status: health.InProgress, Reason: "WaitingFor" + dep.Kind,
			Message: "waits for " + dep.object() + ": " + why,
			Kind:    n.ref.Kind, Namespace: n.ref.Namespace, Name: n.ref.Name}, true
	}
	return health.Health{}, false
}

// notInstalledHealth says that ref waits for its kind to be installed.
func notInstalledHealth(ref Ref, gvk schema.GroupVersionKind) health.Health {
	return health.Health{Status: health.InProgress, Reason: "KindNotInstalled",
		Message: fmt.Sprintf("waits for kind %s (version %s) to be installed: the API server serves none", ref.GroupKind, gvk.Version),
		Kind:    ref.Kind, Namespace: ref.Namespace, Name: ref.Name}
}

// own stamps obj with the set's label and returns the drift options that
// make the parent its owner: a controller reference when one can reach
// obj, an ownership link otherwise.
func (p *pass) own(n node, obj client.Object) ([]drift.Option, error) {
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[PartOfLabel] = p.id
	obj.SetLabels(labels)
	opts := []drift.Option{drift.Replaces(p.s.Replaces...)}
	pns := p.parent.GetNamespace()
	if pns == "" || pns == n.ref.Namespace {
		return append(opts, drift.Owner(p.parent)), nil
	}
	if err := ownership.SetLink(p.parent, obj, p.s.client.Scheme()); err != nil {
		return nil, err
	}
	return opts, nil
}

// healthOf says a child's health from obj.
func healthOf(ch Child, ref Ref, obj client.Object) (health.Health, error) {
	fn := ch.Health
	if fn == nil {
		fn = health.Of
	}
	h, err := fn(obj)
	if err != nil {
		return health.Health{}, err
	}
	if h.Kind == "" && h.Namespace == "" && h.Name == "" {
		h.Kind, h.Namespace, h.Name = ref.Kind, ref.Namespace, ref.Name
	}
	return h, nil
}

// driftCorrected tells that a patch put back what other field managers
// changed: an event on the parent, and the metric.
func (s *Set) driftCorrected(parent, child client.Object, ref Ref, fields, managers []string) {
	driftCorrectedTotal.WithLabelValues(ref.Kind).Inc()
	if s.Recorder != nil {
		s.Recorder.Eventf(parent, child, corev1.EventTypeWarning, ReasonDriftCorrected, "Patch",
			"%s: %s changed by %s; put back", ref.object(), strings.Join(fields, ", "), strings.Join(managers, ", "))
	}
}

// kindOf names obj's kind for a message.
func kindOf(obj client.Object, c client.Client) string {
	if gvk, err := apiutil.GVKForObject(obj, c.Scheme()); err == nil {
		return gvk.Kind
	}
	return fmt.Sprintf("%T", obj)
}

// prune deletes the members that left the set, in the reverse of the
// install order.
func (p *pass) prune() {
	members := slices.Clone(p.members)
	slices.SortFunc(members, func(a, b member) int {
		switch {
		case installBefore(a.ref, b.ref):
			return 1
		case installBefore(b.ref, a.ref):
			return -1
		}
		return 0
	})
	for _, m := range members {
		out := Outcome{Ref: m.ref}
		h, err := health.Of(m.obj)
		if err != nil {
			h = health.Health{Status: health.InProgress, Reason: "Unreadable", Message: errors.Message(err)}
		}
		h.Kind, h.Namespace, h.Name = m.ref.Kind, m.ref.Namespace, m.ref.Name
		if m.obj.GetDeletionTimestamp() != nil {
			msg := "left the set; being deleted"
			if f := m.obj.GetFinalizers(); len(f) > 0 {
				msg += ", waiting for finalizers " + strings.Join(f, ", ")
			}
			out.Action = ActionWait
			out.Health = health.Health{Status: health.InProgress, Reason: "Terminating", Message: msg,
				Kind: m.ref.Kind, Namespace: m.ref.Namespace, Name: m.ref.Name}
			p.res.Children = append(p.res.Children, out)
			continue
		}
		out.Action, out.Health = ActionPrune, h
		if !p.plan {
			if err := p.s.delete(p.ctx, m.obj); err != nil {
				p.pruneErr.Failed = append(p.pruneErr.Failed, PruneFailure{Ref: m.ref, Err: err})
				out.Health = health.Health{Status: health.InProgress, Reason: "PruneFailed", Message: errors.Message(err),
					Kind: m.ref.Kind, Namespace: m.ref.Namespace, Name: m.ref.Name}
			} else {
				log.FromContext(p.ctx).V(1).Info("pruned", "child", m.ref.String())
			}
		}
		p.res.Children = append(p.res.Children, out)
	}
}

// delete deletes a member as it was read: the same UID and
// resourceVersion, or nothing. One already gone is deleted.
func (s *Set) delete(ctx context.Context, obj client.Object) error {
	uid, rv := obj.GetUID(), obj.GetResourceVersion()
	victim := obj.DeepCopyObject().(client.Object)
	err := s.client.Delete(ctx, victim, client.PropagationPolicy(s.propagation()),
		client.Preconditions{UID: &uid, ResourceVersion: &rv})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
