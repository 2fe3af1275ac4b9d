package e2e_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	atv1 "github.com/reconcilekit/reconcilekit/examples/at/api/v1alpha1"
)

// Leader election timings of the replicas in these tests: shorter than the
// defaults (15 s, 10 s, 2 s) so that waiting for a killed leader's lease to
// expire is quick, long enough that a busy machine does not lose a lease.
const (
	testLeaseDuration = 8 * time.Second
	testRenewDeadline = 6 * time.Second
	testRetryPeriod   = time.Second
)

// TestTwoReplicasHandOver runs two operator processes and stops the leader
// in the middle of 100 Ats: 40 already DONE, 30 RUNNING with their Pods not
// yet finished, 30 created as the leader goes. The standby must take over
// and finish every At with exactly one Pod, and how it takes over is read
// from the Lease's history:
//   - stopped gracefully (SIGTERM), the leader releases the Lease (clears
//     its holder) as it exits, and the standby acquires it before the old
//     lease would have expired;
//   - killed (SIGKILL), the leader cannot release it, and the standby
//     acquires it only once it has expired.
//
// The takeover times are logged, never asserted.
func TestTwoReplicasHandOver(t *testing.T) {
	deploy(t)
	bin := buildOperator(t)
	tests := []struct {
		name   string
		signal syscall.Signal
		check  func(t *testing.T, h handover)
	}{
		{
			name:   "graceful stop releases the lease",
			signal: syscall.SIGTERM,
			check: func(t *testing.T, h handover) {
				if !h.Released {
					t.Errorf("the stopped leader did not release the Lease: %+v", h)
				}
				if !h.Acquired.Before(h.expiry()) {
					t.Errorf("the standby acquired the Lease at %s, not before the old lease would have expired (%s): %+v",
						h.Acquired.Format(time.StampMicro), h.expiry().Format(time.StampMicro), h)
				}
			},
		},
		{
			name:   "killed leader's lease expires first",
			signal: syscall.SIGKILL,
			check: func(t *testing.T, h handover) {
				if h.Released {
					t.Errorf("a killed leader cannot release the Lease, yet it was released: %+v", h)
				}
				if h.Acquired.Before(h.expiry()) {
					t.Errorf("the standby acquired the Lease at %s, before the killed leader's lease expired (%s): %+v",
						h.Acquired.Format(time.StampMicro), h.expiry().Format(time.StampMicro), h)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			admin := env.Client(t)
			ns := env.Namespace(t)
			deleteLease(t)
			kubeconfig, _ := serviceAccountKubeconfig(t, "")
			args := func(probes string) []string {
				return []string{"--kubeconfig", kubeconfig, "--leader-election-namespace", operatorNamespace,
					"--metrics-bind-address=0", "--health-probe-bind-address", probes,
					"--leader-elect-lease-duration", testLeaseDuration.String(),
					"--leader-elect-renew-deadline", testRenewDeadline.String(),
					"--leader-elect-retry-period", testRetryPeriod.String()}
			}

			// The first replica alone, so that the leader is known.
			probesA := freeAddr(t)
			leader := startOperator(t, bin, "replica-a", args(probesA)...)
			waitReady(t, leader, probesA)
			leaderID := waitLeaseHolder(t, leader)
			probesB := freeAddr(t)
			standby := startOperator(t, bin, "replica-b", args(probesB)...)
			waitReady(t, standby, probesB)

			k := startKubelet(t, ns)
			createAts(t, admin, ns, "done", 40)
			waitAts(t, admin, ns, 40, "DONE", isDone)
			k.pause()
			createAts(t, admin, ns, "running", 30)
			waitAts(t, admin, ns, 70, "DONE or RUNNING", func(at *atv1.At) bool { return isDone(at) || at.Status.Phase == atv1.PhaseRunning })

			history := watchLease(t)
			stopped := time.Now()
			leader.signal(t, tt.signal)
			createAts(t, admin, ns, "new", 30)
			k.resume()

			h := history.waitHandover(t, leaderID, 2*time.Minute)
			t.Logf("%s: the standby took over %s after the signal (Lease released: %t; old lease expiry %s after the signal)",
				tt.signal, h.Acquired.Sub(stopped).Round(time.Millisecond), h.Released, h.expiry().Sub(stopped).Round(time.Millisecond))
			tt.check(t, h)
			if t.Failed() {
				t.Logf("Lease history:\n%s", history)
			}

			waitAts(t, admin, ns, 100, "DONE", isDone)
			checkOnePodEach(t, admin, k, ns)
			if !leader.wait(time.Minute) {
				t.Fatalf("the leader did not exit after %s", tt.signal)
			}
			if tt.signal == syscall.SIGTERM && leader.exitCode() != 0 {
				t.Errorf("the gracefully stopped leader exited with %v, want 0", leader.waitErr)
			}
			if standby.exited() {
				t.Errorf("the standby exited: %v", standby.waitErr)
			}
		})
	}
}

func isDone(at *atv1.At) bool {
	return at.Status.Phase == atv1.PhaseDone && at.Status.Outcome == atv1.OutcomeSucceeded
}

// createAts creates n Ats due now, named prefix-0 ... prefix-(n-1).
func createAts(t *testing.T, c client.Client, ns, prefix string, n int) {
	t.Helper()
	due := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	for i := range n {
		at := &atv1.At{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%d", prefix, i)},
			Spec:       atv1.AtSpec{Schedule: due, Command: "true"},
		}
		if err := c.Create(t.Context(), at); err != nil {
			t.Fatal(err)
		}
	}
}

// waitAts waits until the namespace holds want Ats, every one of which
// satisfies cond.
func waitAts(t *testing.T, c client.Client, ns string, want int, what string, cond func(*atv1.At) bool) {
	t.Helper()
	var phases map[string]int
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var ats atv1.AtList
		if err := c.List(ctx, &ats, client.InNamespace(ns)); err != nil {
			return false, err
		}
		phases = map[string]int{}
		ok := 0
		for i := range ats.Items {
			at := &ats.Items[i]
			phases[string(at.Status.Phase)+"/"+string(at.Status.Outcome)]++
			if cond(at) {
				ok++
			}
		}
		return len(ats.Items) == want && ok == want, nil
	})
	if err != nil {
		t.Fatalf("waiting for %d Ats %s: %v; phase/outcome counts: %v", want, what, err, phases)
	}
}

// checkOnePodEach checks that every At of the namespace has exactly one
// Pod: in the API server now, and among every Pod the kubelet ever saw.
func checkOnePodEach(t *testing.T, c client.Client, k *kubelet, ns string) {
	t.Helper()
	var ats atv1.AtList
	if err := c.List(t.Context(), &ats, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var pods corev1.PodList
	if err := c.List(t.Context(), &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	stored := map[types.UID]int{}
	for i := range pods.Items {
		if ref := metav1.GetControllerOf(&pods.Items[i]); ref != nil {
			stored[ref.UID]++
		} else {
			t.Errorf("pod %s has no controller", pods.Items[i].Name)
		}
	}
	seen := k.podsByAt()
	var wrong []string
	for _, at := range ats.Items {
		if stored[at.UID] != 1 || seen[at.UID] != 1 {
			wrong = append(wrong, fmt.Sprintf("%s: %d stored, %d seen", at.Name, stored[at.UID], seen[at.UID]))
		}
	}
	sort.Strings(wrong)
	if len(wrong) > 0 {
		t.Errorf("%d of %d Ats do not have exactly one Pod:\n%s", len(wrong), len(ats.Items), strings.Join(wrong, "\n"))
	}
	if len(pods.Items) != len(ats.Items) {
		t.Errorf("%d Pods for %d Ats", len(pods.Items), len(ats.Items))
	}
}
