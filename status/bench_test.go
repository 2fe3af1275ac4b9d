package status_test

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/status"
)

func benchConditions() []metav1.Condition {
	var out []metav1.Condition
	for i := range 5 {
		out = append(out, cond(fmt.Sprintf("Type%d", i), metav1.ConditionTrue, "Reason", "a message of some length", 3, t0))
	}
	return out
}

// BenchmarkSetCondition compares SetCondition (on an object) with
// apimachinery's meta.SetStatusCondition, which it is built on, on five conditions: setting an unchanged condition
// (the hot path of a converged object) and toggling a status.
func BenchmarkSetCondition(b *testing.B) {
	clk := status.WithClock(clocktesting.NewFakePassiveClock(t1Sub))
	same := cond("Type3", metav1.ConditionTrue, "Reason", "a message of some length", 3, t0)
	toggle := [2]metav1.Condition{same, same}
	toggle[1].Status = metav1.ConditionFalse
	toggle[0].LastTransitionTime, toggle[1].LastTransitionTime = metav1.Time{}, metav1.Time{}

	b.Run("unchanged/status", func(b *testing.B) {
		o := &conditionsOnly{c: benchConditions()}
		b.ReportAllocs()
		for b.Loop() {
			status.SetCondition(o, same, clk)
		}
	})
	b.Run("unchanged/baseline-meta", func(b *testing.B) {
		conds := benchConditions()
		b.ReportAllocs()
		for b.Loop() {
			meta.SetStatusCondition(&conds, same)
		}
	})
	b.Run("toggle/status", func(b *testing.B) {
		o := &conditionsOnly{c: benchConditions()}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			status.SetCondition(o, toggle[i&1], clk)
			i++
		}
	})
	b.Run("toggle/baseline-meta", func(b *testing.B) {
		conds := benchConditions()
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			meta.SetStatusCondition(&conds, toggle[i&1])
			i++
		}
	})
}

// BenchmarkWriterNoop measures a reconcile pass that changes nothing:
// snapshot, MarkReady (no change), Write (no request). The baselines are the
// deep copy alone and the usual hand-written check, computing a merge patch
// with client.MergeFrom and skipping the write when it is "{}".
func BenchmarkWriterNoop(b *testing.B) {
	scheme := runtime.NewScheme()
	_ = testapi.AddToScheme(scheme)
	obj := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "w", Generation: 3, ResourceVersion: "7"}}
	obj.Status.Conditions = append(benchConditions(), cond("Ready", metav1.ConditionTrue, "Reconciled", "", 3, t0))
	obj.Status.ObservedGeneration = 3
	noRequests := interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme).Build(), interceptor.Funcs{
		SubResourcePatch: func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
			b.Fatal("a no-op pass sent a status patch")
			return nil
		},
	})
	w := status.NewWriter(noRequests, "bench-controller")
	ctx := context.Background()

	b.Run("writer", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s := w.Snapshot(obj)
			status.MarkReady(obj, "Reconciled", "")
			if changed, err := s.Write(ctx); changed || err != nil {
				b.Fatal(changed, err)
			}
		}
	})
	b.Run("baseline-deepcopy", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = obj.DeepCopy()
			status.MarkReady(obj, "Reconciled", "")
		}
	})
	b.Run("baseline-mergefrom", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			before := obj.DeepCopy()
			status.MarkReady(obj, "Reconciled", "")
			data, err := client.MergeFrom(before).Data(obj)
			if err != nil || string(data) != "{}" {
				b.Fatal(string(data), err)
			}
		}
	})
}
