package ranges_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/shard/ranges"
)

// recordingLW records the ShardSelector of every list and watch.
type recordingLW struct {
	selectors []string
}

func (r *recordingLW) lw() *toolscache.ListWatch {
	return &toolscache.ListWatch{
		ListWithContextFunc: func(_ context.Context, o metav1.ListOptions) (runtime.Object, error) {
			r.selectors = append(r.selectors, "list "+o.ShardSelector)
			return &corev1.ConfigMapList{}, nil
		},
		WatchFuncWithContext: func(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
			r.selectors = append(r.selectors, "watch "+o.ShardSelector)
			return watch.NewEmptyWatch(), nil
		},
	}
}

func TestWrapCacheOptions(t *testing.T) {
	two, _ := ranges.Split(2)
	rs := ranges.Set{two[1]}
	widget := &unstructured.Unstructured{}
	widget.SetAPIVersion("testing.reconcilekit.io/v1")
	widget.SetKind("Widget")
	podMeta := &metav1.PartialObjectMetadata{}
	podMeta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))

	// The NewInformer set before keeps being called, with the
	// ListerWatcher to use.
	var nextCalls int
	var got toolscache.ListerWatcher
	opts, err := ranges.CacheOptions(cache.Options{
		NewInformer: func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, idx toolscache.Indexers) toolscache.SharedIndexInformer {
			nextCalls++
			got = lw
			return toolscache.NewSharedIndexInformer(lw, obj, resync, idx)
		},
	}, rs, &testapi.Widget{}, widget, podMeta)
	if err != nil {
		t.Fatal(err)
	}

	otherWidget := &unstructured.Unstructured{}
	otherWidget.SetAPIVersion("testing.reconcilekit.io/v1")
	otherWidget.SetKind("Gadget")
	cmMeta := &metav1.PartialObjectMetadata{}
	cmMeta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	typedWithGVK := &testapi.Widget{TypeMeta: metav1.TypeMeta{APIVersion: "testing.reconcilekit.io/v1", Kind: "Widget"}}

	tests := []struct {
		name    string
		obj     runtime.Object
		sharded bool
	}{
		{name: "typed kind named", obj: &testapi.Widget{}, sharded: true},
		{name: "typed kind named, TypeMeta set", obj: typedWithGVK, sharded: true},
		{name: "unstructured kind named", obj: widget.DeepCopy(), sharded: true},
		{name: "metadata-only kind named", obj: podMeta.DeepCopy(), sharded: true},
		{name: "typed kind not named", obj: &corev1.ConfigMap{}},
		{name: "typed form of a kind named only as metadata", obj: &corev1.Pod{}},
		{name: "unstructured kind not named", obj: otherWidget},
		{name: "metadata-only kind not named", obj: cmMeta},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recordingLW{}
			opts.NewInformer(rec.lw(), tt.obj, 0, toolscache.Indexers{})
			ctx := context.Background()
			lw := toolscache.ToListerWatcherWithContext(got)
			if _, err := lw.ListWithContext(ctx, metav1.ListOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := lw.WatchWithContext(ctx, metav1.ListOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := got.List(metav1.ListOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := got.Watch(metav1.ListOptions{}); err != nil {
				t.Fatal(err)
			}
			want := ""
			if tt.sharded {
				want = rs.Selector()
			}
			if len(rec.selectors) != 4 {
				t.Fatalf("%d lists and watches reached the ListWatch; want 4", len(rec.selectors))
			}
			for _, s := range rec.selectors {
				verb, sel, _ := strings.Cut(s, " ")
				if sel != want {
					t.Errorf("%s with ShardSelector %q; want %q", verb, sel, want)
				}
			}
		})
	}
	if nextCalls != len(tests) {
		t.Errorf("the NewInformer set before was called %d times; want %d", nextCalls, len(tests))
	}
}

func TestWrapCacheOptionsRefuses(t *testing.T) {
	two, _ := ranges.Split(2)
	tests := []struct {
		name string
		rs   ranges.Set
		objs []client.Object
		want string
	}{
		{name: "no ranges", objs: []client.Object{&corev1.ConfigMap{}}, want: "no ranges"},
		{name: "no objects", rs: ranges.Set{two[0]}, want: "no objects"},
		{name: "unstructured without a kind", rs: ranges.Set{two[0]}, objs: []client.Object{&unstructured.Unstructured{}}, want: "must have its GroupVersionKind set"},
		{name: "metadata without a kind", rs: ranges.Set{two[0]}, objs: []client.Object{&metav1.PartialObjectMetadata{}}, want: "must have its GroupVersionKind set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts, err := ranges.CacheOptions(cache.Options{}, tt.rs, tt.objs...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("CacheOptions() error %v; want one saying %q", err, tt.want)
			}
			if opts.NewInformer != nil {
				t.Error("CacheOptions set NewInformer despite the error")
			}
		})
	}
}

// unsupported is a ListerWatcher that says it cannot stream lists.
type unsupported struct{ *toolscache.ListWatch }

func (unsupported) IsWatchListSemanticsUnSupported() bool { return true }

func TestWrapListerWatcherKeepsWatchListSupport(t *testing.T) {
	two, _ := ranges.Split(2)
	plain := (&recordingLW{}).lw()
	if watchlist.DoesClientNotSupportWatchListSemantics(ranges.ListerWatcher(plain, ranges.Set{two[0]})) {
		t.Error("a wrapped plain ListWatch says it cannot stream lists")
	}
	if !watchlist.DoesClientNotSupportWatchListSemantics(ranges.ListerWatcher(unsupported{plain}, ranges.Set{two[0]})) {
		t.Error("a wrapped ListerWatcher that cannot stream lists says it can")
	}
}
