package reconcile_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/reconcilekit/reconcilekit/health"
	"github.com/reconcilekit/reconcilekit/reconcile"
)

func TestWithChildrenReportsTheWorseOfSyncAndItsChildren(t *testing.T) {
	current := health.Health{Status: health.Current}
	rolling := health.Health{Status: health.InProgress, Reason: "LessUpdated", Message: "waiting for 3 replicas to be updated", Kind: "Deployment", Namespace: "shop", Name: "web"}
	failed := health.Health{Status: health.Failed, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", Kind: "Job", Namespace: "shop", Name: "migrate"}
	wait := ctrl.Result{RequeueAfter: time.Minute}
	done := reconcile.Progress{Reason: "Deployed", Message: "serving", Requeue: wait}
	waiting := reconcile.Progress{State: reconcile.InProgress, Reason: "WaitingForDNS", Message: "no record yet"}
	stalled := reconcile.Progress{State: reconcile.Failed, Reason: "InvalidSpec", Message: "bad"}
	tests := []struct {
		name     string
		p        reconcile.Progress
		children health.Health
		want     reconcile.Progress
	}{
		{name: "children current: Sync's Progress", p: done, children: current, want: done},
		{name: "a child in progress: Reconciling, naming it, the requeue kept", p: done, children: rolling,
			want: reconcile.Progress{State: reconcile.InProgress, Reason: "DeploymentLessUpdated", Message: "Deployment shop/web: waiting for 3 replicas to be updated", Requeue: wait}},
		{name: "a child failed: Stalled, naming it and its reason", p: done, children: failed,
			want: reconcile.Progress{State: reconcile.Failed, Reason: "JobBackoffLimitExceeded", Message: "Job shop/migrate: Job has reached the specified backoff limit", Requeue: wait}},
		{name: "Sync in progress beats a child in progress", p: waiting, children: rolling, want: waiting},
		{name: "a failed child beats Sync in progress", p: waiting, children: failed,
			want: reconcile.Progress{State: reconcile.Failed, Reason: "JobBackoffLimitExceeded", Message: "Job shop/migrate: Job has reached the specified backoff limit"}},
		{name: "Sync failed beats everything", p: stalled, children: failed, want: stalled},
		{name: "a Health of no known status: in progress", p: done, children: health.Health{Kind: "Widget", Name: "w"},
			want: reconcile.Progress{State: reconcile.InProgress, Reason: "WidgetInProgress", Message: "Widget w", Requeue: wait}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.p.WithChildren(tt.children)); diff != "" {
				t.Errorf("WithChildren (-want +got):\n%s", diff)
			}
		})
	}
}

// A Sync reports its children's health: the Website is Ready only when
// its Deployment is.
func ExampleProgress_WithChildren() {
	dep := health.Health{Status: health.InProgress, Reason: "LessAvailable",
		Message: "waiting for the updated replicas to be available", Kind: "Deployment", Namespace: "shop", Name: "web"}
	p := reconcile.Progress{Reason: "Deployed", Message: "serving shop.example.com"}.WithChildren(health.Summarize(dep))
	fmt.Println(p.State == reconcile.InProgress, p.Reason)
	fmt.Println(p.Message)

	dep = health.Health{Status: health.Current, Reason: "Available", Kind: "Deployment", Namespace: "shop", Name: "web"}
	p = reconcile.Progress{Reason: "Deployed", Message: "serving shop.example.com"}.WithChildren(health.Summarize(dep))
	fmt.Println(p.State == reconcile.Done, p.Reason)
	// Output:
	// true DeploymentLessAvailable
	// Deployment shop/web: waiting for the updated replicas to be available
	// true Deployed
}
