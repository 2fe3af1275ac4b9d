// Package bare is the floor of the benchmark's memory comparison: the At
// on client-go alone, sending the same writes as reconcilekit's At with the
// same payloads, and keeping no cache of objects. It imports nothing of
// reconcilekit but the At's API types, and nothing of controller-runtime
// but the scheme builder those types use (a test holds it so).
//
// It watches Ats and the Pods labelled with an At's UID (two watches, the
// objects dropped as soon as they are looked at), remembers per At only
// what its event filters need (generation, finalizers, deletion; per Pod
// whether it was seen finished), and reconciles each At a worker pulls
// from a workqueue (client-go's, with its timers for the schedules) by
// reading the At, and its Pod when it needs it, from the API server:
// an uncached read where a controller-runtime controller reads its cache.
// It records what the library's At records, item by item, like
// [github.com/reconcilekit/reconcilekit/examples/at/bench/handwritten]
// (status, kstatus conditions, observedGeneration, the finalizer and its
// cleanup, the Ready and Warning events; the bench's
// TestTheBareAtRecordsWhatTheLibraryAtRecords compares every record), and
// writes as the library does: the finalizer by a merge patch with an
// optimistic lock, the status by a merge patch of what changed locked by
// the resourceVersion, events by a create each (events.k8s.io/v1).
//
// What it costs in memory is what the work needs and nothing else: the
// process, its clients and two watches. The benchmark reports the library's
// At against it (issue 38: at most twice its peak RSS).
//
// cmd/bare runs it as a process with the yardsticks' flags, leader
// election (client-go's, on a Lease) and the metrics the harness reads
// under controller-runtime's names (controller_runtime_reconcile_total,
// controller_runtime_reconcile_time_seconds, leader_election_master_status,
// and Prometheus' process and Go collectors). It is a yardstick, not an
// operator to deploy.
package bare
