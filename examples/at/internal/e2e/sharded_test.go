package e2e_test

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	atv1 "github.com/reconcilekit/reconcilekit/examples/at/api/v1alpha1"
)

// TestShardedReplicasShareTheAtsThroughAKill runs the operator binary
// sharded (--shards=6) as its service account, with only the RBAC of
// config/default: one replica finishes 30 Ats alone; two more join; 30 Ats
// start RUNNING with their Pods held; one replica is killed (SIGKILL: it
// cannot release its ranges, which move when their Leases expire); 30 more
// Ats come. Every one of the 90 ends DONE with exactly one Pod, and each
// range's Lease is held by one of the two replicas left.
func TestShardedReplicasShareTheAtsThroughAKill(t *testing.T) {
	deploy(t)
	bin := buildOperator(t)
	admin := env.Client(t)
	ns := env.Namespace(t)
	kubeconfig, _ := serviceAccountKubeconfig(t, "")
	start := func(name string) *operator {
		t.Helper()
		probes := freeAddr(t)
		op := startOperator(t, bin, name, "--kubeconfig", kubeconfig, "--leader-election-namespace", operatorNamespace,
			"--metrics-bind-address=0", "--health-probe-bind-address", probes, "--shards=6",
			"--leader-elect-lease-duration", testLeaseDuration.String(),
			"--leader-elect-renew-deadline", testRenewDeadline.String(),
			"--leader-elect-retry-period", testRetryPeriod.String())
		waitReady(t, op, probes)
		return op
	}
	k := startKubelet(t, ns)
	a := start("sharded-a")
	createAts(t, admin, ns, "alone", 30)
	waitAts(t, admin, ns, 30, "DONE", isDone)
	b := start("sharded-b")
	c := start("sharded-c")
	cs := kubernetes.NewForConfigOrDie(env.Config)
	waitHolders(t, cs, func(h map[string]string, ids map[string]bool) bool { return len(h) == 6 && len(ids) == 3 })
	k.pause()
	createAts(t, admin, ns, "running", 30)
	waitAts(t, admin, ns, 60, "DONE or RUNNING", func(at *atv1.At) bool { return isDone(at) || at.Status.Phase == atv1.PhaseRunning })
	killed := time.Now()
	c.signal(t, syscall.SIGKILL)
	createAts(t, admin, ns, "after", 30)
	k.resume()
	waitAts(t, admin, ns, 90, "DONE", isDone)
	t.Logf("every At DONE %s after the kill (lease duration %s)", time.Since(killed).Round(time.Millisecond), testLeaseDuration)
	checkOnePodEach(t, admin, k, ns)

	// The killed replica's identity, from its log ("holding a range").
	dead := identityIn(c.logs(t))
	if dead == "" {
		t.Fatalf("no identity in the killed replica's log:\n%s", lastLines(c.logs(t), 20))
	}
	waitHolders(t, cs, func(h map[string]string, ids map[string]bool) bool { return len(h) == 6 && len(ids) == 2 && !ids[dead] })
	for _, op := range []*operator{a, b} {
		if op.exited() {
			t.Errorf("%s exited: %v", op.name, op.waitErr)
		}
	}
}

// identityIn returns the shard identity a replica's log names.
func identityIn(log string) string {
	_, rest, ok := strings.Cut(log, `"identity":"`)
	if !ok {
		return ""
	}
	id, _, _ := strings.Cut(rest, `"`)
	return id
}

// waitHolders waits until ok holds of the range Leases' holders (Lease name
// to identity) and the set of distinct identities.
func waitHolders(t *testing.T, cs kubernetes.Interface, ok func(holders map[string]string, ids map[string]bool) bool) {
	t.Helper()
	var holders map[string]string
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 4*testLeaseDuration, true, func(ctx context.Context) (bool, error) {
		leases, err := cs.CoordinationV1().Leases(operatorNamespace).List(ctx, metav1.ListOptions{LabelSelector: "shard.reconcilekit.io/group=at"})
		if err != nil {
			return false, err
		}
		holders = map[string]string{}
		ids := map[string]bool{}
		for _, l := range leases.Items {
			if l.Labels["shard.reconcilekit.io/member"] == "true" || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
				continue
			}
			holders[l.Name] = *l.Spec.HolderIdentity
			ids[*l.Spec.HolderIdentity] = true
		}
		return ok(holders, ids), nil
	})
	if err != nil {
		t.Fatalf("the range Leases' holders never settled: %v", holders)
	}
}
