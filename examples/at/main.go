// Command at runs the At operator against any cluster. It reads the cluster
// from --kubeconfig, $KUBECONFIG, the in-cluster config or ~/.kube/config,
// in that order, like every controller-runtime manager.
//
// Out of a cluster, with the CRD applied first:
//
//	kubectl apply -k examples/at/config/crd
//	go run ./examples/at --kubeconfig ~/.kube/config
//	kubectl apply -f examples/at/config/samples/at.yaml
//
// In a cluster, examples/at/config/default deploys it: two replicas, one
// leader. See examples/at/README.md.
//
// Leader election is on by default. Its Lease lives in
// --leader-election-namespace; when that is not set, in the Pod's own
// namespace in a cluster, else in the namespace of the kubeconfig's current
// context, else in "default". A replica stopped gracefully (SIGTERM, SIGINT)
// releases the Lease as it exits, so a standby takes over at once instead of
// after the lease duration.
//
// Metrics and health probes bind to localhost unless told otherwise; "0"
// disables either.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	atv1 "github.com/reconcilekit/reconcilekit/examples/at/api/v1alpha1"
	"github.com/reconcilekit/reconcilekit/examples/at/internal/controller"
	"github.com/reconcilekit/reconcilekit/freshness"
	"github.com/reconcilekit/reconcilekit/shard"
	"github.com/reconcilekit/reconcilekit/shard/ranges"
)

// leaderElectionID names the Lease the replicas compete for.
const leaderElectionID = "at.cnat.reconcilekit.dev"

// inClusterNamespaceFile holds the namespace of a Pod's service account.
const inClusterNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// options are the operator's settings, from its command line.
type options struct {
	kubeconfig              string
	metricsAddr             string
	probeAddr               string
	leaderElect             bool
	leaderElectionNamespace string
	leaseDuration           time.Duration
	renewDeadline           time.Duration
	retryPeriod             time.Duration
	workers                 int
	readYourWrites          string
	shards                  int
	cacheDiet               bool
	zap                     zap.Options
}

// The guards --read-your-writes chooses between.
const (
	guardFreshness         = "freshness"
	guardControllerRuntime = "controller-runtime"
)

func main() {
	o, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "at: %v\nrun 'at -h' for the flags\n", err)
		os.Exit(2)
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&o.zap)))
	if err := run(ctrl.SetupSignalHandler(), o); err != nil {
		ctrl.Log.WithName("setup").Error(err, "the At operator failed")
		os.Exit(1)
	}
}

// parseFlags reads the command line into options and checks every value,
// so that a bad one is reported before anything starts. Help goes to out.
func parseFlags(args []string, out io.Writer) (*options, error) {
	o := &options{}
	flags := flag.NewFlagSet("at", flag.ContinueOnError)
	// Errors are returned, not printed: the caller says them once.
	flags.SetOutput(io.Discard)
	// The kubeconfig flag is controller-runtime's, so that ctrl.GetConfig
	// sees it.
	config.RegisterFlags(flags)
	flags.StringVar(&o.metricsAddr, "metrics-bind-address", "127.0.0.1:8080",
		`address the metrics endpoint binds to ("host:port"); "0" disables it`)
	flags.StringVar(&o.probeAddr, "health-probe-bind-address", "127.0.0.1:8081",
		`address the /healthz and /readyz probes bind to ("host:port"); "0" disables them`)
	flags.BoolVar(&o.leaderElect, "leader-elect", true,
		"elect a leader, so that only one replica reconciles at a time")
	flags.StringVar(&o.leaderElectionNamespace, "leader-election-namespace", "",
		`namespace of the leader election Lease (default: the Pod's namespace in a cluster, `+
			`else the kubeconfig context's namespace, else "default")`)
	flags.DurationVar(&o.leaseDuration, "leader-elect-lease-duration", 15*time.Second,
		"how long a standby waits after the leader's last renewal before it takes over a Lease that was not released")
	flags.DurationVar(&o.renewDeadline, "leader-elect-renew-deadline", 10*time.Second,
		"how long the leader keeps trying to renew its Lease before it gives up leadership (and exits)")
	flags.DurationVar(&o.retryPeriod, "leader-elect-retry-period", 2*time.Second,
		"how often replicas try to acquire or renew the Lease")
	flags.IntVar(&o.workers, "workers", controller.DefaultWorkers,
		"how many Ats are reconciled at once")
	flags.StringVar(&o.readYourWrites, "read-your-writes", guardFreshness,
		`what keeps a read at least as new as this process's last write: "`+guardFreshness+`" (reconcilekit's Tracker, `+
			`waiting at most 2s) or "`+guardControllerRuntime+`" (controller-runtime's experimental consistency client; see docs/read-your-writes.md)`)
	flags.IntVar(&o.shards, "shards", 0,
		"share the Ats among every running replica, split into this many ranges, each held through a Lease in the "+
			"leader election namespace (docs/sharding.md); 0 runs one leader, as --leader-elect says")
	flags.BoolVar(&o.cacheDiet, "cache-diet", true,
		"keep the caches to what the controller reads (package diet): of every object's managedFields the entries the library reads, "+
			"of each Pod its metadata, phase and exit code (docs/memory.md); false caches every object whole")
	o.zap.BindFlags(flags)
	flags.Usage = func() {} // on errors too: the caller says what went wrong
	if err := flags.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(out, "Usage of at:\n")
			flags.SetOutput(out)
			flags.PrintDefaults()
		}
		return nil, err
	}
	if flags.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q: every setting is a flag", flags.Args())
	}
	o.kubeconfig = flags.Lookup(config.KubeconfigFlagName).Value.String()
	return o, o.validate()
}

// validate reports every bad value at once.
func (o *options) validate() error {
	var errs []error
	if o.workers < 1 {
		errs = append(errs, fmt.Errorf("--workers must be at least 1, got %d", o.workers))
	}
	if o.shards < 0 || o.shards > ranges.Max {
		errs = append(errs, fmt.Errorf("--shards must be between 0 and %d, got %d", ranges.Max, o.shards))
	}
	if o.readYourWrites != guardFreshness && o.readYourWrites != guardControllerRuntime {
		errs = append(errs, fmt.Errorf("--read-your-writes %q: want %q or %q", o.readYourWrites, guardFreshness, guardControllerRuntime))
	}
	for _, a := range []struct{ flag, value string }{
		{"--metrics-bind-address", o.metricsAddr},
		{"--health-probe-bind-address", o.probeAddr},
	} {
		if a.value == "0" {
			continue
		}
		if _, port, err := net.SplitHostPort(a.value); err != nil {
			errs = append(errs, fmt.Errorf(`%s %q: want "host:port" or "0": %w`, a.flag, a.value, err))
		} else if port == "" {
			errs = append(errs, fmt.Errorf(`%s %q: no port`, a.flag, a.value))
		}
	}
	if ns := o.leaderElectionNamespace; ns != "" {
		if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--leader-election-namespace %q is not a namespace name: %s", ns, strings.Join(msgs, "; ")))
		}
	}
	// The same rules client-go's leader elector enforces, said in terms
	// of the flags; the Lease records whole seconds.
	switch {
	case o.retryPeriod <= 0:
		errs = append(errs, fmt.Errorf("--leader-elect-retry-period must be positive, got %s", o.retryPeriod))
	case o.renewDeadline <= time.Duration(1.2*float64(o.retryPeriod)):
		errs = append(errs, fmt.Errorf("--leader-elect-renew-deadline (%s) must be more than 1.2 × --leader-elect-retry-period (%s)",
			o.renewDeadline, o.retryPeriod))
	case o.leaseDuration <= o.renewDeadline:
		errs = append(errs, fmt.Errorf("--leader-elect-lease-duration (%s) must be more than --leader-elect-renew-deadline (%s)",
			o.leaseDuration, o.renewDeadline))
	case o.leaseDuration%time.Second != 0:
		errs = append(errs, fmt.Errorf("--leader-elect-lease-duration must be whole seconds, got %s", o.leaseDuration))
	}
	return errors.Join(errs...)
}

// run starts the manager and the At controller and blocks until ctx ends.
func run(ctx context.Context, o *options) error {
	setupLog := ctrl.Log.WithName("setup")
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("no cluster to talk to: %w", err)
	}
	namespace := o.leaderElectionNamespace
	if (o.leaderElect || o.shards > 0) && namespace == "" {
		if namespace, err = defaultLeaderElectionNamespace(o.kubeconfig, inClusterNamespaceFile); err != nil {
			return fmt.Errorf("finding the leader election namespace (set --leader-election-namespace): %w", err)
		}
	}

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return fmt.Errorf("registering client-go types: %w", err)
	}
	if err := atv1.AddToScheme(scheme); err != nil {
		return fmt.Errorf("registering the At types: %w", err)
	}
	mopts := ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: o.metricsAddr},
		HealthProbeBindAddress: o.probeAddr,
		// Sharded, every replica works: its Member holds its share of the
		// ranges instead of one leader holding everything.
		LeaderElection:          o.leaderElect && o.shards == 0,
		LeaderElectionID:        leaderElectionID,
		LeaderElectionNamespace: namespace,
		LeaseDuration:           &o.leaseDuration,
		RenewDeadline:           &o.renewDeadline,
		RetryPeriod:             &o.retryPeriod,
		// Safe because the process exits as soon as the manager returns.
		LeaderElectionReleaseOnCancel: true,
		// Cache only the Pods of Ats, not every Pod of the cluster.
		Cache: cache.Options{ByObject: controller.CacheByObject()},
	}
	if o.readYourWrites == guardControllerRuntime {
		// The one line that turns on controller-runtime's guard.
		mopts.Client.Cache = &client.CacheOptions{EnableReadYourWritesConsistency: ptr.To(true)}
	}
	copts := controller.Options{Workers: o.workers}
	var lease *resourcelock.LeaseLock
	if mopts.LeaderElection {
		// controller-runtime's election over a lock of our own: every write
		// goes out only while the lease is confirmed by a renewal within the
		// renew deadline, so that a leader frozen past its lease writes
		// nothing when it wakes (package shard's Leader).
		host, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("the leader election identity: %w", err)
		}
		lcfg := rest.AddUserAgent(cfg, "leader-election")
		// A hung request must not cost the lease, as controller-runtime sets it.
		lcfg.Timeout = max(o.renewDeadline/2, time.Second)
		cs, err := kubernetes.NewForConfig(lcfg)
		if err != nil {
			return fmt.Errorf("a client for the leader election Lease: %w", err)
		}
		lease = &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: namespace, Name: leaderElectionID},
			Client:     cs.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: host + "_" + string(uuid.NewUUID())},
		}
		leader := shard.NewLeader(lease, o.renewDeadline)
		mopts.LeaderElectionResourceLockInterface = leader
		cfg = leader.Fence(cfg)
	}
	if o.shards > 0 {
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return fmt.Errorf("a client for the shard Leases: %w", err)
		}
		m := shard.NewMember(cs.CoordinationV1(), controller.Name)
		m.Namespace, m.Name, m.RangeCount = namespace, "at", o.shards
		m.LeaseDuration, m.RenewDeadline, m.RetryPeriod = o.leaseDuration, o.renewDeadline, o.retryPeriod
		m.OnChange = func(held ranges.Set) { setupLog.Info("ranges held", "ranges", held.String()) }
		copts.Shard = m
		// Every write a reconcile sends is checked, just before it goes
		// out, against its range's Lease: a replica that wakes from a
		// freeze writes nothing for a range it lost.
		cfg = shard.Fence(cfg)
		// The cache holds the Ats of the ranges held and their Pods.
		if mopts.Cache, err = controller.CacheOptions(cache.Options{}, copts.Shard); err != nil {
			return fmt.Errorf("the sharded cache: %w", err)
		}
	}
	if o.cacheDiet {
		// The caches keep what the controller reads, and nothing more.
		if mopts.Cache, err = controller.DietCacheOptions(mopts.Cache); err != nil {
			return fmt.Errorf("the cache diet: %w", err)
		}
	}
	mgr, err := ctrl.NewManager(cfg, mopts)
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	if lease != nil {
		// The "became leader" event, as controller-runtime's own lock sends it.
		lease.LockConfig.EventRecorder = mgr.GetEventRecorderFor(lease.LockConfig.Identity) //nolint:staticcheck // the lock takes the old events API
	}
	if copts.Shard != nil {
		if err := mgr.Add(copts.Shard); err != nil {
			return fmt.Errorf("adding the shard member: %w", err)
		}
		// One line says how the replicas split the work on this server.
		dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		d, err := ranges.Detect(dctx, mgr.GetAPIReader(), &atv1.AtList{})
		cancel()
		if err != nil {
			setupLog.Info("sharded; could not ask the API server about ShardSelector", "shards", o.shards, "error", err.Error())
		} else {
			setupLog.Info("sharded: each replica caches and reconciles the Ats of the ranges it holds, and their Pods",
				"shards", o.shards, "shardSelector", d.String())
		}
	}
	if o.readYourWrites == guardControllerRuntime {
		// Guarded once, not twice: a Tracker without informers over a client
		// that already waits for its writes never finds a stale read, and
		// the At and its Loop use it as it is instead of a Tracker that
		// follows the informers.
		copts.Client = (&freshness.Tracker{}).Wrap(mgr.GetClient())
	}
	if err := controller.SetupWithManager(mgr, copts); err != nil {
		return fmt.Errorf("setting up the At controller: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("adding the health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return fmt.Errorf("adding the ready check: %w", err)
	}
	setupLog.Info("starting the At operator", "leaderElection", o.leaderElect, "leaderElectionNamespace", namespace,
		"workers", o.workers, "readYourWrites", o.readYourWrites, "shards", o.shards, "cacheDiet", o.cacheDiet, "metrics", o.metricsAddr, "probes", o.probeAddr)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running the manager: %w", err)
	}
	setupLog.Info("stopped")
	return nil
}

// defaultLeaderElectionNamespace is the Lease's namespace when
// --leader-election-namespace is not set. It follows the config that
// ctrl.GetConfig picks: in a cluster (no --kubeconfig, no $KUBECONFIG, and
// the in-cluster environment present), the Pod's namespace from
// namespaceFile; otherwise the namespace of the kubeconfig's current
// context, "default" when it names none.
func defaultLeaderElectionNamespace(kubeconfig, namespaceFile string) (string, error) {
	if kubeconfig == "" && os.Getenv(clientcmd.RecommendedConfigPathEnvVar) == "" && os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
		b, err := os.ReadFile(namespaceFile)
		switch {
		case err == nil && strings.TrimSpace(string(b)) != "":
			return strings.TrimSpace(string(b)), nil
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return "", fmt.Errorf("reading the Pod's namespace: %w", err)
		}
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	ns, _, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).Namespace()
	if err != nil {
		return "", fmt.Errorf("reading the kubeconfig: %w", err)
	}
	return ns, nil
}
