// Command at runs the At operator against any cluster: it reads the
// kubeconfig from --kubeconfig, $KUBECONFIG, in-cluster config or
// ~/.kube/config, like every controller-runtime manager. Apply the CRD first:
//
//	kubectl apply -f examples/at/config/crd
//	go run ./examples/at --kubeconfig ~/.kube/config
//	kubectl apply -f examples/at/config/samples
package main

import (
	"flag"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	atv1 "github.com/reconcilekit/reconcilekit/examples/at/api/v1alpha1"
	"github.com/reconcilekit/reconcilekit/examples/at/internal/controller"
)

func main() {
	var metricsAddr, probeAddr string
	var leaderElect bool
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8080", `address the metrics endpoint binds to; "0" disables it`)
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "address the health probes bind to")
	flag.BoolVar(&leaderElect, "leader-elect", true, "elect a leader, so that only one replica reconciles at a time")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	setupLog := ctrl.Log.WithName("setup")

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		setupLog.Error(err, "registering client-go types")
		os.Exit(1)
	}
	if err := atv1.AddToScheme(scheme); err != nil {
		setupLog.Error(err, "registering the At types")
		os.Exit(1)
	}

	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress: probeAddr,
		LeaderElection:         leaderElect,
		LeaderElectionID:       "at.cnat.reconcilekit.dev",
	})
	if err != nil {
		setupLog.Error(err, "creating the manager")
		os.Exit(1)
	}
	if err := controller.SetupWithManager(mgr, controller.Options{}); err != nil {
		setupLog.Error(err, "setting up the At controller")
		os.Exit(1)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		setupLog.Error(err, "adding the health check")
		os.Exit(1)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		setupLog.Error(err, "adding the ready check")
		os.Exit(1)
	}
	setupLog.Info("starting the At operator")
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		setupLog.Error(err, "running the manager")
		os.Exit(1)
	}
}
