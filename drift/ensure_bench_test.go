package drift_test

import (
	"context"
	"encoding/json"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/reconcilekit/reconcilekit/drift"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest"
)

// BenchmarkEnsure compares Ensure (patches) with EnsureApplied (server-side
// apply) and EnsureApplyConfiguration (the same, from a generated apply
// configuration) on the 2-container Deployment against the test API server,
// as the package doc's "Ensure or EnsureApplied?" does: converged (nothing
// to write) and drifted (the image changes on every call). Besides the time of
// a call, round trip included, it reports the requests a call sends
// (requests/op; its GET is one, which a manager's cached client serves
// without a request) and the bytes of the write's body (body-B/op).
func BenchmarkEnsure(b *testing.B) {
	env.Require(b)
	for _, mode := range []string{"Ensure", "EnsureApplied", "EnsureApplyConfiguration"} {
		for _, drifted := range []bool{false, true} {
			name := mode + "/" + map[bool]string{false: "converged", true: "drifted"}[drifted]
			b.Run(name, func(b *testing.B) {
				var counter reconciletest.Counter
				body := 0
				base, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
				if err != nil {
					b.Fatal(err)
				}
				c := counter.Wrap(interceptor.NewClient(base, interceptor.Funcs{
					Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
						data, err := patch.Data(obj)
						body += len(data)
						if err != nil {
							return err
						}
						return c.Patch(ctx, obj, patch, opts...)
					},
					Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
						data, err := json.Marshal(obj)
						body += len(data)
						if err != nil {
							return err
						}
						return c.Apply(ctx, obj, opts...)
					},
				}))
				ns := env.Namespace(b)
				ensure := func(image string) {
					d := deploymentIn(ns).(*appsv1.Deployment)
					d.Spec.Template.Spec.Containers[0].Image = image
					var err error
					switch mode {
					case "EnsureApplied":
						_, err = drift.NewWriter(c, testOwner).EnsureApplied(b.Context(), d)
					case "EnsureApplyConfiguration":
						ac := webDeploymentAC(ns, envVar("MODE", "prod"), envVar("LOG", "info"))
						ac.Spec.Template.Spec.Containers[0].WithImage(image)
						_, err = drift.NewWriter(c, testOwner).EnsureApplyConfiguration(b.Context(), ac)
					default:
						_, err = drift.NewWriter(c, testOwner).Ensure(b.Context(), d)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				ensure("nginx:1.25")
				requests := len(counter.Requests())
				body = 0
				images := [2]string{"nginx:1.25", "nginx:1.26"}
				i := 0
				for b.Loop() {
					if drifted {
						i++
					}
					ensure(images[i%2])
				}
				b.ReportMetric(float64(len(counter.Requests())-requests)/float64(b.N), "requests/op")
				b.ReportMetric(float64(body)/float64(b.N), "body-B/op")
			})
		}
	}
}
