// Package yardstick is the command line and manager of the At controllers
// that the benchmark measures reconcilekit's At against (the classic and the
// hand-written one): the At operator's flags and manager options (cache of
// every namespace, leader election with the same timings and release on
// cancel, metrics and probes), plus --pprof-bind-address, so that every
// controller runs as a process under the same conditions.
package yardstick

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	atv1 "github.com/reconcilekit/reconcilekit/examples/at/api/v1alpha1"
)

// options are the command's settings.
type options struct {
	metricsAddr             string
	probeAddr               string
	pprofAddr               string
	leaderElect             bool
	leaderElectionNamespace string
	leaseDuration           time.Duration
	renewDeadline           time.Duration
	retryPeriod             time.Duration
	workers                 int
	zap                     zap.Options
}

// Command is one yardstick controller's command.
type Command struct {
	// Name names the command in its messages ("classic").
	Name string
	// LeaderElectionID names its Lease, which differs from the At
	// operator's so that the two never compete for one.
	LeaderElectionID string
	// DefaultWorkers is the default of --workers.
	DefaultWorkers int
	// Options, when set, changes the manager's options (its cache).
	Options func(*ctrl.Options)
	// Setup registers the controller with the manager, with --workers
	// workers.
	Setup func(mgr ctrl.Manager, workers int) error
}

// Main runs the command with the process's arguments and exits.
func (c Command) Main() {
	o, err := c.parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", c.Name, err)
		os.Exit(2)
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&o.zap)))
	if err := c.run(ctrl.SetupSignalHandler(), o); err != nil {
		ctrl.Log.WithName("setup").Error(err, "the controller failed", "command", c.Name)
		os.Exit(1)
	}
}

// parseFlags reads the command line. The flags and defaults are the At
// operator's (examples/at/main.go), plus --pprof-bind-address.
func (c Command) parseFlags(args []string) (*options, error) {
	o := &options{}
	flags := flag.NewFlagSet(c.Name, flag.ContinueOnError)
	flags.SetOutput(io.Discard)
	config.RegisterFlags(flags)
	flags.StringVar(&o.metricsAddr, "metrics-bind-address", "127.0.0.1:8080", `address of the metrics endpoint; "0" disables it`)
	flags.StringVar(&o.probeAddr, "health-probe-bind-address", "127.0.0.1:8081", `address of /healthz and /readyz; "0" disables them`)
	flags.StringVar(&o.pprofAddr, "pprof-bind-address", "0", `address of net/http/pprof's /debug/pprof/ endpoints; "0" disables them`)
	flags.BoolVar(&o.leaderElect, "leader-elect", true, "elect a leader")
	flags.StringVar(&o.leaderElectionNamespace, "leader-election-namespace", "default", "namespace of the leader election Lease")
	flags.DurationVar(&o.leaseDuration, "leader-elect-lease-duration", 15*time.Second, "leader election lease duration")
	flags.DurationVar(&o.renewDeadline, "leader-elect-renew-deadline", 10*time.Second, "leader election renew deadline")
	flags.DurationVar(&o.retryPeriod, "leader-elect-retry-period", 2*time.Second, "leader election retry period")
	flags.IntVar(&o.workers, "workers", c.DefaultWorkers, "how many Ats are reconciled at once")
	o.zap.BindFlags(flags)
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

// run starts the manager and the controller and blocks until ctx ends.
func (c Command) run(ctx context.Context, o *options) error {
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("no cluster to talk to: %w", err)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := atv1.AddToScheme(scheme); err != nil {
		return err
	}
	opts := ctrl.Options{
		Scheme:                        scheme,
		Metrics:                       metricsserver.Options{BindAddress: o.metricsAddr},
		HealthProbeBindAddress:        o.probeAddr,
		PprofBindAddress:              o.pprofAddr,
		LeaderElection:                o.leaderElect,
		LeaderElectionID:              c.LeaderElectionID,
		LeaderElectionNamespace:       o.leaderElectionNamespace,
		LeaseDuration:                 &o.leaseDuration,
		RenewDeadline:                 &o.renewDeadline,
		RetryPeriod:                   &o.retryPeriod,
		LeaderElectionReleaseOnCancel: true,
	}
	if c.Options != nil {
		c.Options(&opts)
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	if err := c.Setup(mgr, o.workers); err != nil {
		return fmt.Errorf("setting up the controller: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	ctrl.Log.WithName("setup").Info("starting", "command", c.Name, "workers", o.workers,
		"leaderElection", o.leaderElect, "leaderElectionNamespace", o.leaderElectionNamespace)
	return mgr.Start(ctx)
}
