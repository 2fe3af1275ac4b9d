// Command secretmirror runs the SecretMirror operator against any cluster:
// it copies a Secret of a SecretMirror's namespace into the namespaces the
// mirror lists, and keeps the copies in step with the source. It reads the
// cluster from --kubeconfig, $KUBECONFIG, the in-cluster config or
// ~/.kube/config, like every controller-runtime manager.
//
//	kubectl apply -f examples/secretmirror/config/crd
//	go run ./examples/secretmirror --kubeconfig ~/.kube/config
//	kubectl apply -f examples/secretmirror/config/samples/secretmirror.yaml
//
// See examples/secretmirror/README.md.
package main

import (
	"flag"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	mirrorv1 "github.com/reconcilekit/reconcilekit/examples/secretmirror/api/v1alpha1"
	"github.com/reconcilekit/reconcilekit/examples/secretmirror/internal/controller"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "secretmirror:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("secretmirror", flag.ContinueOnError)
	metricsAddr := fs.String("metrics-bind-address", "127.0.0.1:8080", `the address the metrics endpoint binds to; "0" disables it`)
	leaderElect := fs.Bool("leader-elect", false, "elect a leader among replicas (a Lease in the namespace of the kubeconfig's context)")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(fs)
	// controller-runtime's --kubeconfig flag is read by GetConfig.
	fs.String("kubeconfig", "", "the kubeconfig of the cluster; defaults as controller-runtime's")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if kc := fs.Lookup("kubeconfig").Value.String(); kc != "" {
		if err := os.Setenv("KUBECONFIG", kc); err != nil {
			return err
		}
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := mirrorv1.AddToScheme(scheme); err != nil {
		return err
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	opts, err := controller.ManagerOptions(ctrl.Options{
		Scheme:           scheme,
		Metrics:          metricsserver.Options{BindAddress: *metricsAddr},
		LeaderElection:   *leaderElect,
		LeaderElectionID: "secretmirror.mirror.reconcilekit.dev",
	})
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return err
	}
	if err := controller.SetupWithManager(mgr); err != nil {
		return err
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}
