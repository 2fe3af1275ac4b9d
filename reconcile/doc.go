// Package reconcile is the composed loop: a [Loop] is a complete
// controller-runtime reconciler built from the other reconcilekit packages,
// around a Sync function that is only the reconciler's business logic and
// reports its [Progress].
//
// Every reconciler runs the same steps around its own logic: fetch the
// object (gone means done), run finalizers on deletion and keep them on the
// object otherwise, record the outcome as kstatus conditions and
// status.observedGeneration, write status only when it changed, record an
// event when the outcome is news, and turn errors into requeues. A Loop
// writes them once, with package finalizer, status, errors and requeue:
//
//	const fieldOwner = "website-controller"
//	deployments := drift.NewWriter(mgr.GetClient(), fieldOwner)
//	loop := reconcile.New(mgr.GetClient(), fieldOwner,
//		func(ctx context.Context, site *v1.Website) (reconcile.Progress, error) {
//			_, err := deployments.Ensure(ctx, deployment(site), drift.Owner(site))
//			return reconcile.Progress{Reason: "Deployed"}, err
//		})
//
// [Events] says which summary transitions become Kubernetes events: by
// default one Normal event when an object becomes Ready, and Warnings. The
// At example (examples/at) is written with a Loop.
//
// Every building block is useful without it: the Loop is for new
// reconcilers, and for existing ones once they use the pieces one by one
// (docs/embedding.md in the module takes a kubebuilder reconciler there a
// step at a time). Comparing and writing children is package drift's job.
//
// # One field owner
//
// [New] takes the field owner that names the operator, beside the client
// and Sync: the Loop sends its status writes (status.NewWriter) and
// finalizer patches (finalizer.NewWriter) under it, never under the
// client's default manager (the binary's name, "manager" in every
// kubebuilder project) nor a name shared by every user of the library. An
// empty one sends nothing: [Loop.Validate] reports it, wrapping
// [ErrInvalidLoop] and errors.ErrNoFieldOwner, and every reconcile returns
// that error, permanent. Sync writes children itself: pass the same name
// to drift (required there too), so that every write of the operator goes
// out under one field manager, and "fields we wrote before" means this
// operator's fields. Deletes (a cleanup's, ownership.Prune's) carry no
// field manager: a DELETE has none. An operator that replaces another
// controller lists that controller's field managers in drift.Replaces (see
// package drift, "Adopting what another controller wrote").
//
// # Conditions a project already has
//
// A Loop writes kstatus's Ready, Reconciling and Stalled. A project whose
// users, tests or dashboards read other types, such as the Available and
// Degraded that kubebuilder scaffolds, keeps them with [Mirror] instead of
// setting them by hand beside Ready:
//
//	loop.Mirror = reconcile.Mirror{Ready: "Available", Failing: "Degraded"}
//
// Available then says what Ready says, and Degraded is True exactly while
// the object is Stalled or a reported failure is on its conditions, in the
// same status write.
//
// # Event filters
//
// Every status write of a Loop is an update event of the object it
// reconciles. Give For() the filter [Predicate], so that the Loop wakes
// for what it acts on (creation, spec changes, deletion, a finalizer
// removed by someone else, periodic resyncs) and not for its own writes:
//
//	ctrl.NewControllerManagedBy(mgr).
//		For(&v1.Website{}, builder.WithPredicates(reconcile.Predicate())).
//		Owns(&appsv1.Deployment{}).
//		Complete(loop)
//
// Without it each status write costs one more reconcile, and a permanent
// error is reconciled, and logged, twice.
//
// # Suspend, and reconcile on request
//
// Users of an operator expect two controls of its objects, and a Loop
// honours both, with nothing to configure:
//
//   - Suspend (package suspend): the annotation reconcilekit.io/suspend:
//     "true", on any type, or a spec.suspend of the type's own (implement
//     suspend.Getter). A suspended object gets no Sync and no child writes:
//     what a user edits by hand stays as edited. Its conditions gain
//     Suspended=True and keep Ready, Reconciling and Stalled as the last
//     reconcile left them, and status.observedGeneration is not advanced,
//     so kstatus reads it as it was left and an edit made meanwhile as not
//     yet observed. Deleting it still runs its finalizers, and the first
//     reconcile after it resumes repairs whatever drifted.
//   - Reconcile on request (package request): a new token in Flux's
//     annotation reconcile.fluxcd.io/requestedAt runs one reconcile, which
//     passes [Predicate]; a type that implements request.Status records
//     the token in status.lastHandledReconcileAt, in the status write of
//     that reconcile's outcome, so a script waits for its token and reads
//     the outcome beside it.
//
// For example:
//
//	kubectl annotate website/w reconcilekit.io/suspend=true
//	kubectl annotate website/w reconcilekit.io/suspend-
//	kubectl annotate --overwrite website/w reconcile.fluxcd.io/requestedAt="$(date +%s)"
//
// Neither costs anything while nothing changes: a resync of a converged, a
// suspended or a requested object writes nothing.
//
// # What your API type must implement
//
// A Loop[T] reconciles a pointer to a struct (*v1.Website) that has a
// status subresource (+kubebuilder:subresource:status) and is an [Object]:
// a client.Object (the embedded ObjectMeta and controller-gen's
// DeepCopyObject make it one) and a [status.Setter], with GetConditions and
// SetConditions over a status.conditions list of metav1.Condition. With
// GetObservedGeneration and SetObservedGeneration over
// status.observedGeneration too ([status.ObservedGenerationSetter]), the
// Loop also keeps status.observedGeneration; without them only the
// conditions record the generation they observed. Package status needs the
// same methods. A type whose spec has a suspend field implements
// suspend.Getter (GetSuspend) so that the field suspends it, and one whose
// status records requests implements request.Status
// (GetLastHandledReconcileRequest, SetLastHandledReconcileRequest); both
// are optional. Paste them next to your type, and
// var _ reconcile.Object = (*v1.Website)(nil) in your controller, where the
// compiler then says what is missing:
//
//	// GetConditions returns the Website's status conditions.
//	func (w *Website) GetConditions() []metav1.Condition { return w.Status.Conditions }
//
//	// SetConditions replaces the Website's status conditions.
//	func (w *Website) SetConditions(c []metav1.Condition) { w.Status.Conditions = c }
//
//	// GetObservedGeneration returns status.observedGeneration.
//	func (w *Website) GetObservedGeneration() int64 { return w.Status.ObservedGeneration }
//
//	// SetObservedGeneration sets status.observedGeneration.
//	func (w *Website) SetObservedGeneration(g int64) { w.Status.ObservedGeneration = g }
//
// over these fields of WebsiteStatus:
//
//	// ObservedGeneration is the metadata.generation this status describes.
//	// +optional
//	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
//
//	// Conditions are Ready, Reconciling and Stalled (kstatus).
//	// +optional
//	// +listType=map
//	// +listMapKey=type
//	Conditions []metav1.Condition `json:"conditions,omitempty"`
package reconcile
