package bare

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"

	atv1 "github.com/reconcilekit/reconcilekit/examples/at/api/v1alpha1"
	"github.com/reconcilekit/reconcilekit/examples/at/bench/internal/atrecord"
)

// Name is the controller's name: its field manager, its events' reporting
// controller, and the controller label of its metrics.
const Name = "bare-at"

// conflictDelay is how long a conflicting reconcile waits before it runs
// again (the library's requeue.Policy default).
const conflictDelay = 100 * time.Millisecond

// Controller is the bare At controller. Config is required; the zero
// values of the other fields work.
type Controller struct {
	// Config reaches the API server.
	Config *rest.Config
	// Namespace limits the controller to one namespace; "" is every
	// namespace.
	Namespace string
	// Workers is how many Ats are reconciled at once; zero means 4, the
	// library At's default.
	Workers int
	// Observe, when set, is told of each reconcile: how long it took and
	// its result ("success", "error", "requeue_after").
	Observe func(d time.Duration, result string)

	ats    rest.Interface
	core   kubernetes.Interface
	queue  workqueue.TypedRateLimitingInterface[types.NamespacedName]
	events chan *eventsv1.Event
	host   string

	mu   sync.Mutex
	seen map[types.NamespacedName]atSeen // what the At filter compares
	done map[types.UID]bool              // Pods seen finished
}

// atSeen is what the controller remembers of an At between two of its
// events: what decides whether an update is worth a reconcile.
type atSeen struct {
	generation int64
	finalizers int
	deleting   bool
}

// newAtClient returns a REST client of the At API.
func newAtClient(cfg *rest.Config) (rest.Interface, error) {
	scheme := runtime.NewScheme()
	if err := atv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	metav1.AddToGroupVersion(scheme, atv1.GroupVersion)
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &atv1.GroupVersion
	c.APIPath = "/apis"
	c.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	return rest.RESTClientFor(c)
}

// Run runs the controller until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	if c.Config == nil {
		return errors.New("bare: Controller.Config is required")
	}
	var err error
	if c.ats, err = newAtClient(c.Config); err != nil {
		return fmt.Errorf("bare: the At client: %w", err)
	}
	if c.core, err = kubernetes.NewForConfig(c.Config); err != nil {
		return fmt.Errorf("bare: the core client: %w", err)
	}
	c.host, _ = os.Hostname()
	c.queue = workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName](),
		workqueue.TypedRateLimitingQueueConfig[types.NamespacedName]{Name: Name})
	c.events = make(chan *eventsv1.Event, 1024)
	c.seen = map[types.NamespacedName]atSeen{}
	c.done = map[types.UID]bool{}
	workers := c.Workers
	if workers <= 0 {
		workers = 4
	}
	var wg sync.WaitGroup
	wg.Go(func() { c.watchAts(ctx) })
	wg.Go(func() { c.watchPods(ctx) })
	wg.Go(func() { c.sendEvents(ctx) })
	for range workers {
		wg.Go(func() {
			for c.next(ctx) {
			}
		})
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
	return nil
}

// listWatch lists, then watches from where the list stood, calling handle
// for each object seen (the listed ones as added), until ctx ends; it lists
// again when the watch ends with an error (a resourceVersion too old).
func listWatch(ctx context.Context, list func(context.Context) (runtime.Object, error), watchFrom func(context.Context, string) (watch.Interface, error), handle func(watch.EventType, runtime.Object)) {
	for ctx.Err() == nil {
		l, err := list(ctx)
		if err != nil {
			sleep(ctx, time.Second)
			continue
		}
		rv, _ := meta.NewAccessor().ResourceVersion(l)
		items, _ := meta.ExtractList(l)
		for _, o := range items {
			handle(watch.Added, o)
		}
		l, items = nil, nil
		for ctx.Err() == nil {
			w, err := watchFrom(ctx, rv)
			if err != nil {
				sleep(ctx, time.Second)
				break
			}
			relist := false
			for ev := range w.ResultChan() {
				if ev.Type == watch.Error {
					relist = true
					break
				}
				if a, err := meta.Accessor(ev.Object); err == nil {
					rv = a.GetResourceVersion()
				}
				if ev.Type != watch.Bookmark {
					handle(ev.Type, ev.Object)
				}
			}
			w.Stop()
			if relist {
				break
			}
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// watchAts enqueues an At when it is added, when its generation, its
// finalizers or its deletion changed (not on its status: the controller's
// own writes), and forgets it when it is gone.
func (c *Controller) watchAts(ctx context.Context) {
	list := func(ctx context.Context) (runtime.Object, error) {
		out := &atv1.AtList{}
		return out, c.ats.Get().Namespace(c.Namespace).Resource("ats").Do(ctx).Into(out)
	}
	watchFrom := func(ctx context.Context, rv string) (watch.Interface, error) {
		return c.ats.Get().Namespace(c.Namespace).Resource("ats").
			VersionedParams(&metav1.ListOptions{Watch: true, ResourceVersion: rv, AllowWatchBookmarks: true}, metav1.ParameterCodec).Watch(ctx)
	}
	listWatch(ctx, list, watchFrom, func(t watch.EventType, o runtime.Object) {
		at, ok := o.(*atv1.At)
		if !ok {
			return
		}
		key := types.NamespacedName{Namespace: at.Namespace, Name: at.Name}
		now := atSeen{generation: at.Generation, finalizers: len(at.Finalizers), deleting: at.DeletionTimestamp != nil}
		c.mu.Lock()
		before, known := c.seen[key]
		if t == watch.Deleted {
			delete(c.seen, key)
		} else {
			c.seen[key] = now
		}
		c.mu.Unlock()
		if t == watch.Added || t == watch.Modified && (!known || before != now) {
			c.queue.Add(key)
		}
	})
}

// watchPods enqueues a Pod's At when the Pod is first seen finished, and
// when it is gone.
func (c *Controller) watchPods(ctx context.Context) {
	opts := metav1.ListOptions{LabelSelector: atrecord.AtUIDLabel}
	list := func(ctx context.Context) (runtime.Object, error) {
		return c.core.CoreV1().Pods(c.Namespace).List(ctx, opts)
	}
	watchFrom := func(ctx context.Context, rv string) (watch.Interface, error) {
		o := opts
		o.ResourceVersion, o.AllowWatchBookmarks = rv, true
		return c.core.CoreV1().Pods(c.Namespace).Watch(ctx, o)
	}
	listWatch(ctx, list, watchFrom, func(t watch.EventType, o runtime.Object) {
		pod, ok := o.(*corev1.Pod)
		if !ok {
			return
		}
		ref := metav1.GetControllerOfNoCopy(pod)
		if ref == nil || ref.Kind != "At" {
			return
		}
		key := types.NamespacedName{Namespace: pod.Namespace, Name: ref.Name}
		finished := pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
		c.mu.Lock()
		first := finished && !c.done[pod.UID]
		if t == watch.Deleted {
			delete(c.done, pod.UID)
		} else if finished {
			c.done[pod.UID] = true
		}
		c.mu.Unlock()
		if t == watch.Deleted || first {
			c.queue.Add(key)
		}
	})
}

// next reconciles the next At of the queue; false when the queue is shut
// down.
func (c *Controller) next(ctx context.Context) bool {
	key, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(key)
	start := time.Now()
	after, err := c.reconcile(ctx, key)
	result := "success"
	switch {
	case err != nil:
		result = "error"
		c.queue.AddRateLimited(key)
	case after > 0:
		result = "requeue_after"
		c.queue.Forget(key)
		c.queue.AddAfter(key, after)
	default:
		c.queue.Forget(key)
	}
	if c.Observe != nil {
		c.Observe(time.Since(start), result)
	}
	return true
}

// errTerminal marks an error no retry fixes (a schedule that does not
// parse): reported on the conditions, never retried.
var errTerminal = errors.New("terminal")

// reconcile moves an At through PENDING -> RUNNING -> DONE, as the library's
// At does, and says when to look again.
func (c *Controller) reconcile(ctx context.Context, key types.NamespacedName) (time.Duration, error) {
	at := &atv1.At{}
	err := c.ats.Get().Namespace(key.Namespace).Resource("ats").Name(key.Name).Do(ctx).Into(at)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return 0, nil
		}
		return 0, err
	}
	if at.DeletionTimestamp != nil {
		return quiet(c.finalize(ctx, at))
	}
	if !hasFinalizer(at) {
		if err := c.patchFinalizers(ctx, at, append(append([]string(nil), at.Finalizers...), atrecord.PodCleanupFinalizer)); err != nil {
			return quiet(err)
		}
	}
	before := at.Status.DeepCopy()
	summaryBefore := atrecord.Summarize(at)
	after, s, err := c.advance(ctx, at)
	switch {
	case apierrors.IsConflict(err):
		return quiet(err)
	case err != nil && !errors.Is(err, errTerminal):
		return 0, err
	case err == nil && summaryBefore == "" && s.InProgress && atrecord.FirstStatusCanWait(at, after, time.Now()):
		return after, nil // the next reconcile, moments away, writes the status
	}
	atrecord.SetConditions(at, s, time.Now())
	at.Status.ObservedGeneration = at.Generation
	if !reflect.DeepEqual(before, &at.Status) {
		if werr := c.patchStatus(ctx, at, before); werr != nil {
			if err != nil {
				return 0, nil // terminal: never retried, as the library's At
			}
			return quiet(werr)
		}
		if summary := atrecord.Summarize(at); summary != summaryBefore {
			c.recordTransition(at, summary, s)
		}
	}
	return after, nil
}

// state is how far along an At is, for its conditions.
type state = atrecord.State

// advance moves the At along and says where it stands.
func (c *Controller) advance(ctx context.Context, at *atv1.At) (time.Duration, state, error) {
	switch at.Status.Phase {
	case atv1.PhaseDone:
		return 0, atrecord.StateOf(at), nil
	case atv1.PhaseRunning:
		pod, err := c.core.CoreV1().Pods(at.Namespace).Get(ctx, at.Status.PodName, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			at.Status.Phase, at.Status.Outcome = atv1.PhaseDone, atv1.OutcomeFailed
		case err != nil:
			return 0, state{}, fmt.Errorf("get pod %s: %w", at.Status.PodName, err)
		default:
			atrecord.Observe(at, pod)
		}
		return 0, atrecord.StateOf(at), nil
	}
	when, err := time.Parse(time.RFC3339, strings.ToUpper(at.Spec.Schedule))
	if err != nil {
		msg := fmt.Sprintf("spec.schedule %q is not an RFC 3339 time", at.Spec.Schedule)
		return 0, state{Reason: atrecord.ReasonInvalidSchedule, Message: msg}, fmt.Errorf("%s: %w", msg, errTerminal)
	}
	at.Status.Phase = atv1.PhasePending
	if d := time.Until(when); d > 0 {
		return d, atrecord.StateOf(at), nil
	}
	pod := desiredPod(at)
	created, err := c.core.CoreV1().Pods(at.Namespace).Create(ctx, pod, metav1.CreateOptions{FieldManager: Name})
	if apierrors.IsAlreadyExists(err) {
		// Created by an earlier reconcile whose status write did not go
		// through: look at it, as no Pod event may come.
		created, err = c.core.CoreV1().Pods(at.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	}
	if err != nil {
		return 0, state{}, fmt.Errorf("create pod %s: %w", pod.Name, err)
	}
	at.Status.Phase, at.Status.PodName = atv1.PhaseRunning, created.Name
	atrecord.Observe(at, created)
	return 0, atrecord.StateOf(at), nil
}

// finalize deletes a Pod still running when its At is deleted, then removes
// the finalizer.
func (c *Controller) finalize(ctx context.Context, at *atv1.At) error {
	if !hasFinalizer(at) {
		return nil
	}
	if at.Status.Phase != atv1.PhaseDone {
		name := atrecord.PodName(at)
		err := c.core.CoreV1().Pods(at.Namespace).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
		switch {
		case err == nil:
			pod := &corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: at.Namespace, Name: name}
			c.record(at, pod, corev1.EventTypeNormal, atrecord.ReasonPodDeleted, "Finalize", "deleted pod "+name)
		case !apierrors.IsNotFound(err):
			return fmt.Errorf("delete pod %s: %w", name, err)
		}
	}
	var kept []string
	for _, f := range at.Finalizers {
		if f != atrecord.PodCleanupFinalizer {
			kept = append(kept, f)
		}
	}
	err := c.patchFinalizers(ctx, at, kept)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func hasFinalizer(at *atv1.At) bool {
	for _, f := range at.Finalizers {
		if f == atrecord.PodCleanupFinalizer {
			return true
		}
	}
	return false
}

// patchFinalizers writes the At's finalizers with a merge patch locked by
// its resourceVersion, as the library's finalizer writer does, and leaves
// the server's answer in at.
func (c *Controller) patchFinalizers(ctx context.Context, at *atv1.At, finalizers []string) error {
	if finalizers == nil {
		finalizers = []string{}
	}
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": finalizers, "resourceVersion": at.ResourceVersion}})
	if err != nil {
		return err
	}
	out := &atv1.At{}
	err = c.ats.Patch(types.MergePatchType).Namespace(at.Namespace).Resource("ats").Name(at.Name).
		Param("fieldManager", Name).Body(body).Do(ctx).Into(out)
	if err != nil {
		return err
	}
	*at = *out
	return nil
}

// patchStatus writes what changed in the At's status since before, with a
// merge patch locked by its resourceVersion, as the library's status writer
// does.
func (c *Controller) patchStatus(ctx context.Context, at *atv1.At, before *atv1.AtStatus) error {
	old, err := jsonMap(before)
	if err != nil {
		return err
	}
	now, err := jsonMap(&at.Status)
	if err != nil {
		return err
	}
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": at.ResourceVersion}, "status": MergeDiff(old, now)})
	if err != nil {
		return err
	}
	out := &atv1.At{}
	err = c.ats.Patch(types.MergePatchType).Namespace(at.Namespace).Resource("ats").Name(at.Name).SubResource("status").
		Param("fieldManager", Name).Body(body).Do(ctx).Into(out)
	if err != nil {
		return err
	}
	*at = *out
	return nil
}

func jsonMap(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(b, &m)
}

// MergeDiff returns the JSON merge patch (RFC 7386) that turns before into
// after: changed and new fields with their values, removed ones as null,
// objects by field, anything else (lists included) whole.
func MergeDiff(before, after map[string]any) map[string]any {
	out := map[string]any{}
	for k, a := range after {
		b, ok := before[k]
		switch {
		case !ok:
			out[k] = a
		case reflect.DeepEqual(a, b):
		default:
			am, aok := a.(map[string]any)
			bm, bok := b.(map[string]any)
			if aok && bok {
				out[k] = MergeDiff(bm, am)
			} else {
				out[k] = a
			}
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			out[k] = nil
		}
	}
	return out
}

// recordTransition records a Normal event when the At became Ready and a
// Warning when it stalled.
func (c *Controller) recordTransition(at *atv1.At, summary string, s state) {
	switch {
	case strings.HasPrefix(summary, atrecord.TypeStalled+"\x00"):
		c.record(at, nil, corev1.EventTypeWarning, s.Reason, atrecord.TypeStalled, s.Message)
	case strings.HasPrefix(summary, atrecord.TypeReady+"\x00"):
		c.record(at, nil, corev1.EventTypeNormal, s.Reason, atrecord.TypeReady, s.Message)
	}
}

// record queues an event about at, as client-go's events recorder makes
// it; sendEvents creates it.
func (c *Controller) record(at *atv1.At, related *corev1.ObjectReference, eventType, reason, action, note string) {
	now := time.Now()
	ev := &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: fmt.Sprintf("%v.%x", at.Name, now.UnixNano()), Namespace: at.Namespace},
		EventTime:           metav1.NewMicroTime(now),
		ReportingController: Name,
		ReportingInstance:   Name + "-" + c.host,
		Action:              action,
		Reason:              reason,
		Regarding: corev1.ObjectReference{Kind: "At", APIVersion: atv1.GroupVersion.String(), Namespace: at.Namespace, Name: at.Name,
			UID: at.UID, ResourceVersion: at.ResourceVersion},
		Related: related,
		Note:    note,
		Type:    eventType,
	}
	select {
	case c.events <- ev:
	default: // a full queue drops it, as the recorder's broadcaster does
	}
}

// sendEvents creates the recorded events, one request each, until ctx
// ends.
func (c *Controller) sendEvents(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-c.events:
			_, _ = c.core.EventsV1().Events(ev.Namespace).Create(ctx, ev, metav1.CreateOptions{})
		}
	}
}

// quiet turns a conflict into a short requeue without an error: the
// reconcile saw an old At and the next one decides.
func quiet(err error) (time.Duration, error) {
	if apierrors.IsConflict(err) {
		return conflictDelay, nil
	}
	return 0, err
}

// desiredPod is the At's Pod, controlled by the At.
func desiredPod(at *atv1.At) *corev1.Pod {
	image := at.Spec.Image
	if image == "" {
		image = atv1.DefaultImage
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: at.Namespace,
			Name:      atrecord.PodName(at),
			Labels:    map[string]string{atrecord.AtUIDLabel: string(at.UID)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: atv1.GroupVersion.String(), Kind: "At", Name: at.Name, UID: at.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name:    "command",
				Image:   image,
				Command: []string{"/bin/sh", "-c", at.Spec.Command},
			}},
		},
	}
}
