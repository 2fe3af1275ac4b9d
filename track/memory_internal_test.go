package track

import (
	"fmt"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func heap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestMemoryOfTenThousandReferrers: 10,000 referrers over 100 Secrets hold
// 10,000 references and 100 copies, what they read is all that is kept when
// each moves to another Secret, and nothing is kept once every referrer is
// gone (half forgotten by a Loop, half by a reconcile that read nothing).
// The heap it takes is logged.
func TestMemoryOfTenThousandReferrers(t *testing.T) {
	const referrers, secrets = 10_000, 100
	objs := make([]client.Object, secrets)
	for i := range objs {
		objs[i] = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "refs", Name: fmt.Sprintf("s-%03d", i)},
			Data: map[string][]byte{"v": make([]byte, 64)}}
	}
	tr := New(fake.NewClientBuilder().WithObjects(objs...).Build(), clientgoscheme.Scheme)
	tr.Enqueue(&corev1.Secret{})
	referrer := func(i int) types.NamespacedName {
		return types.NamespacedName{Namespace: fmt.Sprintf("ns-%d", i%50), Name: fmt.Sprintf("r-%05d", i)}
	}
	reconcileAll := func(shift int) {
		for i := range referrers {
			reads := tr.For(referrer(i))
			var s corev1.Secret
			if err := reads.Get(t.Context(), types.NamespacedName{Namespace: "refs", Name: fmt.Sprintf("s-%03d", (i+shift)%secrets)}, &s); err != nil {
				t.Fatal(err)
			}
			reads.Done()
		}
	}
	count := func() (refs, refsOfReferrers, byRef, copies int) {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		for _, r := range tr.refs {
			byRef += len(r.referrers)
			if r.copy != nil {
				copies++
			}
		}
		for _, refs := range tr.referrers {
			refsOfReferrers += len(refs)
		}
		return len(tr.refs), refsOfReferrers, byRef, copies
	}

	before := heap()
	reconcileAll(0)
	held := heap()
	if refs, mine, byRef, copies := count(); refs != secrets || mine != referrers || byRef != referrers || copies != secrets {
		t.Fatalf("after 10,000 reads: %d referenced, %d references by referrer, %d by reference, %d copies; want 100, 10000, 10000, 100", refs, mine, byRef, copies)
	}
	reconcileAll(1) // each referrer now reads the next Secret
	if refs, mine, byRef, _ := count(); refs != secrets || mine != referrers || byRef != referrers {
		t.Fatalf("after each moved to another Secret: %d referenced, %d, %d references; want 100, 10000, 10000: the old ones were kept", refs, mine, byRef)
	}
	for i := range referrers {
		if i%2 == 0 {
			tr.Forget(referrer(i)) // a Loop whose object is gone
		} else {
			tr.For(referrer(i)).Done() // a reconcile that found its object gone
		}
	}
	if refs, mine, byRef, copies := count(); refs+mine+byRef+copies != 0 || len(tr.referrers) != 0 {
		t.Fatalf("every referrer gone: %d referenced, %d, %d references, %d copies, %d referrers; want none", refs, mine, byRef, copies, len(tr.referrers))
	}
	after := heap()
	perReferrer := (int64(held) - int64(before)) / referrers
	t.Logf("10,000 referrers over 100 Secrets of 64 bytes: %d bytes of heap (%d per referrer, the 100 copies included); %d bytes after all were forgotten",
		int64(held)-int64(before), perReferrer, int64(after)-int64(before))
}
