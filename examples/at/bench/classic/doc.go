// Package classic is the yardstick for reconcilekit's At operator: the At
// controller written the classic way, as Programming Kubernetes' cnat
// operator and most kubebuilder tutorials write it, brought up to date with
// controller-runtime v0.25 but otherwise unchanged in spirit.
//
// [Reconciler] reads the At, switches on status.phase, creates the Pod with
// r.Create when a Get says it is missing, compares the status it computed
// with the one it read (reflect.DeepEqual) and writes it with
// Status().Update when they differ, and returns every error as it is so
// that the workqueue retries it with backoff. It has no finalizer (it
// relies on the Pod's owner reference and the garbage collector), no
// conditions and no observedGeneration, and it watches its own status
// writes. It uses the same CRD and Go types as the library-based
// controller ([github.com/reconcilekit/reconcilekit/examples/at/api/v1alpha1])
// and imports nothing from reconcilekit.
//
// It exists only to be measured against: the benchmark in package bench
// runs it as a process of its own (command classic/cmd/classic, with the At
// operator's flags and manager options) beside the At operator's binary. It
// is not an example to copy.
package classic
