// Package handwritten is the like-for-like yardstick for reconcilekit's At
// operator: the same At, recording exactly what the library's At records,
// written by hand on controller-runtime alone, as a careful kubebuilder
// author would write it. It imports nothing from reconcilekit.
//
// What it records is the library At's, item by item, so that the benchmark
// in package bench compares the cost of the library, not the cost of what is
// recorded (issue 26):
//
//   - status.phase PENDING -> RUNNING -> DONE, podName, outcome, exitCode,
//     status.observedGeneration;
//   - the kstatus conditions Ready, Reconciling and Stalled with the same
//     types, statuses, reasons and messages at each phase, set with
//     meta.SetStatusCondition (LastTransitionTime moves only when the status
//     does), Reconciling and Stalled present only while True;
//   - a new At due within [FirstStatusWithin] of its creation gets no
//     PENDING status: the RUNNING status, written moments later, says more;
//   - the finalizer cnat.reconcilekit.dev/pod-cleanup, added by a patch with
//     an optimistic lock before the first Pod, which deletes a Pod still
//     running when its At is deleted (with a PodDeleted event);
//   - a Normal event when an At becomes Ready, a Warning when it stalls
//     (its command failed, or its schedule cannot be parsed: a terminal
//     error, never retried);
//   - the status written only when it changed, with Status().Update;
//   - the same event filters (generation changes, deletion, finalizer
//     changes and resyncs of Ats; a Pod's finishing and deletion) and the
//     same Pod cache (only Pods labelled with an At's UID).
//
// Conflicts (a status written from a stale cached At) are requeued quietly
// after 100 ms, as the library's requeue.Policy does, and a Pod that
// already exists is read back rather than created twice. It has no
// read-your-own-writes guard: optimistic concurrency is the guard a
// kubebuilder scaffold relies on.
//
// It exists only to be measured against: the benchmark runs it as a process
// of its own (command handwritten/cmd/handwritten, with the At operator's
// flags and manager options). It is not an example to copy: the library's
// At (examples/at) is.
package handwritten
