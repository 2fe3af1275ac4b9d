package drift_test

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/reconcilekit/reconcilekit/drift"
)

// Plan says what Ensure would do, and writes nothing: the Deployment is
// still missing after the plan, and the plan of a changed image names the
// path Ensure then patches.
func ExampleWriter_Plan() {
	ctx := context.Background()
	c := fake.NewClientBuilder().Build()
	w := drift.NewWriter(c, "web-controller")

	plan, _ := w.Plan(ctx, exampleDeployment("nginx:1.25"))
	fmt.Println("plan:", plan.Operation)
	plan, _ = w.Plan(ctx, exampleDeployment("nginx:1.25"))
	fmt.Println("plan again:", plan.Operation, "(nothing was written)")

	_, _ = w.Ensure(ctx, exampleDeployment("nginx:1.25"))
	plan, _ = w.Plan(ctx, exampleDeployment("nginx:1.26"))
	fmt.Println("plan:", plan.Operation, plan.Drift.Paths)
	out, _ := w.Ensure(ctx, exampleDeployment("nginx:1.26"))
	fmt.Println("ensure:", out.Operation, out.Drift.Paths)
	// Output:
	// plan: created
	// plan again: created (nothing was written)
	// plan: updated [spec.template.spec.containers[name=web].image]
	// ensure: updated [spec.template.spec.containers[name=web].image]
}
