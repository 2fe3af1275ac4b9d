package controller_test

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	atv1 "github.com/reconcilekit/reconcilekit/examples/at/api/v1alpha1"
	"github.com/reconcilekit/reconcilekit/examples/at/internal/controller"
	"github.com/reconcilekit/reconcilekit/examples/at/internal/podtest"
)

// TestAnAtWakesWhenItsPodIsFirstSeenFinished cuts the Pod informer's watch
// as an API server restart does ("too old resource version") and holds its
// relist back while the At starts its Pod and the Pod finishes: the relist
// then brings the Pod, new to the cache and already Succeeded, as an add.
// That add must wake the At (DONE, succeeded), as it does when the watch
// delivers the Pod's finishing as an update: an At woken only by a Pod's
// change to finished waits for ever (issue 39: 112 of 1,000 sharded Ats
// RUNNING for good after three restarts).
func TestAnAtWakesWhenItsPodIsFirstSeenFinished(t *testing.T) {
	for _, tc := range []struct {
		name      string
		watchList bool
	}{{"streamed lists", true}, {"lists then watches", false}} {
		t.Run(tc.name, func(t *testing.T) {
			ns := env.Namespace(t)
			pods := &pausable{watchList: tc.watchList}
			c := startManagerWith(t, onTheDiet(t, cache.Options{
				ByObject: controller.CacheByObject(),
				NewInformer: func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, idx toolscache.Indexers) toolscache.SharedIndexInformer {
					if _, ok := obj.(*corev1.Pod); ok {
						pods.inner = toolscache.ToListerWatcherWithContext(lw)
						lw = pods
					}
					return toolscache.NewSharedIndexInformer(lw, obj, resync, idx)
				},
			}))
			// Every At and Pod informer in sync first.
			at := newAt(ns, "first-seen-finished", rfc3339(time.Now().Add(2*time.Second)))
			pods.cut()
			if err := c.Create(t.Context(), at); err != nil {
				t.Fatal(err)
			}
			at = waitFor(t, c, client.ObjectKeyFromObject(at), "RUNNING", func(a *atv1.At) bool { return a.Status.Phase == atv1.PhaseRunning })
			pod := &corev1.Pod{}
			if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: at.Status.PodName}, pod); err != nil {
				t.Fatal(err)
			}
			podtest.Complete(t.Context(), c, pod)
			pods.resume()
			done := waitFor(t, c, client.ObjectKeyFromObject(at), "DONE after the Pod informer listed again",
				func(a *atv1.At) bool { return a.Status.Phase == atv1.PhaseDone })
			if done.Status.Outcome != atv1.OutcomeSucceeded {
				t.Errorf("outcome = %q, want %q", done.Status.Outcome, atv1.OutcomeSucceeded)
			}
		})
	}
}

// startManagerWith runs the At controller under a manager with the cache
// options given, until the test ends, and returns a client of the API
// server.
func startManagerWith(t *testing.T, copts cache.Options) client.Client {
	t.Helper()
	c := env.Client(t)
	managerMu.Lock()
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:     env.Scheme,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		Cache:      copts,
	})
	if err != nil {
		managerMu.Unlock()
		t.Fatal(err)
	}
	if err := controller.SetupWithManager(mgr, controller.Options{}); err != nil {
		managerMu.Unlock()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
		managerMu.Unlock()
	})
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("the cache did not sync")
	}
	if _, err := mgr.GetCache().GetInformer(ctx, &corev1.Pod{}); err != nil {
		t.Fatal(err)
	}
	return c
}

// pausable is an informer's ListerWatcher that a test can cut off as an API
// server restart does: cut ends the watches with "too old resource
// version" (410 Expired) and holds every list and watch after it until
// resume.
type pausable struct {
	inner     toolscache.ListerWatcherWithContext
	watchList bool

	mu      sync.Mutex
	open    chan struct{} // closed while lists and watches may go on
	watches []*cutWatch
}

func (p *pausable) gate() chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.open == nil {
		p.open = make(chan struct{})
		close(p.open)
	}
	return p.open
}

func (p *pausable) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.open = make(chan struct{})
	for _, w := range p.watches {
		w.expire()
	}
	p.watches = nil
}

func (p *pausable) resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	close(p.open)
}

func (p *pausable) List(opts metav1.ListOptions) (runtime.Object, error) {
	return p.ListWithContext(context.Background(), opts)
}

func (p *pausable) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	select {
	case <-p.gate():
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return p.inner.ListWithContext(ctx, opts)
}

func (p *pausable) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return p.WatchWithContext(context.Background(), opts)
}

func (p *pausable) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	select {
	case <-p.gate():
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	w, err := p.inner.WatchWithContext(ctx, opts)
	if err != nil {
		return nil, err
	}
	cw := &cutWatch{inner: w, out: make(chan watch.Event), stop: make(chan struct{}), expired: make(chan struct{})}
	go cw.run()
	p.mu.Lock()
	p.watches = append(p.watches, cw)
	p.mu.Unlock()
	return cw, nil
}

// IsWatchListSemanticsUnSupported says whether the informer streams its
// lists (watch with initial events) or lists then watches.
func (p *pausable) IsWatchListSemanticsUnSupported() bool {
	return !p.watchList || watchlist.DoesClientNotSupportWatchListSemantics(p.inner)
}

// cutWatch passes a watch's events on until it is expired.
type cutWatch struct {
	inner    watch.Interface
	out      chan watch.Event
	stop     chan struct{}
	stopOnce sync.Once
	expired  chan struct{}
	expOnce  sync.Once
}

func (w *cutWatch) run() {
	defer close(w.out)
	defer w.inner.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-w.expired:
			st := apierrors.NewResourceExpired("too old resource version: the API server restarted").ErrStatus
			select {
			case w.out <- watch.Event{Type: watch.Error, Object: &st}:
			case <-w.stop:
			}
			return
		case ev, ok := <-w.inner.ResultChan():
			if !ok {
				return
			}
			select {
			case w.out <- ev:
			case <-w.stop:
				return
			case <-w.expired:
				// The event is lost with the connection.
			}
		}
	}
}

func (w *cutWatch) expire()                        { w.expOnce.Do(func() { close(w.expired) }) }
func (w *cutWatch) Stop()                          { w.stopOnce.Do(func() { close(w.stop) }) }
func (w *cutWatch) ResultChan() <-chan watch.Event { return w.out }
