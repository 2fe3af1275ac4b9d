package e2e_test

import (
	"context"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	atv1 "github.com/reconcilekit/reconcilekit/examples/at/api/v1alpha1"
	"github.com/reconcilekit/reconcilekit/internal/otlptest"
)

// TestOperatorTracesToTheCollectorTheOTLPVariablesName runs the operator
// as built by default with OTEL_EXPORTER_OTLP_ENDPOINT naming an OTLP/HTTP
// receiver, and finds there, from service at-operator, one trace for an
// At from its creation to DONE: the At's reconciles, and the create of
// its Pod as a client span under one of them.
func TestOperatorTracesToTheCollectorTheOTLPVariablesName(t *testing.T) {
	deploy(t)
	bin := buildOperator(t)
	admin := env.Client(t)
	ns := env.Namespace(t)
	deleteLease(t)
	kubeconfig, _ := serviceAccountKubeconfig(t, operatorNamespace)
	rcv := &otlptest.Receiver{}
	collector := httptest.NewServer(rcv)
	defer collector.Close()
	probes := freeAddr(t)
	op := startOperatorEnv(t, bin, "operator", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + collector.URL},
		"--kubeconfig", kubeconfig, "--metrics-bind-address=0", "--health-probe-bind-address", probes, "--workers=2")
	waitReady(t, op, probes)
	waitLeaseHolder(t, op)

	at := &atv1.At{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "traced"},
		Spec: atv1.AtSpec{Schedule: time.Now().Add(-time.Minute).UTC().Format(time.RFC3339), Command: "echo traced"}}
	if err := admin.Create(t.Context(), at); err != nil {
		t.Fatal(err)
	}
	at = waitAt(t, admin, at, "RUNNING with a Pod", func(at *atv1.At) bool { return at.Status.Phase == atv1.PhaseRunning && at.Status.PodName != "" })
	finishPod(t, admin, at, 0)
	waitAt(t, admin, at, "DONE", func(at *atv1.At) bool { return at.Status.Phase == atv1.PhaseDone })

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	isReconcile := func(s otlptest.Span) bool {
		return s.Name == "reconcile At" && s.Attributes["reconcilekit.object.name"] == at.Name
	}
	// The batch processor sends every second: wait for the reconcile that
	// found the At DONE.
	spans, err := rcv.WaitFor(ctx, func(spans []otlptest.Span) bool {
		return slices.ContainsFunc(spans, func(s otlptest.Span) bool {
			return isReconcile(s) && s.Attributes["reconcilekit.decision.done"] == "true"
		})
	})
	if err != nil {
		t.Fatalf("no reconcile of the At finding it DONE reached the collector: %v", err)
	}
	var reconciles []otlptest.Span
	for _, s := range spans {
		if s.Service != "at-operator" {
			t.Errorf("span %q from service %q, want at-operator", s.Name, s.Service)
		}
		if isReconcile(s) {
			reconciles = append(reconciles, s)
		}
	}
	if len(reconciles) < 2 {
		t.Fatalf("%d reconciles of the At, want at least 2 (created, DONE)", len(reconciles))
	}
	traceID := reconciles[0].TraceID
	for _, r := range reconciles[1:] {
		if r.TraceID != traceID {
			t.Errorf("the At's reconciles are in traces %s and %s, want one", traceID, r.TraceID)
		}
	}
	podCreate := slices.ContainsFunc(spans, func(s otlptest.Span) bool {
		return s.TraceID == traceID && s.Kind == "SPAN_KIND_CLIENT" && s.Attributes["http.request.method"] == "POST" &&
			strings.HasSuffix(s.Attributes["url.template"], "/pods") &&
			slices.ContainsFunc(reconciles, func(r otlptest.Span) bool { return r.SpanID == s.ParentID })
	})
	if !podCreate {
		t.Errorf("no client span of the Pod's create under a reconcile of the At, among %d spans", len(spans))
	}
}
