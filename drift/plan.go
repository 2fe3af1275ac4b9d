package drift

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Plan returns what [Writer.Ensure] would do with desired, and sends no
// write: the same read of the live object, the same comparison, the same
// checks (whose object it is, the controller reference of [Owner]), and the
// Outcome Ensure would return: OperationCreated for a missing object,
// OperationUpdated with the drifted paths in Drift, OperationUnchanged with
// no drift. An error Ensure would return before writing (a
// [*ForeignError], an owner in another namespace, an unreadable object) is
// returned the same way. Ensure's writes are the only difference: the
// create or patch it would send is built and dropped, so desired then holds
// the object as it would be sent, without what the server adds to it (a
// resourceVersion, a generation, defaults).
//
// A plan is not a write: it is not counted in reconcilekit_ensure_total, and
// the HotLoops detector is not told of it (a plan repeated often must not
// trip it). So when HotLoops would hold a write back, Plan still says
// OperationUpdated. What the server does with the write (admission, a
// conflict with a concurrent writer) is not part of a plan; a plan made on
// a client that reads from a cache is made on what the cache holds.
func (w *Writer) Plan(ctx context.Context, desired client.Object, opts ...Option) (Outcome, error) {
	p := *w
	p.client = planClient{Client: w.client}
	p.HotLoops = nil
	return p.ensure(ctx, desired, opts)
}

// planClient reads through the client it wraps and drops every write,
// reporting success: what a Writer plans with.
type planClient struct {
	client.Client
}

func (planClient) Create(context.Context, client.Object, ...client.CreateOption) error { return nil }
func (planClient) Update(context.Context, client.Object, ...client.UpdateOption) error { return nil }
func (planClient) Delete(context.Context, client.Object, ...client.DeleteOption) error { return nil }
func (planClient) Patch(context.Context, client.Object, client.Patch, ...client.PatchOption) error {
	return nil
}
func (planClient) Apply(context.Context, runtime.ApplyConfiguration, ...client.ApplyOption) error {
	return nil
}
func (planClient) DeleteAllOf(context.Context, client.Object, ...client.DeleteAllOfOption) error {
	return nil
}
func (p planClient) Status() client.SubResourceWriter {
	return planSubResource{SubResourceReader: p.Client.SubResource("status")}
}
func (p planClient) SubResource(name string) client.SubResourceClient {
	return planSubResource{SubResourceReader: p.Client.SubResource(name)}
}

// planSubResource reads a subresource through the wrapped client and drops
// every write to it. A Writer writes none; it is here so that a planClient
// never sends one.
type planSubResource struct {
	client.SubResourceReader
}

func (planSubResource) Create(context.Context, client.Object, client.Object, ...client.SubResourceCreateOption) error {
	return nil
}
func (planSubResource) Update(context.Context, client.Object, ...client.SubResourceUpdateOption) error {
	return nil
}
func (planSubResource) Patch(context.Context, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
	return nil
}
func (planSubResource) Apply(context.Context, runtime.ApplyConfiguration, ...client.SubResourceApplyOption) error {
	return nil
}
