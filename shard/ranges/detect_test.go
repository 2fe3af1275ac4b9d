package ranges_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/reconcilekit/reconcilekit/internal/metricstest"
	"github.com/reconcilekit/reconcilekit/shard/ranges"
)

// selectorOf returns the ShardSelector opts would send.
func selectorOf(opts []client.ListOption) string {
	var o client.ListOptions
	o.ApplyOptions(opts)
	return o.AsListOptions().ShardSelector
}

// TestDetectDecides runs Detect against a fake client that plays each kind
// of server: the fake client itself ignores ShardSelector; interceptors
// refuse it, or honour it as kube-apiserver does.
func TestDetectDecides(t *testing.T) {
	objs := []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", UID: types.UID("uid-a")}},
	}
	gr := schema.GroupResource{Resource: "configmaps"}
	// honour plays kube-apiserver with the gate on: an empty range is an
	// error, any other selector filters (here: to nothing, as the probe
	// range holds no test object), and built-in lists echo it.
	honour := func(echo bool) interceptor.Funcs {
		return interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			sel := selectorOf(opts)
			if sel == "" {
				return c.List(ctx, list, opts...)
			}
			if strings.Contains(sel, "'0x0000000000000001', '0x0000000000000001'") {
				return apierrors.NewInternalError(errors.New("invalid shard selector: shard range start 0x0000000000000001 must be less than end 0x0000000000000001"))
			}
			if echo {
				list.(*corev1.ConfigMapList).ShardInfo = &metav1.ShardInfo{Selector: sel}
			}
			return nil
		}}
	}
	tests := []struct {
		name        string
		objs        []client.Object
		funcs       interceptor.Funcs
		want        ranges.Support
		wantReason  string
		wantErrText string
	}{
		{
			name:       "ignored: an object outside the range comes back",
			objs:       objs,
			want:       ranges.Ignored,
			wantReason: "the server returned ns/a, whose UID hashes to 0x",
		},
		{
			name:       "ignored: no objects, and an invalid selector is served",
			want:       ranges.Ignored,
			wantReason: "the server served a list with the invalid ShardSelector",
		},
		{
			name:       "honoured: the selector is echoed",
			objs:       objs,
			funcs:      honour(true),
			want:       ranges.Honoured,
			wantReason: "it echoed it in listMeta.shardInfo",
		},
		{
			name:       "honoured: no echo (a custom resource), an invalid selector is refused",
			objs:       objs,
			funcs:      honour(false),
			want:       ranges.Honoured,
			wantReason: "it refused an empty range with",
		},
		{
			name: "refused: lists with a selector fail, lists without succeed",
			objs: objs,
			funcs: interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
				if selectorOf(opts) != "" {
					return apierrors.NewBadRequest("unknown parameter shardSelector")
				}
				return c.List(ctx, list, opts...)
			}},
			want:       ranges.Refused,
			wantReason: "fails (unknown parameter shardSelector), the same list without it succeeds",
		},
		{
			name: "no answer: every list fails",
			funcs: interceptor.Funcs{List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
				return apierrors.NewForbidden(gr, "", errors.New("no RBAC"))
			}},
			wantErrText: "shard: detecting ShardSelector support: configmaps is forbidden",
		},
		{
			name: "no answer: the invalid selector fails for another reason",
			funcs: interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
				if strings.Contains(selectorOf(opts), "'0x0000000000000001', '0x0000000000000001'") {
					return apierrors.NewServiceUnavailable("etcd is down")
				}
				return c.List(ctx, list, opts...)
			}},
			wantErrText: "failed for another reason: etcd is down",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithObjects(tt.objs...).WithInterceptorFuncs(tt.funcs).Build()
			list := &corev1.ConfigMapList{}
			got, err := ranges.Detect(context.Background(), c, list, client.InNamespace("ns"))
			if tt.wantErrText != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErrText) {
					t.Fatalf("Detect() = %v, %v; want an error with %q", got, err, tt.wantErrText)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Support != tt.want || !strings.Contains(got.Reason, tt.wantReason) {
				t.Errorf("Detect() = %q; want %s with a reason saying %q", got, tt.want, tt.wantReason)
			}
			if !strings.HasPrefix(got.String(), string(tt.want)+": ") {
				t.Errorf("String() = %q; want it to start with %q", got, tt.want+": ")
			}
			for _, s := range []ranges.Support{ranges.Honoured, ranges.Ignored, ranges.Refused} {
				want := 0.0
				if s == tt.want {
					want = 1
				}
				if v := metricstest.Value(t, "reconcilekit_shard_selector_support", map[string]string{"kind": "*v1.ConfigMapList", "support": string(s)}); v != want {
					t.Errorf("reconcilekit_shard_selector_support{support=%q} = %v, want %v", s, v, want)
				}
			}
			if len(list.Items) != 0 {
				t.Errorf("Detect filled the caller's list with %d items", len(list.Items))
			}
		})
	}
}

func ExampleDetection_String() {
	d := ranges.Detection{Support: ranges.Ignored, Reason: "the server returned ns/a, whose UID hashes to 0x1c1b1f4f5e3d2a10"}
	fmt.Println(d)
	// Output: ignored: the server returned ns/a, whose UID hashes to 0x1c1b1f4f5e3d2a10
}
