package ranges_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/reconcilekit/reconcilekit/internal/metricstest"
	"github.com/reconcilekit/reconcilekit/shard/ranges"
)

func TestPredicate(t *testing.T) {
	four, _ := ranges.Split(4)
	held := ranges.Set{four[0], four[2]}
	p := ranges.Predicate(held)
	before := metricstest.Value(t, "reconcilekit_shard_events_filtered_total", nil)
	kept := map[int]int{}
	uids := testUIDs(400)
	for i := range 400 {
		obj := withUID(uids[i])
		of, _ := ranges.Of(obj, 4)
		want := of == 0 || of == 2
		got := map[string]bool{
			"create":  p.Create(event.CreateEvent{Object: obj}),
			"update":  p.Update(event.UpdateEvent{ObjectOld: obj, ObjectNew: obj}),
			"delete":  p.Delete(event.DeleteEvent{Object: obj}),
			"generic": p.Generic(event.GenericEvent{Object: obj}),
		}
		for kind, ok := range got {
			if ok != want {
				t.Fatalf("%s event of uid %s (range %d of 4): let through %v; want %v", kind, uids[i], of, ok, want)
			}
		}
		if want {
			kept[of]++
		}
	}
	if kept[0] == 0 || kept[2] == 0 {
		t.Errorf("kept %v of 400 objects; want some of ranges 0 and 2", kept)
	}
	t.Logf("kept %d of 400 objects (range 0: %d, range 2: %d)", kept[0]+kept[2], kept[0], kept[2])
	// Four events of each dropped object.
	if got, want := metricstest.Value(t, "reconcilekit_shard_events_filtered_total", nil)-before, float64(4*(400-kept[0]-kept[2])); got != want {
		t.Errorf("reconcilekit_shard_events_filtered_total grew by %v, want %v", got, want)
	}
}

func TestPredicateOfOneRange(t *testing.T) {
	two, _ := ranges.Split(2)
	first, second := ranges.Predicate(two[0]), ranges.Predicate(two[1])
	for _, uid := range testUIDs(100) {
		e := event.CreateEvent{Object: withUID(uid)}
		if first.Create(e) == second.Create(e) {
			t.Fatalf("uid %s: let through by both halves or neither", uid)
		}
	}
}

// testUIDs returns n UIDs shaped like the API server's (random version 4
// UUIDs), the same ones on every run.
func testUIDs(n int) []string {
	r := rand.New(rand.NewPCG(25, 1))
	out := make([]string, n)
	for i := range out {
		var b [16]byte
		for j := range b {
			b[j] = byte(r.Uint32())
		}
		b[6] = b[6]&0x0f | 0x40
		b[8] = b[8]&0x3f | 0x80
		out[i] = fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
	}
	return out
}
