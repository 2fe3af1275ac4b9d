package reconcile

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reconcilekit/reconcilekit/errors"
	"github.com/reconcilekit/reconcilekit/requeue"
	"github.com/reconcilekit/reconcilekit/tracing"
)

// A Loop with a Tracer (package tracing) reconciles through
// reconcileTraced: the span opens around the fetch, so that a wait of the
// fetch for the cache is in it, and closes with the decision the loop made.

// decisionKey keys the decision a traced reconcile records.
type decisionKey struct{}

// decision is what finish decided, for the span.
type decision struct {
	d      requeue.Decision
	p      Progress
	synced bool
	set    bool
}

// recordDecision records d for the span of a traced reconcile; untraced, it
// finds nothing to record into.
func recordDecision(ctx context.Context, d requeue.Decision, p Progress, synced bool) {
	if box, ok := ctx.Value(decisionKey{}).(*decision); ok {
		box.d, box.p, box.synced, box.set = d, p, synced, true
	}
}

// reconcileTraced is Reconcile with l.Tracer on.
func (l *Loop[T]) reconcileTraced(ctx context.Context, req crreconcile.Request) (ctrl.Result, error) {
	var (
		obj  T
		read client.Object
		ferr error
		box  decision
	)
	ctx, span := l.Tracer.Begin(context.WithValue(ctx, decisionKey{}, &box), req, func(ctx context.Context) (client.Object, error) {
		obj, read, ferr = l.fetch(ctx, req)
		if ferr != nil {
			return nil, ferr
		}
		return obj, nil
	})
	res, err := l.reconcile(ctx, req, obj, read, ferr)
	span.End(box.outcome(res, err))
	return res, err
}

// outcome is the span's Outcome of a reconcile that returned res and err.
func (b *decision) outcome(res ctrl.Result, err error) tracing.Outcome {
	if !b.set {
		return tracing.OutcomeOf(res, err)
	}
	o := tracing.Outcome{Class: b.d.Class, RequeueAfter: res.RequeueAfter, Err: b.d.Err, Reason: b.p.Reason}
	switch {
	case b.d.Err != nil:
		o.Reason = errors.Reason(b.d.Err)
		o.Done = b.d.Class == errors.ClassPermanent
	case b.synced:
		o.Done = b.p.State == Done || b.p.State == Failed
	}
	return o
}

// annotator is a recorder that takes annotations (package recorder's,
// controller-runtime's).
type annotator interface {
	AnnotatedEventf(regarding, related runtime.Object, annotations map[string]string, eventtype, reason, action, note string, args ...any)
}

// annotatedRecorder returns rec as an annotator when the reconcile of ctx
// is traced and rec takes annotations.
func annotatedRecorder(ctx context.Context, rec any) (annotator, bool) {
	if !tracing.Recording(ctx) {
		return nil, false
	}
	a, ok := rec.(annotator)
	return a, ok
}

// traceAnnotations are the annotations of an event recorded in the
// reconcile of ctx: its trace context.
func traceAnnotations(ctx context.Context) map[string]string {
	var m metav1.ObjectMeta
	tracing.Inject(ctx, &m)
	return m.Annotations
}
