// Package controller is the SecretMirror operator's reconciler: it copies a
// Secret of the mirror's namespace into other namespaces and keeps the
// copies in step. It is issue 36's new user's operator, written with
// reconcilekit's public packages:
//
//   - track reads the source Secret: its creation, each change of its data
//     and its deletion wake the mirror through the Secrets' watch, which
//     holds their metadata only; a missing source is Stalled, reason
//     ReferenceNotFound, with no retry loop.
//   - ownership links each copy to its mirror (owner references cannot
//     cross namespaces), and prunes the copies of namespaces no longer
//     listed; a finalizer deletes them all with the mirror.
//   - a drift.Writer's Ensure writes a copy only when it drifted, and never
//     over a Secret somebody else made under the same name: that namespace
//     is reported (Stalled, ForeignObject, the Secret named), the Secret
//     is left as it is and tracked, so its deletion wakes the mirror.
//   - reconcile.Loop runs the fetch, finalizer, status and requeue steps.
package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/drift"
	"github.com/reconcilekit/reconcilekit/errors"
	mirrorv1 "github.com/reconcilekit/reconcilekit/examples/secretmirror/api/v1alpha1"
	"github.com/reconcilekit/reconcilekit/finalizer"
	"github.com/reconcilekit/reconcilekit/ownership"
	"github.com/reconcilekit/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcilekit/track"
)

// Name is the controller's name: its field manager and event source.
const Name = "secretmirror-controller"

// CopiesFinalizer deletes a mirror's copies before the mirror goes away:
// the garbage collector ignores links.
const CopiesFinalizer = "mirror.reconcilekit.dev/copies"

// Reasons of the mirror's summary conditions.
const (
	ReasonMirrored    = "Mirrored"
	ReasonInvalidSpec = "InvalidSpec"
)

// ManagerOptions returns opts with what the operator needs of its manager's
// cache and client: Secrets are watched metadata-only (the controller
// watches them with WatchesMetadata) and cached without managedFields
// (track.CacheOptions), so the process does not hold the data of every
// Secret of the cluster; and the client reads Secrets from the API server,
// so that a drift.Writer reads a copy with its managedFields (whose entries
// say whether a Secret is ours) without starting an informer that caches
// every Secret.
func ManagerOptions(opts ctrl.Options) (ctrl.Options, error) {
	var err error
	if opts.Cache, err = track.CacheOptions(opts.Cache, &corev1.Secret{}); err != nil {
		return opts, err
	}
	if opts.Client.Cache == nil {
		opts.Client.Cache = &client.CacheOptions{}
	}
	opts.Client.Cache.DisableFor = append(opts.Client.Cache.DisableFor, &corev1.Secret{})
	return opts, nil
}

// Reconciler copies the Secrets of SecretMirrors. Build it with [New].
type Reconciler struct {
	client client.Client
	scheme *runtime.Scheme
	refs   *track.Tracker
	copies *drift.Writer
}

// New returns the mirrors' reconcile.Loop, and its Tracker, whose handler
// the Secrets' watch needs (SetupWithManager wires both). c reads and
// writes SecretMirrors and Secrets, reader reads source Secrets (the
// manager's API reader).
func New(c client.Client, reader client.Reader, scheme *runtime.Scheme) (*reconcile.Loop[*mirrorv1.SecretMirror], *track.Tracker, error) {
	r := &Reconciler{client: c, scheme: scheme, refs: track.New(reader, scheme), copies: drift.NewWriter(c, Name)}
	fin := &finalizer.Registry[*mirrorv1.SecretMirror]{}
	if err := fin.Register(CopiesFinalizer, finalizer.Func[*mirrorv1.SecretMirror](r.deleteCopies)); err != nil {
		return nil, nil, err
	}
	loop := reconcile.New(c, Name, r.sync)
	loop.APIReader = reader
	loop.Finalizers = fin
	loop.References = r.refs
	return loop, r.refs, loop.Validate()
}

// The permissions the controller needs.
//
// +kubebuilder:rbac:groups=mirror.reconcilekit.dev,resources=secretmirrors,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=mirror.reconcilekit.dev,resources=secretmirrors/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=mirror.reconcilekit.dev,resources=secretmirrors/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// SetupWithManager registers the controller with mgr, whose options went
// through [ManagerOptions]: Controller's builder, completed with the Loop.
func SetupWithManager(mgr ctrl.Manager) error {
	b, loop, err := Controller(mgr)
	if err != nil {
		return err
	}
	return b.Complete(loop)
}

// Controller returns the controller's builder, to be completed with the
// returned Loop (or a wrapper of it, as a test counting reconciles does).
// Secrets are watched twice, metadata-only, on one informer: the Tracker's
// handler wakes the mirrors that read a Secret (a source, or a Secret in
// the way of a copy), and the links wake a copy's mirror when someone edits
// or deletes the copy.
func Controller(mgr ctrl.Manager) (*builder.Builder, *reconcile.Loop[*mirrorv1.SecretMirror], error) {
	loop, refs, err := New(mgr.GetClient(), mgr.GetAPIReader(), mgr.GetScheme())
	if err != nil {
		return nil, nil, err
	}
	loop.Recorder = mgr.GetEventRecorder(Name)
	mirrors := mirrorv1.GroupVersion.WithKind("SecretMirror").GroupKind()
	b := ctrl.NewControllerManagedBy(mgr).
		For(&mirrorv1.SecretMirror{}, builder.WithPredicates(reconcile.Predicate())).
		WatchesMetadata(&corev1.Secret{}, refs.Enqueue(&corev1.Secret{})).
		WatchesMetadata(&corev1.Secret{}, ownership.EnqueueLinkedOwner(mirrors)).
		Named("secretmirror")
	return b, loop, refs.Validate()
}

// sync makes a copy of the source in every target namespace and removes
// the copies of namespaces no longer listed.
func (r *Reconciler) sync(ctx context.Context, m *mirrorv1.SecretMirror) (reconcile.Progress, error) {
	if slices.Contains(m.Spec.TargetNamespaces, m.Namespace) {
		return reconcile.Progress{}, errors.Permanent(errors.WithReason(
			fmt.Errorf("spec.targetNamespaces lists the mirror's own namespace %q, where the source is", m.Namespace), ReasonInvalidSpec))
	}
	reads := r.refs.For(client.ObjectKeyFromObject(m))
	defer reads.Done()
	var source corev1.Secret
	if err := reads.Get(ctx, types.NamespacedName{Namespace: m.Namespace, Name: m.Spec.Source}, &source); err != nil {
		// Missing: Stalled, ReferenceNotFound, until its creation wakes us.
		return reconcile.Progress{}, err
	}

	var copies []string
	var errs []error
	for _, ns := range sorted(m.Spec.TargetNamespaces) {
		desired := copyOf(&source, ns)
		if err := ownership.SetLink(m, desired, r.scheme); err != nil {
			return reconcile.Progress{}, err
		}
		_, err := r.copies.Ensure(ctx, desired)
		var foreign *drift.ForeignError
		switch {
		case errors.As(err, &foreign):
			// Somebody else's Secret: left as it is, and watched, so
			// that its deletion (or its owner letting go) wakes us.
			if terr := reads.Track(desired); terr != nil {
				return reconcile.Progress{}, terr
			}
			errs = append(errs, err)
		case err != nil:
			errs = append(errs, fmt.Errorf("copy into %q: %w", ns, err))
			if slices.Contains(m.Status.Copies, ns) {
				copies = append(copies, ns)
			}
		default:
			copies = append(copies, ns)
		}
	}
	kept, err := r.prune(ctx, m, func(ns string) bool { return slices.Contains(m.Spec.TargetNamespaces, ns) })
	if err != nil {
		errs = append(errs, err)
	}
	m.Status.Copies = sorted(append(copies, kept...))
	if err := errors.Join(errs...); err != nil {
		return reconcile.Progress{}, err
	}
	return reconcile.Progress{Reason: ReasonMirrored,
		Message: fmt.Sprintf("%s copied into %s", m.Spec.Source, strings.Join(m.Status.Copies, ", "))}, nil
}

// prune deletes the copies of the namespaces of status.copies that want
// rejects, and returns those it could not delete.
func (r *Reconciler) prune(ctx context.Context, m *mirrorv1.SecretMirror, want func(ns string) bool) ([]string, error) {
	list := &corev1.SecretList{}
	for _, ns := range m.Status.Copies {
		if want(ns) {
			continue
		}
		var s corev1.Secret
		switch err := r.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: m.Spec.Source}, &s); {
		case apierrors.IsNotFound(err):
		case err != nil:
			return []string{ns}, err
		default:
			list.Items = append(list.Items, s)
		}
	}
	if _, err := ownership.PruneListed(ctx, r.client, m, list, func(client.Object) bool { return false }); err != nil {
		kept := make([]string, 0, len(list.Items))
		for _, s := range list.Items {
			kept = append(kept, s.Namespace)
		}
		return kept, fmt.Errorf("remove copies: %w", err)
	}
	return nil, nil
}

// deleteCopies removes every copy of a mirror being deleted.
func (r *Reconciler) deleteCopies(ctx context.Context, m *mirrorv1.SecretMirror) error {
	m = m.DeepCopy()
	m.Status.Copies = sorted(append(slices.Clone(m.Status.Copies), m.Spec.TargetNamespaces...))
	_, err := r.prune(ctx, m, func(string) bool { return false })
	return err
}

// copyOf returns the desired copy of source in ns.
func copyOf(source *corev1.Secret, ns string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: source.Name},
		Type:       source.Type,
		Data:       maps.Clone(source.Data),
	}
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}
