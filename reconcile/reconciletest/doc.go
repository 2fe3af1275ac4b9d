// Package reconciletest helps operator authors test their own reconcilers:
// that they converge, that a converged object costs no writes, that they
// survive the errors a real API server returns, and that they never act on
// a stale read.
//
// Its parts, usable alone or together:
//
//   - [Counter] records requests as [APIRequest] values by [Verb]: wrap a
//     client ([Counter.Wrap]) to see what one piece of code asks, or a
//     *rest.Config ([Counter.WrapConfig]) to see every HTTP request of a
//     whole process, a manager's cache, client, API reader, event recorder
//     and leader election included. Assert "no writes" with
//     [Counter.Writes], or count one verb with [Counter.Count] and
//     [Counter.CountResource].
//   - [Converge] runs a reconciler until it stops asking to be requeued
//     (stepping a fake clock for RequeueAfter), then runs it once more and
//     fails the test if that run wrote anything, reporting each write and
//     what it changed: the idempotency check every operator should have.
//   - [FaultInjector] wraps a client so that a fraction ([Rate]) or a
//     [Sequence] of requests fail with conflicts, throttling, server errors
//     or timeouts, deterministically from a seed.
//   - [CacheDelay] makes an informer cache lag on purpose, so a reconciler
//     reads objects older than its own writes, as under load in production.
//   - [ReconcileCounter] counts a reconciler's runs per object, under a
//     running manager too.
//   - [RecordVersions] records every version of some objects the API
//     server stores, in resourceVersion order, and
//     [Versions.ConditionTrueOnlyWhen] checks each version of a parent that
//     says a condition True against its child as stored just before it:
//     "never Ready while the Deployment was not available at its
//     generation", of every version, not only the last one read.
//
// Its subpackage testenv starts a real control plane (envtest) and runs a
// controller under a manager whose requests and reconciles are all
// counted; this package itself needs no API server.
//
// The client wrappers are built on controller-runtime's client/interceptor
// and work on any client: controller-runtime's fake client for fast tests,
// or a client to a real API server (envtest). Wrap in this order so the counter
// also sees the requests faults made fail:
//
//	var counter reconciletest.Counter
//	faults, err := reconciletest.NewFaultInjector(1, reconciletest.Rate(0.2, reconciletest.FaultConflict))
//	...
//	r := &MyReconciler{Client: counter.Wrap(faults.Wrap(c))}
//	reconciletest.Converge(t, r, req, reconciletest.WithCounter(&counter), reconciletest.WithFaults(faults))
//
// The package depends only on the standard testing package (through
// [testing.TB]); it imports no test framework. It is not a fake API server:
// use controller-runtime's fake client or envtest for that. It starts no
// manager: Converge calls Reconcile directly, so it tests the reconciler's
// logic, not its watches and predicates; testenv runs the whole controller.
package reconciletest
