package tracing_test

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reconcilekit/reconcilekit/drift"
	"github.com/reconcilekit/reconcilekit/internal/metricstest"
	"github.com/reconcilekit/reconcilekit/internal/otlptest"
	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest"
	"github.com/reconcilekit/reconcilekit/requeue"
	"github.com/reconcilekit/reconcilekit/tracing"
)

const fieldOwner = "tracing-test"

// fixture is a Loop of Widgets that ensures each Widget's ConfigMap, traced
// into an in-memory recorder, its requests counted beneath the tracing
// transport.
type fixture struct {
	c        client.Client
	loop     *reconcile.Loop[*testapi.Widget]
	tracer   *tracing.Tracer
	recorder *tracetest.SpanRecorder
	counter  *reconciletest.Counter
	ns       string
	// requeue is what Sync asks for.
	requeue time.Duration
}

// newFixture builds it; tp is the provider (nil: tracing off), made with
// the fixture's recorder when tp is nil and traced is true.
func newFixture(t *testing.T, traced bool, opts ...sdktrace.TracerProviderOption) *fixture {
	t.Helper()
	env.Require(t)
	f := &fixture{recorder: tracetest.NewSpanRecorder(), counter: &reconciletest.Counter{}, ns: env.Namespace(t)}
	var tp trace.TracerProvider
	if traced {
		provider := sdktrace.NewTracerProvider(append([]sdktrace.TracerProviderOption{sdktrace.WithSpanProcessor(f.recorder)}, opts...)...)
		t.Cleanup(func() { _ = provider.Shutdown(context.Background()) })
		tp = provider
	}
	// The counter beneath the tracing transport sees every request once.
	cfg := tracing.Config(f.counter.WrapConfig(env.Config), tp)
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	f.c = c
	f.tracer = tracing.New(tp)
	children := drift.NewWriter(c, fieldOwner)
	f.loop = reconcile.New(c, fieldOwner, func(ctx context.Context, w *testapi.Widget) (reconcile.Progress, error) {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: w.Name + "-config"},
			Data:       map[string]string{"replicas": "1"},
		}
		if _, err := children.Ensure(ctx, cm, drift.Owner(w)); err != nil {
			return reconcile.Progress{}, err
		}
		if f.requeue > 0 {
			return reconcile.Progress{State: reconcile.InProgress, Requeue: requeue.After(f.requeue)}, nil
		}
		return reconcile.Progress{Reason: "Configured"}, nil
	})
	f.loop.Tracer = f.tracer
	return f
}

func (f *fixture) widget(t *testing.T, name string, annotations map[string]string) *testapi.Widget {
	t.Helper()
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name, Annotations: annotations}}
	if err := f.c.Create(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	return w
}

func (f *fixture) reconcile(t *testing.T, name string) {
	t.Helper()
	if _, err := f.loop.Reconcile(t.Context(), crreconcile.Request{NamespacedName: types.NamespacedName{Namespace: f.ns, Name: name}}); err != nil {
		t.Fatalf("reconcile %s: %v", name, err)
	}
}

// spans returns the ended spans recorded since mark.
func (f *fixture) spans(mark int) []sdktrace.ReadOnlySpan { return f.recorder.Ended()[mark:] }

func named(spans []sdktrace.ReadOnlySpan, prefix string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if strings.HasPrefix(s.Name(), prefix) {
			out = append(out, s)
		}
	}
	return out
}

func writeSpans(spans []sdktrace.ReadOnlySpan) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.SpanKind() != trace.SpanKindClient {
			continue
		}
		switch strings.SplitN(s.Name(), " ", 2)[0] {
		case "POST", "PUT", "PATCH", "DELETE":
			out = append(out, s)
		}
	}
	return out
}

func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.Emit()
		}
	}
	return ""
}

func traceparent(sc trace.SpanContext) string {
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
}

// TestAReconcileIsASpanAndEachOfItsWritesAChild: the first reconcile of a
// Widget is one root span carrying the object; each write it sends (the
// ConfigMap's create, the status write) is a client span beneath it, as
// many as the transport counted; the ConfigMap carries the reconcile's
// trace context; and a converged resync is one span and no write.
func TestAReconcileIsASpanAndEachOfItsWritesAChild(t *testing.T) {
	f := newFixture(t, true)
	w := f.widget(t, "w", nil)
	f.counter.Reset()
	start := len(f.recorder.Ended())
	f.reconcile(t, "w")

	spans := f.spans(start)
	recs := named(spans, "reconcile")
	if len(recs) != 1 {
		t.Fatalf("reconcile spans: got %d, want 1: %v", len(recs), spans)
	}
	rec := recs[0]
	if rec.Parent().IsValid() {
		t.Errorf("the first reconcile of a Widget without a traceparent has a parent %v; want a new trace", rec.Parent())
	}
	for k, want := range map[string]string{
		"reconcilekit.object.name": "w", "k8s.namespace.name": f.ns, "reconcilekit.object.uid": string(w.UID),
		"reconcilekit.object.generation": "1", "reconcilekit.object.kind": "Widget", "reconcilekit.decision.class": "none",
		"reconcilekit.decision.reason": "Configured", "reconcilekit.decision.done": "true",
	} {
		if got := attr(rec, k); got != want {
			t.Errorf("reconcile span attribute %s = %q, want %q", k, got, want)
		}
	}
	writes := writeSpans(spans)
	if n := len(f.counter.Writes()); len(writes) != n || n != 2 {
		t.Errorf("write spans: %d; writes the transport counted: %d (want 2: the ConfigMap's create, the status write)\n%v", len(writes), n, f.counter.String())
	}
	for _, s := range writes {
		if s.Parent().SpanID() != rec.SpanContext().SpanID() || s.SpanContext().TraceID() != rec.SpanContext().TraceID() {
			t.Errorf("write span %q is not a child of the reconcile span", s.Name())
		}
	}
	if got := attr(writes[0], "reconcilekit.operation"); got != "drift.Writer.Ensure" {
		t.Errorf("the ConfigMap's create is labelled %q, want drift.Writer.Ensure", got)
	}
	var cm corev1.ConfigMap
	if err := f.c.Get(t.Context(), types.NamespacedName{Namespace: f.ns, Name: "w-config"}, &cm); err != nil {
		t.Fatal(err)
	}
	if got, want := cm.Annotations[tracing.Annotation], traceparent(rec.SpanContext()); got != want {
		t.Errorf("the ConfigMap's %s = %q, want the reconcile's %q", tracing.Annotation, got, want)
	}

	// A converged resync: one span, no write, the ConfigMap untouched
	// (the annotation, which our field manager owns, is not drift).
	mark := len(f.recorder.Ended())
	f.counter.Reset()
	f.reconcile(t, "w")
	spans = f.spans(mark)
	if recs := named(spans, "reconcile"); len(recs) != 1 || len(writeSpans(spans)) != 0 || len(f.counter.Writes()) != 0 {
		t.Errorf("a converged resync: %d reconcile spans, %d write spans, %d writes; want 1, 0, 0\n%v", len(recs), len(writeSpans(spans)), len(f.counter.Writes()), f.counter.String())
	}
	if recs := named(spans, "reconcile"); len(recs) == 1 && recs[0].SpanContext().TraceID() == rec.SpanContext().TraceID() {
		t.Errorf("a resync after the Widget was done joined the trace of its edit; want a trace of its own")
	}
}

// TestTheAPIServersSpanIsUnderTheWriteSpan: kube-apiserver, with tracing
// on, records its span for a write of the library as the child of the
// write's client span: same trace, parent the client span.
func TestTheAPIServersSpanIsUnderTheWriteSpan(t *testing.T) {
	f := newFixture(t, true)
	f.widget(t, "w", nil)
	f.reconcile(t, "w")
	writes := writeSpans(f.spans(0))
	if len(writes) == 0 {
		t.Fatal("no write span")
	}
	want := map[string]string{}
	for _, s := range writes {
		want[s.SpanContext().SpanID().String()] = s.SpanContext().TraceID().String()
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	got, err := receiver.WaitFor(ctx, func(spans []otlptest.Span) bool {
		found := map[string]bool{}
		for _, s := range spans {
			if trace, ok := want[s.ParentID]; ok && s.TraceID == trace && s.Service == "apiserver" {
				found[s.ParentID] = true
			}
		}
		return len(found) == len(want)
	})
	if err != nil {
		var names []string
		for _, s := range got {
			if s.Service == "apiserver" {
				names = append(names, s.Name+" parent="+s.ParentID)
			}
		}
		t.Fatalf("kube-apiserver recorded no span under some of the %d write spans: %v\napiserver spans: %v", len(want), err, names)
	}
}

// TestAnObjectsTraceparentStartsTheTrace: a Widget carrying a user's
// traceparent is reconciled in that trace, as its child; a malformed one is
// ignored (a trace of its own, and the reconcile succeeds).
func TestAnObjectsTraceparentStartsTheTrace(t *testing.T) {
	user := "00-4bf92f3577b34da6a3ce929d0e0e4737-00f067aa0ba902b7-01"
	for _, tc := range []struct {
		name, traceparent string
		wantParent        string
	}{
		{"a user's traceparent", user, "00f067aa0ba902b7"},
		{"a malformed traceparent", "00-not-a-trace-01", ""},
		{"an unsampled traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4737-00f067aa0ba902b7-00", "unsampled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, true)
			f.widget(t, "w", map[string]string{tracing.Annotation: tc.traceparent})
			f.reconcile(t, "w")
			recs := named(f.spans(0), "reconcile")
			switch {
			case tc.wantParent == "unsampled":
				// The SDK's ParentBased sampler follows the user's choice.
				if len(recs) != 0 {
					t.Errorf("an unsampled traceparent: %d reconcile spans recorded, want 0", len(recs))
				}
			case len(recs) != 1:
				t.Fatalf("reconcile spans: %d, want 1", len(recs))
			case tc.wantParent == "" && recs[0].Parent().IsValid():
				t.Errorf("parent %v, want none", recs[0].Parent())
			case tc.wantParent != "" && (recs[0].Parent().SpanID().String() != tc.wantParent || recs[0].SpanContext().TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4737"):
				t.Errorf("parent %v, want the user's span %s", recs[0].Parent(), tc.wantParent)
			}
		})
	}
}

// TestOneEditIsOneTraceWithItsWaits: reconciles of the same generation
// that the object is not done in join the first's trace, each preceded by
// the span of the wait the previous one asked for; a child's change that
// wakes the Widget is linked from its next reconcile.
func TestOneEditIsOneTraceWithItsWaits(t *testing.T) {
	f := newFixture(t, true)
	f.requeue = 50 * time.Millisecond
	f.widget(t, "w", nil)
	f.reconcile(t, "w")
	first := named(f.spans(0), "reconcile")[0]
	if attr(first, "reconcilekit.decision.done") != "false" {
		t.Errorf("a reconcile InProgress says done=%s", attr(first, "reconcilekit.decision.done"))
	}

	// The ConfigMap changes: its event wakes the Widget.
	var cm corev1.ConfigMap
	if err := f.c.Get(t.Context(), types.NamespacedName{Namespace: f.ns, Name: "w-config"}, &cm); err != nil {
		t.Fatal(err)
	}
	p := f.tracer.Predicate()
	if !p.Update(event.UpdateEvent{ObjectOld: &cm, ObjectNew: &cm}) {
		t.Fatal("the Predicate dropped an event")
	}
	mark := len(f.recorder.Ended())
	f.requeue = 0
	f.reconcile(t, "w")
	spans := f.spans(mark)
	recs := named(spans, "reconcile")
	if len(recs) != 1 {
		t.Fatalf("reconcile spans: %d, want 1", len(recs))
	}
	second := recs[0]
	if second.SpanContext().TraceID() != first.SpanContext().TraceID() || second.Parent().SpanID() != first.SpanContext().SpanID() {
		t.Errorf("the second reconcile of the same edit is not in the first's trace under it: parent %v", second.Parent())
	}
	waits := named(spans, "wait requeue")
	if len(waits) != 1 || waits[0].Parent().SpanID() != first.SpanContext().SpanID() {
		t.Fatalf("want one wait requeue span under the first reconcile; got %d", len(waits))
	}
	// The Loop takes the time of its status write off the 50ms asked.
	if planned, err := strconv.ParseFloat(attr(waits[0], "reconcilekit.wait.planned"), 64); err != nil || planned <= 0 || planned > 0.05 {
		t.Errorf("the wait's planned duration: %q s, want at most 0.05", attr(waits[0], "reconcilekit.wait.planned"))
	}
	if links := second.Links(); len(links) != 1 || links[0].SpanContext.SpanID() != first.SpanContext().SpanID() {
		t.Errorf("the reconcile woken by the ConfigMap's change links to %v; want the span that wrote it", links)
	}
}

// TestTracingOffCostsNothing: without a TracerProvider, no span, no
// annotation, and the Loop, the transport and the helpers leave everything
// as it was.
func TestTracingOffCostsNothing(t *testing.T) {
	f := newFixture(t, false)
	f.widget(t, "w", nil)
	f.reconcile(t, "w")
	if n := len(f.recorder.Ended()); n != 0 {
		t.Errorf("%d spans with tracing off", n)
	}
	var cm corev1.ConfigMap
	if err := f.c.Get(t.Context(), types.NamespacedName{Namespace: f.ns, Name: "w-config"}, &cm); err != nil {
		t.Fatal(err)
	}
	if v, ok := cm.Annotations[tracing.Annotation]; ok {
		t.Errorf("the ConfigMap has %s=%q with tracing off", tracing.Annotation, v)
	}
	if f.tracer.Enabled() || f.tracer.Len() != 0 {
		t.Error("a Tracer without a provider is enabled or remembers objects")
	}
}

// TestAnUnreachableCollectorNeverFailsAReconcile: spans batched to an OTLP
// collector nobody listens on are the SDK's to drop; the reconciles
// succeed and write what they write without it.
func TestAnUnreachableCollectorNeverFailsAReconcile(t *testing.T) {
	exp, err := otlptracegrpc.New(t.Context(), otlptracegrpc.WithEndpoint("127.0.0.1:1"), otlptracegrpc.WithInsecure())
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, true, sdktrace.WithBatcher(exp))
	for _, name := range []string{"a", "b", "c"} {
		f.widget(t, name, nil)
		f.reconcile(t, name)
	}
	if n := f.counter.Count(reconciletest.VerbCreate, ""); n < 3 {
		t.Errorf("creates: %d, want the 3 ConfigMaps at least\n%v", n, f.counter.String())
	}
}

// TestMemoryIsBoundedAndForgetsTheGone: a Tracer remembers at most
// MaxObjects objects, and forgets one whose reconcile finds it gone; the
// gauge reconcilekit_tracing_entries says so.
func TestMemoryIsBoundedAndForgetsTheGone(t *testing.T) {
	gauge := func() float64 { return metricstest.Settled(t, "reconcilekit_tracing_entries", nil) }
	before := gauge()
	f := newFixture(t, true)
	f.tracer.MaxObjects = 2
	for _, name := range []string{"a", "b", "c"} {
		f.widget(t, name, nil)
		f.reconcile(t, name)
	}
	if n := f.tracer.Len(); n != 2 {
		t.Errorf("remembered: %d, want MaxObjects 2", n)
	}
	if n := gauge() - before; n != 2 {
		t.Errorf("reconcilekit_tracing_entries: %v more than before, want the 2 remembered", n)
	}
	if err := f.c.Delete(t.Context(), &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "c"}}); err != nil {
		t.Fatal(err)
	}
	f.reconcile(t, "c")
	if n := f.tracer.Len(); n != 1 {
		t.Errorf("remembered after c is gone: %d, want 1", n)
	}
	if n := gauge() - before; n != 1 {
		t.Errorf("reconcilekit_tracing_entries after c is gone: %v more than before, want 1", n)
	}
	runtime.KeepAlive(f.tracer) // the gauge counts the Tracers in use
}
