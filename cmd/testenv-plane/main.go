// Command testenv-plane runs a control plane that the tests of several
// packages share: a kube-apiserver and etcd (and, with -controller-manager
// and -kwok, kube-controller-manager and a kwok node) started by
// testenv.Serve, whose plane file the packages with testenv.Options.Shared
// attach to when RECONCILEKIT_TESTENV_PLANES names it. Each such package
// then starts no control plane of its own: about 2 CPU-seconds and a few
// seconds of wall time saved per package, and about one CPU-second per
// minute of its run.
//
//	go run github.com/reconcilekit/reconcilekit/cmd/testenv-plane -o /tmp/plane.json &
//	export RECONCILEKIT_TESTENV_PLANES=/tmp/plane.json
//	go test ./...
//
// The plane file appears once the plane is ready: wait for it before
// starting the tests. The command stops the plane and removes the file on
// SIGINT or SIGTERM, and when the process that started it exits, so that
// an interrupted run leaves nothing behind. The binaries come from
// KUBEBUILDER_ASSETS, as for testenv.Main. make test runs two of these,
// one with -controller-manager -kwok.
//
// Usage:
//
//	testenv-plane -o FILE [-controller-manager] [-kwok]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
)

func main() {
	out := flag.String("o", "", "where to write the plane file (required)")
	kcm := flag.Bool("controller-manager", false, "run kube-controller-manager beside the API server (testenv.Options.ControllerManager)")
	kwok := flag.Bool("kwok", false, "run kwok as the kubelet of one node (testenv.Options.Kwok)")
	flag.Parse()
	if err := run(*out, testenv.Options{ControllerManager: *kcm, Kwok: *kwok}, time.Second); err != nil {
		fmt.Fprintln(os.Stderr, "testenv-plane:", err)
		os.Exit(1)
	}
}

// run serves the plane until a signal, or until the parent process exits
// (checked every poll).
func run(out string, opts testenv.Options, poll time.Duration) error {
	if out == "" {
		return errors.New("-o FILE is required: the plane file to write")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx, orphaned := context.WithCancel(ctx)
	defer orphaned()
	parent := os.Getppid()
	go func() {
		t := time.NewTicker(poll)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if os.Getppid() != parent {
					orphaned()
					return
				}
			}
		}
	}()
	return testenv.Serve(ctx, opts, out)
}
