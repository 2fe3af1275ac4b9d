// Package health says how the objects a reconciler created are doing, from
// their own status, so that their parent is Ready only when they are: a
// Website whose Deployment is still rolling out, or never will (a bad
// image, a quota, a progress deadline passed), is Reconciling or Stalled,
// not Ready, and kubectl wait --for=condition=Ready on it returns when the
// application serves.
//
// [Of] is a pure function: an object's [Health] is [Current], [InProgress]
// or [Failed], with a CamelCase reason and a message, from its metadata and
// status alone, with no request and no clock. [Summarize] picks the worst
// of several Healths, [OfAll] of several objects. [Health.ParentCondition]
// says a child's health in the parent's words, naming the child: reason
// DeploymentProgressDeadlineExceeded, message "Deployment shop/web: ...".
//
// # Never Ready on a stale status
//
// A status describes the generation its controller observed: an object
// whose status.observedGeneration is behind its metadata.generation is
// InProgress, whatever the rest says. That is not enough in a reconciler,
// which reads its children from an informer cache: right after it wrote a
// child, the cache may still hold the copy from before the write, whose
// status, complete for the old spec, says Current. The library has one rule
// for copies older than this process's own writes, package freshness's:
// read children through a client a freshness.Tracker guards (the manager's
// client, with ctrl.Options{NewClient: tracker.NewClient}, which
// reconcile.Loop then uses as it is; or tracker.Wrap(mgr.GetClient()) given
// to both the Loop and Sync). Such a read is never older than the write:
// it waits for the cache, and after the Tracker's MaxWait returns a
// freshness.StaleError, a quiet requeue, never a verdict on the old copy.
// drift.Writer's Ensure reads the child through its client and leaves in
// its argument what it read, or what its write returned: Of of that object
// is the child's health at the generation written.
//
// # In a reconciler
//
// With reconcile.Loop, Sync folds its children's health into its
// Progress:
//
//	out, err := drift.NewWriter(r.Client, FieldOwner).Ensure(ctx, dep, drift.Owner(site)) // r.Client is guarded
//	...
//	children, err := health.OfAll(dep, svc)
//	if err != nil {
//		return reconcile.Progress{}, err
//	}
//	return reconcile.Progress{Reason: "Deployed"}.WithChildren(children), nil
//
// An InProgress child makes the parent Reconciling, a Failed one Stalled,
// each naming the child; all Current leaves Sync's own Progress, Ready. A
// reconciler that sets its conditions with package status calls [Mark]
// where it called status.MarkReady.
//
// The parent must be reconciled again when a child's status changes: give
// Owns() the filter [Predicate], which passes a child's update when its
// health changed (or its spec, labels, annotations, owners, finalizers or
// deletion), and drops the rest: the status updates of a rollout that do
// not move it to another stage, and the children's resyncs. No requeue
// timer, no polling: the child's status update is the event.
//
//	ctrl.NewControllerManagedBy(mgr).
//		For(&v1.Website{}, builder.WithPredicates(reconcile.Predicate())).
//		Owns(&appsv1.Deployment{}, builder.WithPredicates(health.Predicate())).
//		Complete(loop)
//
// # Cost
//
// A message names what a child waits for ("waiting for 3 replicas to be
// updated"), never a count its controller moves at each step, so a
// parent's conditions change when a child moves to another stage of a
// rollout, not at every replica. BenchmarkChildStatusChange measures it on
// envtest at 1,000 parents, each with a Deployment of 3 replicas that goes
// through five status updates of a node drain (two of which change its
// health: LessAvailable, then Current again), the benchmark playing the
// Deployment controller:
//
//	Owns() filter       reconciles per    parent status writes per    status writes per
//	                    child change      child change                change of health
//	health.Predicate    0.40              0.40                        1.00
//	none                0.97              0.40                        1.00
//
// A child's status change costs at most one reconcile of its parent and
// at most one status write, none when the parent's conditions do not
// change; a converged parent with healthy children writes nothing on a
// resync. On a real rollout (kube-controller-manager and kwok, 3 replicas
// surged one at a time), the parent writes its status 4 times while the
// Deployment is stored 22 times.
//
// Of costs 0.05 to 0.5 µs and at most one allocation (a formatted
// message) on a typed Deployment; kstatus, which reads unstructured content
// only, costs 4.3 µs on unstructured content and 21 µs with the conversion
// of a typed object (BenchmarkOf).
//
// # The rules
//
// Every object: being deleted is InProgress (Terminating); a
// status.observedGeneration other than metadata.generation is InProgress
// (LatestGenerationNotObserved). For Deployments, StatefulSets, DaemonSets
// and ReplicaSets, whose controllers always record observedGeneration, a
// missing one counts too: their status describes no generation yet.
//
//	Deployment         Failed past its progress deadline; Current when every replica is
//	                   updated, ready and available and no old one remains (Progressing
//	                   NewReplicaSetAvailable, Available); InProgress otherwise, with the
//	                   ReplicaFailure condition's reason and message when Pods are refused
//	StatefulSet        Current when every replica is ready at the update revision (above the
//	                   partition, with one), or with the OnDelete strategy
//	DaemonSet          Current when every scheduled Pod is updated, available and ready
//	ReplicaSet         Current when every replica is labelled, available and ready
//	Job                Current when Complete; Failed when Failed or FailureTarget, with the
//	                   Job's reason (BackoffLimitExceeded, DeadlineExceeded); InProgress
//	                   while it runs, is suspended, or has not started
//	Pod                Current when Succeeded, or Running and Ready; Failed when Failed or
//	                   a container is in CrashLoopBackOff; InProgress otherwise, with the
//	                   scheduler's Unschedulable or a container's image pull error
//	PersistentVolumeClaim  Current when Bound, Failed when Lost
//	Service            Current, a LoadBalancer once it has an address
//	PodDisruptionBudget    Current once observed
//	CustomResourceDefinition  Current once Established; Failed when its names are refused
//	any other object   Stalled=True is Failed, Reconciling=True is InProgress, Ready is
//	                   Current when True (and observed at the current generation, when the
//	                   condition records one), InProgress when False or Unknown; a custom
//	                   resource with no status at all is InProgress (NoStatus); Current
//	                   otherwise (a ConfigMap, a Secret, a status of no convention)
//
// # kstatus
//
// The rules are kstatus's (sigs.k8s.io/cli-utils/pkg/kstatus/status, the
// library Flux, kpt, Helm 4 and Argo CD use), except where a parent needs
// another answer. kstatus calls a running Job Current, a failed Pod
// Current, a LoadBalancer Current once it has a cluster IP (which the API
// server assigns at creation), a Lost claim InProgress, a custom resource
// with no status yet Current, and a Ready condition observed at an older
// generation by its verdict; it calls an unschedulable Pod Failed 15
// seconds after its creation by the wall clock, so the same object changes
// verdict with time; and it does not check a missing observedGeneration.
// The oracle tests run kstatus on the same objects: a table of each case,
// and a fuzz test over every combination of the statuses the controllers
// write; they fail on any difference not listed here.
//
// The package does not import kstatus: its status package would add one
// package to an operator's build (it needs nothing else beyond
// controller-runtime's pkg/reconcile), but 34 modules to its module graph
// (kubectl, cli-runtime, kustomize and starlark, through cli-utils'
// go.mod: go list -m all of a module that imports it, 135 -> 169), and its
// answers differ where listed above, and it reads unstructured content
// only. This package adds 8 packages beyond pkg/reconcile (docs/weight.md
// in the module).
//
// The package does not fetch children (a reconciler has them from Ensure,
// or from its cache), write anything, or know a custom resource's own
// phases beyond the conventions.
package health
