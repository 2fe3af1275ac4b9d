// Command demo runs the At operator end to end on a laptop with nothing
// installed but Go: an embedded control plane (the kube-apiserver and etcd
// that reconcilekit's tests use), the At CRD, kwok to play the kubelet, a
// ten-line binder to play the scheduler, and the At controller. It creates a
// sample At scheduled a few seconds ahead and prints its life as it happens:
// PENDING -> RUNNING (with its Pod) -> DONE.
//
// Run it with `make demo` from the repository root, which builds (once) and
// caches the binaries and sets KUBEBUILDER_ASSETS. While it runs, point
// kubectl at the kubeconfig it prints to watch beside it:
//
//	kubectl get ats,pods -w
package main

import (
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/go-logr/logr"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	atv1 "github.com/reconcilekit/reconcilekit/examples/at/api/v1alpha1"
	"github.com/reconcilekit/reconcilekit/examples/at/internal/controller"
	"github.com/reconcilekit/reconcilekit/tracing"
)

//go:embed kwok-stages.yaml
var kwokStages []byte

const nodeName = "kwok-node-0"

func main() {
	crdDir := flag.String("crd-dir", "examples/at/config/crd", "directory of the At CRD")
	// Past controller.FirstStatusWithin, so the demo shows PENDING too.
	in := flag.Duration("in", controller.FirstStatusWithin+2*time.Second, "schedule the sample At this far ahead")
	keep := flag.Bool("keep", false, "keep running after the sample is DONE, until Ctrl-C")
	verbose := flag.Bool("v", false, "show the controller's logs")
	flag.Parse()
	logger := zap.New(zap.UseDevMode(true))
	if !*verbose {
		// Errors only, without stack traces: the demo's output is its story.
		logger = zap.New(zap.UseDevMode(false), zap.Level(zapcore.ErrorLevel), zap.StacktraceLevel(zapcore.PanicLevel))
	}
	// The shutdown is quiet: what stopping cancels is not an error.
	var stopping atomic.Bool
	ctrl.SetLogger(logr.New(quietStop{LogSink: logger.GetSink(), stopping: &stopping}))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, func() { stopping.Store(true) }) // Ctrl-C
	if err := run(ctx, *crdDir, *in, *keep, &stopping); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func say(format string, args ...any) {
	fmt.Printf("%s  "+format+"\n", append([]any{time.Now().Format("15:04:05.000")}, args...)...)
}

func run(ctx context.Context, crdDir string, in time.Duration, keep bool, stopping *atomic.Bool) (err error) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	kwokBin := filepath.Join(assets, "kwok")
	if assets == "" {
		return errors.New("KUBEBUILDER_ASSETS is not set: run `make demo` from the repository root")
	}
	if _, err := os.Stat(kwokBin); err != nil {
		return fmt.Errorf("no kwok in %s: run `make demo`, which builds it: %w", assets, err)
	}

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := atv1.AddToScheme(scheme); err != nil {
		return err
	}

	say("starting an embedded control plane (kube-apiserver + etcd from %s)", assets)
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{crdDir},
		ErrorIfCRDPathMissing: true,
		Scheme:                scheme,
	}
	cfg, err := env.Start()
	if err != nil {
		_ = env.Stop() // envtest may fail with the plane running (a CRD it cannot install)
		return fmt.Errorf("starting the control plane: %w", err)
	}
	defer func() {
		say("stopping the control plane")
		if stopErr := env.Stop(); stopErr != nil && err == nil {
			err = stopErr
		}
	}()
	say("control plane up at %s; At CRD installed", cfg.Host)

	work, err := os.MkdirTemp("", "reconcilekit-at-demo-")
	if err != nil {
		return err
	}
	defer func() {
		// Keep the kubeconfig and kwok's log when something went wrong.
		if err == nil {
			_ = os.RemoveAll(work)
		}
	}()
	user, err := env.AddUser(envtest.User{Name: "demo-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return err
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return err
	}
	kubeconfigPath := filepath.Join(work, "kubeconfig")
	if err := os.WriteFile(kubeconfigPath, kubeconfig, 0o600); err != nil {
		return err
	}
	say("kubeconfig: %s   (try: KUBECONFIG=%s kubectl get ats,pods -w)", kubeconfigPath, kubeconfigPath)

	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}

	// kwok plays the kubelet on one fake node.
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName,
		Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
		Labels:      map[string]string{"type": "kwok"}}}
	if err := c.Create(ctx, node); err != nil {
		return fmt.Errorf("creating the fake node: %w", err)
	}
	stagesPath := filepath.Join(work, "kwok-stages.yaml")
	if err := os.WriteFile(stagesPath, kwokStages, 0o644); err != nil {
		return err
	}
	kwokLog, err := os.Create(filepath.Join(work, "kwok.log"))
	if err != nil {
		return err
	}
	defer kwokLog.Close()
	kwok := exec.Command(kwokBin, "--kubeconfig="+kubeconfigPath, "--manage-all-nodes=true",
		"--config="+stagesPath)
	kwok.Stdout, kwok.Stderr = kwokLog, kwokLog
	kwok.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := kwok.Start(); err != nil {
		return fmt.Errorf("starting kwok: %w", err)
	}
	defer func() {
		_ = syscall.Kill(-kwok.Process.Pid, syscall.SIGTERM)
		_ = kwok.Wait()
		say("kwok stopped")
	}()
	say("kwok running as the kubelet of node %s (log: %s)", nodeName, kwokLog.Name())

	// Tracing on, into memory: the demo prints the At's trace at the end.
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	mgr, err := ctrl.NewManager(tracing.Config(cfg, tp), ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{ByObject: controller.CacheByObject()},
	})
	if err != nil {
		return err
	}
	if err := controller.SetupWithManager(mgr, controller.Options{Tracer: tracing.New(tp)}); err != nil {
		return err
	}
	mgrCtx, stopMgr := context.WithCancel(ctx)
	mgrDone := make(chan error, 1)
	go func() { mgrDone <- mgr.Start(mgrCtx) }()
	defer func() {
		stopping.Store(true)
		stopMgr()
		<-mgrDone
		say("controller stopped")
	}()
	go bindPods(mgrCtx, c)
	say("At controller and pod binder started")

	at := &atv1.At{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "hello"},
		Spec: atv1.AtSpec{
			Schedule: time.Now().Add(in).UTC().Format(time.RFC3339),
			Command:  `echo "hello from an At"`,
		},
	}
	// The user's edit is a span of its own, whose traceparent the At
	// carries: the At's reconciles join its trace (a user's kubectl would
	// set the annotation the same way).
	userCtx, edit := tp.Tracer("demo").Start(ctx, "user creates At default/hello")
	tracing.Inject(userCtx, at)
	if err := c.Create(userCtx, at); err != nil {
		edit.End()
		return fmt.Errorf("creating the sample At: %w", err)
	}
	edit.End()
	say("created At default/hello: schedule %s, command %q", at.Spec.Schedule, at.Spec.Command)

	done, err := follow(ctx, c, at)
	if err != nil {
		return err
	}
	if done {
		say("the sample At is DONE; its events:")
		printEvents(ctx, c, at)
		// The last spans (the event's write) end moments after.
		time.Sleep(500 * time.Millisecond)
		say("its trace, from the user's create to DONE (each reconcile, write and wait):")
		waterfall(os.Stdout, spans.GetSpans(), edit.SpanContext().TraceID())
	}
	if keep && ctx.Err() == nil {
		say("still running (-keep); press Ctrl-C to stop")
		<-ctx.Done()
	}
	return nil
}

// follow prints the At's phase and conditions, and its Pod's phase, as they
// change, until the At is DONE or ctx ends.
func follow(ctx context.Context, c client.WithWatch, at *atv1.At) (bool, error) {
	deadline, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	ats, err := c.Watch(deadline, &atv1.AtList{}, client.InNamespace(at.Namespace))
	if err != nil {
		return false, err
	}
	defer ats.Stop()
	pods, err := c.Watch(deadline, &corev1.PodList{}, client.InNamespace(at.Namespace))
	if err != nil {
		return false, err
	}
	defer pods.Stop()

	var lastAt, lastPod string
	for {
		select {
		case <-deadline.Done():
			if ctx.Err() != nil {
				return false, nil
			}
			return false, errors.New("the sample At did not finish within 2 minutes")
		case ev, ok := <-ats.ResultChan():
			if !ok {
				return false, errors.New("watch on Ats closed")
			}
			a, isAt := ev.Object.(*atv1.At)
			if !isAt || ev.Type == watch.Deleted {
				continue
			}
			line := fmt.Sprintf("At %s: phase=%s", a.Name, orDash(string(a.Status.Phase)))
			for _, cond := range a.Status.Conditions {
				line += fmt.Sprintf(" %s=%s(%s)", cond.Type, cond.Status, cond.Reason)
			}
			if a.Status.Outcome != "" {
				line += " outcome=" + string(a.Status.Outcome)
			}
			if line != lastAt {
				say("%s", line)
				lastAt = line
			}
			if a.Status.Phase == atv1.PhaseDone {
				return true, nil
			}
		case ev, ok := <-pods.ResultChan():
			if !ok {
				return false, errors.New("watch on Pods closed")
			}
			p, isPod := ev.Object.(*corev1.Pod)
			if !isPod {
				continue
			}
			line := fmt.Sprintf("  Pod %s: %s phase=%s node=%s", p.Name, ev.Type, orDash(string(p.Status.Phase)), orDash(p.Spec.NodeName))
			if line != lastPod {
				say("%s", line)
				lastPod = line
			}
		}
	}
}

// bindPods is the demo's scheduler: envtest runs no kube-scheduler, so it
// binds every unscheduled Pod to the kwok node, as the scheduler would.
func bindPods(ctx context.Context, c client.WithWatch) {
	for ctx.Err() == nil {
		w, err := c.Watch(ctx, &corev1.PodList{})
		if err != nil {
			time.Sleep(time.Second)
			continue
		}
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type == watch.Deleted || p.Spec.NodeName != "" || p.DeletionTimestamp != nil {
				continue
			}
			binding := &corev1.Binding{
				ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name},
				Target:     corev1.ObjectReference{Kind: "Node", Name: nodeName},
			}
			if err := c.SubResource("binding").Create(ctx, p, binding); err != nil && !apierrors.IsConflict(err) && ctx.Err() == nil {
				say("  binder: %s/%s: %v", p.Namespace, p.Name, err)
			}
		}
	}
}

// printEvents prints the At's events once the last transition's has been
// written (the recorder writes them asynchronously), waiting up to 5 s.
func printEvents(ctx context.Context, c client.Client, at *atv1.At) {
	var list eventsv1.EventList
	deadline := time.Now().Add(5 * time.Second)
	for {
		list.Items = nil
		if err := c.List(ctx, &list, client.InNamespace(at.Namespace)); err != nil {
			say("  listing events: %v", err)
			return
		}
		last := false
		for _, e := range list.Items {
			if e.Regarding.Name == at.Name && e.Reason == controller.ReasonCommandSucceeded {
				last = true
			}
		}
		if last || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].EventTime.Before(&list.Items[j].EventTime) })
	for _, e := range list.Items {
		if e.Regarding.Kind == "At" && e.Regarding.Name == at.Name {
			say("  event %s %s: %s", e.Type, e.Reason, e.Note)
		}
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
