package freshness

import (
	"context"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/tracing"
)

// The attributes of the span of a read's wait for the cache.
const (
	// waitOutcomeKey is how the wait ended: "caught_up" or "gave_up", as
	// the metric reconcilekit_stale_reads_total counts it.
	waitOutcomeKey = attribute.Key("reconcilekit.freshness.outcome")
	// waitObjectKey is the object read: "Kind namespace/name".
	waitObjectKey = attribute.Key("reconcilekit.freshness.object")
)

// guarded is a client whose writes a Tracker remembers and whose reads wait
// for the cache to catch up with them.
type guarded struct {
	client.Client
	t *Tracker
}

// keyOf identifies obj for the tracker; ok is false when its kind is unknown.
func (g *guarded) keyOf(obj runtime.Object, namespace, name string) (key, bool) {
	gvk, err := g.Client.GroupVersionKindFor(obj)
	if err != nil || gvk.Kind == "" {
		return key{}, false
	}
	return key{gvk: gvk, namespace: namespace, name: name}, true
}

// form names the informer a read of obj goes through: the cache keeps
// typed, unstructured and metadata-only informers apart.
func form(obj runtime.Object) string {
	switch obj.(type) {
	case *unstructured.Unstructured, *unstructured.UnstructuredList:
		return "unstructured"
	case *metav1.PartialObjectMetadata, *metav1.PartialObjectMetadataList:
		return "metadata"
	}
	return "typed"
}

// Get reads through the wrapped client and, when the object is one this
// process wrote and the copy is older than that write, waits for the cache.
func (g *guarded) Get(ctx context.Context, k client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := g.t.valid(); err != nil {
		return err
	}
	tk, ok := g.keyOf(obj, k.Namespace, k.Name)
	if !ok {
		return g.Client.Get(ctx, k, obj, opts...)
	}
	g.t.watchReads(ctx, tk.gvk, form(obj), obj)
	return g.await(ctx, tk, obj, func() error { return g.Client.Get(ctx, k, obj, opts...) })
}

// await reads (read fills obj) and returns the result (err, with obj
// filled when found) once it reflects the tracked write of tk, reading
// again when an informer event says the cache moved; or a *StaleError after
// MaxWait.
func (g *guarded) await(ctx context.Context, tk key, obj client.Object, read func() error) error {
	e, done, err := g.readOnce(tk, obj, read)
	if done {
		return err
	}
	// The wait runs on real timers (Tracker.Clock), so it is measured by
	// the real clock.
	start := clock.RealClock{}.Now()
	outcome := "gave_up"
	// The wait is a span of the traced reconcile it holds up (package
	// tracing); nothing with tracing off.
	span := tracing.Wait(ctx, "cache")
	defer func() {
		staleReadsTotal.WithLabelValues(outcome).Inc()
		if span.IsRecording() {
			span.SetAttributes(waitOutcomeKey.String(outcome), waitObjectKey.String(tk.gvk.Kind+" "+tk.namespace+"/"+tk.name))
		}
		span.End()
	}()
	wait := g.t.maxWait()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		ch := g.t.subscribe(ctx, tk, form(obj), obj)
		if ch == nil {
			return g.stale(tk, e, start)
		}
		// Read again now that a wake-up is registered, so an event that
		// came in between is not missed.
		cur, done, err := g.readOnce(tk, obj, read)
		if done {
			g.t.unsubscribe(tk, ch)
			if err == nil || apierrors.IsNotFound(err) {
				outcome = "caught_up"
			}
			return err
		}
		e = cur
		select {
		case <-ch:
		case <-timer.C:
			g.t.unsubscribe(tk, ch)
			return g.stale(tk, e, start)
		case <-ctx.Done():
			g.t.unsubscribe(tk, ch)
			return ctx.Err()
		}
	}
}

// readOnce reads once and reports done when the result is final: an error
// other than NotFound, or a result that reflects the tracked write of tk
// (whose entry it then drops). What the tracker knows is taken before the
// read: an informer that catches up while a read is under way does not
// make that read fresh. e is the entry the read was checked against.
func (g *guarded) readOnce(tk key, obj client.Object, read func() error) (e entry, done bool, err error) {
	e, tracked, settled := g.t.snapshot(tk, form(obj))
	err = read()
	switch {
	case err != nil && !apierrors.IsNotFound(err):
		return e, true, err
	case !tracked:
		return e, true, err
	case settled || fresh(e, err == nil, obj):
		g.t.caughtUp(tk, e)
		return e, true, err
	}
	return e, false, err
}

func (g *guarded) stale(tk key, e entry, start time.Time) error {
	return &StaleError{Kind: tk.gvk.Kind, Key: client.ObjectKey{Namespace: tk.namespace, Name: tk.name},
		Want: e.want(), Waited: clock.RealClock{}.Since(start)}
}

// List reads through the wrapped client and, when this process wrote
// objects of the list's kind in its namespace that the cache has not caught
// up with, waits for them and lists again.
func (g *guarded) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := g.t.valid(); err != nil {
		return err
	}
	gvk, err := g.Client.GroupVersionKindFor(list)
	if err != nil || !strings.HasSuffix(gvk.Kind, "List") {
		return g.Client.List(ctx, list, opts...)
	}
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	item, ok := g.newItem(list, gvk)
	if !ok {
		return g.Client.List(ctx, list, opts...)
	}
	g.t.watchReads(ctx, gvk, form(list), item)
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	// The writes the list may not show, known before it is read.
	unsettled := g.t.unsettled(gvk, lo.Namespace, form(list))
	if err := g.Client.List(ctx, list, opts...); err != nil {
		return err
	}
	if len(unsettled) == 0 {
		return nil
	}
	listed := map[client.ObjectKey]metav1.Object{}
	_ = meta.EachListItem(list, func(o runtime.Object) error {
		if m, err := meta.Accessor(o); err == nil {
			listed[client.ObjectKey{Namespace: m.GetNamespace(), Name: m.GetName()}] = m
		}
		return nil
	})
	waited := false
	for _, e := range unsettled {
		k := client.ObjectKey{Namespace: e.key.namespace, Name: e.key.name}
		m, found := listed[k]
		if (found || e.deleted) && fresh(e, found, m) {
			g.t.caughtUp(e.key, e)
			continue
		}
		// Behind, or missing: a stale list may miss an object this
		// process created, or changed so that it now matches the list's
		// selector, and one it need not show (another selector, deleted
		// by someone else) looks the same. Wait for the object itself,
		// then list again.
		item, _ := g.newItem(list, gvk)
		if err := g.await(ctx, e.key, item, func() error { return g.Client.Get(ctx, k, item) }); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		waited = true
	}
	if waited {
		return g.Client.List(ctx, list, opts...)
	}
	return nil
}

// newItem returns an empty object of the list's item type.
func (g *guarded) newItem(list client.ObjectList, gvk schema.GroupVersionKind) (client.Object, bool) {
	switch list.(type) {
	case *unstructured.UnstructuredList:
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		return u, true
	case *metav1.PartialObjectMetadataList:
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(gvk)
		return m, true
	}
	o, err := g.Client.Scheme().New(gvk)
	if err != nil {
		return nil, false
	}
	obj, ok := o.(client.Object)
	return obj, ok
}

// wrote remembers obj, which holds the server's answer, after a write that
// succeeded and was not a dry run (which changes nothing the cache will ever
// see); it returns the write's error.
func (g *guarded) wrote(err error, dryRun []string, obj any, created bool) error {
	if err != nil || len(dryRun) > 0 {
		return err
	}
	if o, ok := obj.(client.Object); ok {
		if k, ok := g.keyOf(o, o.GetNamespace(), o.GetName()); ok {
			g.t.record(k, o, created)
		}
	}
	return nil
}

// Create creates obj and remembers it.
func (g *guarded) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if err := g.t.valid(); err != nil {
		return err
	}
	return g.wrote(g.Client.Create(ctx, obj, opts...), (&client.CreateOptions{}).ApplyOptions(opts).DryRun, obj, true)
}

// Update updates obj and remembers the new version.
func (g *guarded) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	if err := g.t.valid(); err != nil {
		return err
	}
	return g.wrote(g.Client.Update(ctx, obj, opts...), (&client.UpdateOptions{}).ApplyOptions(opts).DryRun, obj, false)
}

// Patch patches obj and remembers the new version.
func (g *guarded) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if err := g.t.valid(); err != nil {
		return err
	}
	return g.wrote(g.Client.Patch(ctx, obj, patch, opts...), (&client.PatchOptions{}).ApplyOptions(opts).DryRun, obj, false)
}

// Apply applies obj and, for an unstructured apply configuration (whose
// answer the client decodes into it), remembers the new version.
func (g *guarded) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	if err := g.t.valid(); err != nil {
		return err
	}
	return g.wrote(g.Client.Apply(ctx, obj, opts...), (&client.ApplyOptions{}).ApplyOptions(opts).DryRun, obj, false)
}

// Delete deletes obj and remembers that it should be gone (or, with
// finalizers, marked for deletion).
func (g *guarded) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	if err := g.t.valid(); err != nil {
		return err
	}
	err := g.Client.Delete(ctx, obj, opts...)
	if (err == nil || apierrors.IsNotFound(err)) && len((&client.DeleteOptions{}).ApplyOptions(opts).DryRun) == 0 {
		if k, ok := g.keyOf(obj, obj.GetNamespace(), obj.GetName()); ok {
			g.t.recordDelete(k, obj)
		}
	}
	return err
}

// Status returns the status writer, whose writes are remembered too.
func (g *guarded) Status() client.SubResourceWriter {
	return &subWriter{SubResourceWriter: g.Client.Status(), g: g}
}

// SubResource returns a client for the subresource, whose writes are
// remembered too.
func (g *guarded) SubResource(subResource string) client.SubResourceClient {
	c := g.Client.SubResource(subResource)
	return &subClient{SubResourceReader: c, subWriter: subWriter{SubResourceWriter: c, g: g}}
}

type subWriter struct {
	client.SubResourceWriter
	g *guarded
}

// Update updates the subresource and remembers the object's new version.
func (w *subWriter) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	if err := w.g.t.valid(); err != nil {
		return err
	}
	return w.g.wrote(w.SubResourceWriter.Update(ctx, obj, opts...), (&client.SubResourceUpdateOptions{}).ApplyOptions(opts).DryRun, obj, false)
}

// Patch patches the subresource and remembers the object's new version.
func (w *subWriter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	if err := w.g.t.valid(); err != nil {
		return err
	}
	return w.g.wrote(w.SubResourceWriter.Patch(ctx, obj, patch, opts...), (&client.SubResourcePatchOptions{}).ApplyOptions(opts).DryRun, obj, false)
}

// Apply applies the subresource and, for an unstructured apply
// configuration, remembers the object's new version.
func (w *subWriter) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	if err := w.g.t.valid(); err != nil {
		return err
	}
	return w.g.wrote(w.SubResourceWriter.Apply(ctx, obj, opts...), (&client.SubResourceApplyOptions{}).ApplyOpts(opts).DryRun, obj, false)
}

type subClient struct {
	client.SubResourceReader
	subWriter
}
