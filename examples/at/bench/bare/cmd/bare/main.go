// Command bare runs the bare client-go At controller
// ([github.com/reconcilekit/reconcilekit/examples/at/bench/bare]) as its own
// process, with the yardsticks' flags (those of the At operator, plus
// --pprof-bind-address), leader election on a Lease through client-go's
// leaderelection (released on a graceful stop), metrics under the names the
// benchmark reads and /healthz and /readyz probes, so that the benchmark in
// examples/at/bench measures it as it measures the others.
//
//	go run ./examples/at/bench/bare/cmd/bare --kubeconfig ~/.kube/config --workers 4
//
// It is a yardstick, not an operator to deploy.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/reconcilekit/reconcilekit/examples/at/bench/bare"
)

// leaseID names the Lease the bare controller's replicas compete for.
const leaseID = "bare-at.bench.reconcilekit.dev"

// options are the command's settings.
type options struct {
	kubeconfig              string
	metricsAddr             string
	probeAddr               string
	pprofAddr               string
	leaderElect             bool
	leaderElectionNamespace string
	leaseDuration           time.Duration
	renewDeadline           time.Duration
	retryPeriod             time.Duration
	workers                 int
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bare: %v\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintf(os.Stderr, "bare: %v\n", err)
		os.Exit(1)
	}
}

// parseFlags reads the command line: the yardsticks' flags and defaults.
func parseFlags(args []string) (*options, error) {
	o := &options{}
	flags := flag.NewFlagSet("bare", flag.ContinueOnError)
	flags.SetOutput(io.Discard)
	flags.StringVar(&o.kubeconfig, "kubeconfig", "", "path to a kubeconfig; default: $KUBECONFIG, in-cluster, ~/.kube/config")
	flags.StringVar(&o.metricsAddr, "metrics-bind-address", "127.0.0.1:8080", `address of the metrics endpoint; "0" disables it`)
	flags.StringVar(&o.probeAddr, "health-probe-bind-address", "127.0.0.1:8081", `address of /healthz and /readyz; "0" disables them`)
	flags.StringVar(&o.pprofAddr, "pprof-bind-address", "0", `address of net/http/pprof's /debug/pprof/ endpoints; "0" disables them`)
	flags.BoolVar(&o.leaderElect, "leader-elect", true, "elect a leader")
	flags.StringVar(&o.leaderElectionNamespace, "leader-election-namespace", "default", "namespace of the leader election Lease")
	flags.DurationVar(&o.leaseDuration, "leader-elect-lease-duration", 15*time.Second, "leader election lease duration")
	flags.DurationVar(&o.renewDeadline, "leader-elect-renew-deadline", 10*time.Second, "leader election renew deadline")
	flags.DurationVar(&o.retryPeriod, "leader-elect-retry-period", 2*time.Second, "leader election retry period")
	flags.IntVar(&o.workers, "workers", 4, "how many Ats are reconciled at once")
	if err := flags.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			flags.SetOutput(os.Stdout)
			flags.PrintDefaults()
		}
		return nil, err
	}
	if flags.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", flags.Args())
	}
	if o.workers < 1 {
		return nil, fmt.Errorf("--workers must be at least 1, got %d", o.workers)
	}
	return o, nil
}

// restConfig finds the cluster as controller-runtime's GetConfig does:
// --kubeconfig, $KUBECONFIG, in-cluster, ~/.kube/config.
func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		return clientcmd.BuildConfigFromFlags("", kubeconfig)
	}
	if os.Getenv(clientcmd.RecommendedConfigPathEnvVar) == "" {
		if cfg, err := rest.InClusterConfig(); err == nil {
			return cfg, nil
		}
	}
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(clientcmd.NewDefaultClientConfigLoadingRules(), &clientcmd.ConfigOverrides{}).ClientConfig()
}

// run serves the metrics and probes, elects a leader and runs the
// controller while it leads, until ctx ends.
func run(ctx context.Context, o *options) error {
	cfg, err := restConfig(o.kubeconfig)
	if err != nil {
		return fmt.Errorf("no cluster to talk to: %w", err)
	}
	// controller-runtime's GetConfig default, so that every controller is
	// throttled alike: no client-side rate limit (the API server's
	// priority and fairness).
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = -1, -1
	}

	registry := prometheus.NewRegistry()
	registry.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), collectors.NewGoCollector())
	reconciles := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "controller_runtime_reconcile_total",
		Help: "Total number of reconciliations per controller"}, []string{"controller", "result"})
	reconcileTime := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "controller_runtime_reconcile_time_seconds",
		Help: "Length of time per reconciliation per controller"}, []string{"controller"})
	leading := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "leader_election_master_status",
		Help: "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master."}, []string{"name"})
	registry.MustRegister(reconciles, reconcileTime, leading)
	for _, r := range []string{"success", "error", "requeue_after"} {
		reconciles.WithLabelValues(bare.Name, r)
	}
	leading.WithLabelValues(leaseID).Set(0)

	serve := func(addr string, h http.Handler) {
		if addr == "0" || addr == "" {
			return
		}
		srv := &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.ListenAndServe() }()
		context.AfterFunc(ctx, func() { _ = srv.Close() })
	}
	metrics := http.NewServeMux()
	metrics.Handle("/metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	serve(o.metricsAddr, metrics)
	probes := http.NewServeMux()
	ok := func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }
	probes.HandleFunc("/healthz", ok)
	probes.HandleFunc("/readyz", ok)
	serve(o.probeAddr, probes)
	debug := http.NewServeMux()
	debug.HandleFunc("/debug/pprof/", pprof.Index)
	debug.HandleFunc("/debug/pprof/profile", pprof.Profile)
	serve(o.pprofAddr, debug)

	c := &bare.Controller{Config: cfg, Workers: o.workers, Observe: func(d time.Duration, result string) {
		reconciles.WithLabelValues(bare.Name, result).Inc()
		reconcileTime.WithLabelValues(bare.Name).Observe(d.Seconds())
	}}
	if !o.leaderElect {
		return c.Run(ctx)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	host, _ := os.Hostname()
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: o.leaderElectionNamespace, Name: leaseID},
		Client:     cs.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: fmt.Sprintf("%s_%d", host, os.Getpid())},
	}
	var runErr error
	leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   o.leaseDuration,
		RenewDeadline:   o.renewDeadline,
		RetryPeriod:     o.retryPeriod,
		ReleaseOnCancel: true,
		Name:            leaseID,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				leading.WithLabelValues(leaseID).Set(1)
				runErr = c.Run(ctx)
			},
			OnStoppedLeading: func() { leading.WithLabelValues(leaseID).Set(0) },
		},
	})
	return runErr
}
