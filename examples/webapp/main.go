// Command webapp runs the WebApp operator against any cluster: a web
// application's ConfigMap, Deployment and Service, and, as its spec turns
// them on, a PodDisruptionBudget and a ServiceMonitor, written as one set
// (package applyset). It reads the cluster from --kubeconfig, $KUBECONFIG,
// the in-cluster config or ~/.kube/config, like every controller-runtime
// manager.
//
//	kubectl apply -f examples/webapp/config/crd
//	go run ./examples/webapp --kubeconfig ~/.kube/config
//	kubectl apply -f examples/webapp/config/samples/webapp.yaml
//
// See examples/webapp/README.md.
package main

import (
	"flag"
	"fmt"
	"os"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	webappv1 "github.com/reconcilekit/reconcilekit/examples/webapp/api/v1alpha1"
	"github.com/reconcilekit/reconcilekit/examples/webapp/internal/controller"
	"github.com/reconcilekit/reconcilekit/freshness"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "webapp:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("webapp", flag.ContinueOnError)
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
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, webappv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	var tracker freshness.Tracker
	mgr, err := ctrl.NewManager(cfg, controller.ManagerOptions(ctrl.Options{
		Scheme:           scheme,
		Metrics:          metricsserver.Options{BindAddress: *metricsAddr},
		LeaderElection:   *leaderElect,
		LeaderElectionID: "webapp.webapp.reconcilekit.dev",
	}, &tracker))
	if err != nil {
		return err
	}
	r := controller.New(mgr.GetClient())
	r.Recorder = mgr.GetEventRecorder(controller.FieldOwner)
	if err := r.SetupWithManager(mgr); err != nil {
		return err
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}
