package track_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/track"
)

// The memory benchmark's processes: the benchmark starts the test binary
// again with memoryChildEnv set to one of the ways to watch Secrets; that
// process runs one manager and prints what it measured.
const (
	memoryChildEnv = "TRACK_MEMORY_CHILD"
	memoryNSEnv    = "TRACK_MEMORY_NAMESPACE"
	memoryReaders  = 100    // Widgets, each reading one Secret
	memorySecrets  = 10_000 // Secrets in the namespace
	memorySecretKB = 4      // of data each, about a TLS key and certificate
)

// memoryWays are the ways to watch Secrets the benchmark compares, in the
// order of its table.
var memoryWays = []struct{ mode, what string }{
	{"none", "no Secret watch: every reconcile reads its Secret from the API server (the floor)"},
	{"naive", "`Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(...))` over a field index, reads from the cache"},
	{"track-unstripped", "`WatchesMetadata(&corev1.Secret{}, refs.Enqueue(&corev1.Secret{}))`, reads through the Tracker and the API reader"},
	{"track", "the same, managedFields stripped from the Secrets' informer (`cache.TransformStripManagedFields`)"},
}

// memoryFigures is what a child process measured once its 100 Widgets were
// reconciled, after a garbage collection that returned what it could to
// the operating system.
type memoryFigures struct {
	RSS       uint64 `json:"rss"`       // VmRSS, bytes
	HeapInUse uint64 `json:"heapInUse"` // runtime.MemStats.HeapInuse
}

var memoryOnce struct {
	sync.Once
	rows []string
	figs map[string]memoryFigures
}

// BenchmarkWatchMemory measures the process of a controller whose 100
// Widgets each read one Secret, in a namespace holding 10,000 Secrets of
// 4 KiB, watched four ways (see memoryWays), each in a process of its own,
// one after another in the same run on the same control plane. It reports
// each process's resident set and Go heap in use, and logs the table of
// docs/references.md. Run it alone, once:
//
//	go test -run '^$' -bench WatchMemory -benchtime 1x ./track/
func BenchmarkWatchMemory(b *testing.B) {
	env.Require(b)
	memoryOnce.Do(func() {
		ns := env.Namespace(b)
		start := time.Now()
		data := bytes.Repeat([]byte("x"), memorySecretKB<<10)
		createMany(b, memorySecrets, func(i int) client.Object {
			return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("s-%05d", i)},
				Data: map[string][]byte{"tls.key": data}}
		})
		createMany(b, memoryReaders, func(i int) client.Object {
			return &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("w-%03d", i)},
				Spec: testapi.WidgetSpec{Message: fmt.Sprintf("s-%05d", i*(memorySecrets/memoryReaders))}}
		})
		b.Logf("created %d Secrets of %d KiB and %d Widgets in %v", memorySecrets, memorySecretKB, memoryReaders, time.Since(start).Round(time.Second))
		kubeconfig := env.Kubeconfig(b)
		memoryOnce.figs = map[string]memoryFigures{}
		memoryOnce.rows = append(memoryOnce.rows,
			"| how the controller watches Secrets | resident set (MiB) | Go heap in use (MiB) |",
			"|---|---|---|")
		for _, way := range memoryWays {
			cmd := exec.CommandContext(b.Context(), os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), memoryChildEnv+"="+way.mode, memoryNSEnv+"="+ns, "KUBECONFIG="+kubeconfig)
			var out, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			if err := cmd.Run(); err != nil {
				b.Fatalf("%s: %v\n%s", way.mode, err, errOut.String())
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			var f memoryFigures
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &f); err != nil {
				b.Fatalf("%s printed %q: %v", way.mode, out.String(), err)
			}
			memoryOnce.figs[way.mode] = f
			memoryOnce.rows = append(memoryOnce.rows, fmt.Sprintf("| %s | %.0f | %.0f |", way.what, mib(f.RSS), mib(f.HeapInUse)))
		}
	})
	for mode, f := range memoryOnce.figs {
		b.ReportMetric(mib(f.RSS), mode+"-RSS-MiB")
		b.ReportMetric(mib(f.HeapInUse), mode+"-heap-MiB")
	}
	b.Logf("with %d Secrets of %d KiB in the namespace, %d Widgets each reading one:\n%s", memorySecrets, memorySecretKB, memoryReaders, strings.Join(memoryOnce.rows, "\n"))
	for b.Loop() {
	}
}

func mib(n uint64) float64 { return float64(n) / (1 << 20) }

// createMany creates n objects with 16 writers.
func createMany(tb testing.TB, n int, obj func(i int) client.Object) {
	tb.Helper()
	c := env.Client(tb)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for worker := range 16 {
		wg.Go(func() {
			for i := worker; i < n; i += 16 {
				if err := c.Create(tb.Context(), obj(i)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		tb.Fatal(err)
	}
}

// memoryChild runs a manager that watches Secrets the way mode says,
// reconciles the namespace's Widgets, and prints its memoryFigures once
// every Widget was reconciled. It returns the process's exit code.
func memoryChild(mode string) int {
	if err := runMemoryChild(mode); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func runMemoryChild(mode string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 500, 1000
	scheme := clientgoscheme.Scheme
	if err := testapi.AddToScheme(scheme); err != nil {
		return err
	}
	ns := os.Getenv(memoryNSEnv)
	opts := manager.Options{
		Scheme:                 scheme,
		Metrics:                server.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
	}
	if mode == "track" {
		opts.Cache.ByObject = map[client.Object]cache.ByObject{&corev1.Secret{}: {Transform: cache.TransformStripManagedFields()}}
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return err
	}
	var mu sync.Mutex
	seen := map[types.NamespacedName]bool{}
	done := make(chan struct{})
	var read func(ctx context.Context, req ctrl.Request, w *testapi.Widget) error
	bld := ctrl.NewControllerManagedBy(mgr).For(&testapi.Widget{})
	switch mode {
	case "none":
		read = func(ctx context.Context, _ ctrl.Request, w *testapi.Widget) error {
			return mgr.GetAPIReader().Get(ctx, types.NamespacedName{Namespace: w.Namespace, Name: w.Spec.Message}, &corev1.Secret{})
		}
	case "naive":
		const index = "spec.message"
		if err := mgr.GetFieldIndexer().IndexField(context.Background(), &testapi.Widget{}, index, func(o client.Object) []string {
			return []string{o.(*testapi.Widget).Spec.Message}
		}); err != nil {
			return err
		}
		bld = bld.Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, s client.Object) []ctrl.Request {
			var ws testapi.WidgetList
			if err := mgr.GetClient().List(ctx, &ws, client.InNamespace(s.GetNamespace()), client.MatchingFields{index: s.GetName()}); err != nil {
				return nil
			}
			reqs := make([]ctrl.Request, len(ws.Items))
			for i := range ws.Items {
				reqs[i] = ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&ws.Items[i])}
			}
			return reqs
		}))
		read = func(ctx context.Context, _ ctrl.Request, w *testapi.Widget) error {
			return mgr.GetClient().Get(ctx, types.NamespacedName{Namespace: w.Namespace, Name: w.Spec.Message}, &corev1.Secret{})
		}
	case "track", "track-unstripped":
		refs := track.New(mgr.GetAPIReader(), mgr.GetScheme())
		bld = bld.WatchesMetadata(&corev1.Secret{}, refs.Enqueue(&corev1.Secret{}))
		read = func(ctx context.Context, req ctrl.Request, w *testapi.Widget) error {
			reads := refs.For(req.NamespacedName)
			defer reads.Done()
			return reads.Get(ctx, types.NamespacedName{Namespace: w.Namespace, Name: w.Spec.Message}, &corev1.Secret{})
		}
	default:
		return fmt.Errorf("unknown mode %q", mode)
	}
	if err := bld.Complete(ctrlReconcilerFunc(func(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
		var w testapi.Widget
		if err := mgr.GetClient().Get(ctx, req.NamespacedName, &w); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
		if err := read(ctx, req, &w); err != nil {
			return ctrl.Result{}, err
		}
		mu.Lock()
		seen[req.NamespacedName] = true
		if len(seen) == memoryReaders {
			close(done)
		}
		mu.Unlock()
		return ctrl.Result{}, nil
	})); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- mgr.Start(ctx) }()
	select {
	case <-done:
	case err := <-errc:
		return fmt.Errorf("manager stopped: %w", err)
	case <-ctx.Done():
		return fmt.Errorf("%s: the Widgets were not all reconciled", mode)
	}
	time.Sleep(2 * time.Second) // what follows the last reconcile settles
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	f := memoryFigures{RSS: rss(), HeapInUse: ms.HeapInuse}
	out, err := json.Marshal(f)
	if err != nil {
		return err
	}
	fmt.Println(string(out))
	cancel()
	return <-errc
}

// rss returns the process's resident set (VmRSS of /proc/self/status), in
// bytes; 0 where there is no /proc.
func rss() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
