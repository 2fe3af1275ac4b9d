// Package envstart starts an envtest control plane and starts it again
// when envtest gave up on it too early.
//
// controller-runtime's envtest waits a fixed 5 s after kube-apiserver is
// healthy for the namespace "default" to appear, and fails Start when it
// has not. On a loaded machine (two cores, several control planes starting
// at once) a healthy API server can take longer than that to create it,
// and a test run fails for no fault of the code under test. Start stops
// such a plane and starts a fresh one.
package envstart

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Attempts is how many control planes Start starts at most.
const Attempts = 3

// slowNamespaceError is how envtest words its give-up on the default
// namespace (controller-runtime v0.25, pkg/envtest/server.go). A test of
// this package runs envtest into it, so a rewording is caught there.
const slowNamespaceError = "default namespace didn't register within deadline"

// Start starts the Environment newEnv returns for attempt 1. When envtest
// fails it only because the namespace "default" did not appear in time, it
// stops that plane and starts the one newEnv returns for the next attempt,
// up to [Attempts]: a fresh Environment each time, since envtest cannot
// start one again after a failed Start (its directories are gone). On any
// other error, or after the last attempt, the plane is stopped (envtest
// fails some starts with kube-apiserver and etcd running) and the error
// returned, naming the attempts made.
func Start(newEnv func(attempt int) *envtest.Environment) (*envtest.Environment, *rest.Config, error) {
	return start(newEnv, Attempts)
}

// start is Start with at most attempts planes.
func start(newEnv func(attempt int) *envtest.Environment, attempts int) (*envtest.Environment, *rest.Config, error) {
	var errs []error
	for attempt := 1; attempt <= attempts; attempt++ {
		te := newEnv(attempt)
		cfg, err := te.Start()
		if err == nil {
			return te, cfg, nil
		}
		errs = append(errs, fmt.Errorf("attempt %d: %w", attempt, err))
		if stopErr := te.Stop(); stopErr != nil {
			errs = append(errs, fmt.Errorf("attempt %d: stopping: %w", attempt, stopErr))
		}
		if !slowNamespace(err) {
			break
		}
	}
	return nil, nil, errors.Join(errs...)
}

// slowNamespace reports whether err is envtest's give-up on the namespace
// "default": the one start failure Start retries.
func slowNamespace(err error) bool {
	return err != nil && strings.Contains(err.Error(), slowNamespaceError)
}
