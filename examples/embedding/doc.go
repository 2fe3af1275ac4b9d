// Package embedding holds the programs of the embedding guide,
// docs/embedding.md, which takes a kubebuilder-style reconciler through
// the adoption of reconcilekit one package at a time:
//
//	api/v1      the Website API every step reconciles (config/crd: its CRD)
//	step0       the reconciler as scaffolded and grown by hand
//	step1       + errors and requeue.Policy
//	step2       + status
//	step3       + finalizer
//	step4       + drift.Writer
//	step5       as a reconcile.Loop, with reconcile.Predicate
//	step6       + health: Ready only when the Deployment is available
//	step7       + applyset: the children as one set
//	children    step 5's Website with an owned ConfigMap and Service
//
// Each step is a package of its own with its own tests on envtest. The
// tests of this package measure every step (the API writes and requests
// of a converged resync) and keep the guide true: TestGuideTable fails
// when the guide's table differs from a new measurement (make docs, or
// go test ./examples/embedding -run TestGuideTable -update, rewrites it),
// and TestGuideExcerpts fails when a diff or excerpt the guide shows no
// longer matches the code.
package embedding
