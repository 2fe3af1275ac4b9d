// Package fluxcompare measures, in one run on one API server, what a
// converged set of children costs written by an applyset.Set and by Flux's
// ssa.ResourceManager (github.com/fluxcd/pkg/ssa), the library behind
// kustomize-controller and helm-controller: the same 100 children of 5
// kinds, the requests of each counted at the transport.
//
// It is a module of its own, so that Flux's dependencies (kubectl,
// kustomize, its cli-utils fork) never enter reconcilekit's go.mod:
//
//	make compare-flux
//
// (or go test -v ./... in this directory, with KUBEBUILDER_ASSETS set).
// Flux's manager reads each object (from the API server, or from the cache
// when the manager caches unstructured objects) and sends a server-side
// dry-run apply of it on every reconcile, converged or not, to find what
// drifted; a Set compares in the process. The last run:
//
//	100 children of 5 kinds       applyset.Set   Flux ssa.ResourceManager   the same, unstructured cached
//	converged                     0              200 (100 get, 100 apply)   100 (100 apply)
//	one child changed             1 (1 patch)    201 (100 get, 101 apply)   101 (101 apply)
//	one child removed             1 (1 delete)   200 (100 get, 99 apply,    100 (99 apply, 1 delete)
//	                                             1 delete)
//
// (requests at the transport; "apply" is a server-side apply, a dry-run
// one for each object that had not drifted).
// ssa v0.78.0 is the newest version the module proxy serves that builds
// with Go 1.26 and controller-runtime v0.25 (v0.79.0 and later need Go
// 1.27).
package fluxcompare
