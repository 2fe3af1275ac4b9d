package reconciletest

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// call is one request on its way through a wrapped client.
type call struct {
	ctx context.Context
	// c is the wrapped (inner) client.
	c   client.Client
	req APIRequest
	// obj is the object or list the request is about; nil for Apply.
	obj runtime.Object
	// patch is the patch of a Patch request.
	patch client.Patch
	// do sends the request to the inner client.
	do func() error
}

// hook sees every request; it returns the request's error, normally by
// calling c.do().
type hook func(c *call) error

// intercept wraps c so that every request goes through h.
func intercept(c client.Client, h hook) client.WithWatch {
	run := func(ctx context.Context, inner client.Client, req APIRequest, obj runtime.Object, patch client.Patch, do func() error) error {
		return h(&call{ctx: ctx, c: inner, req: req, obj: obj, patch: patch, do: do})
	}
	return interceptor.NewClient(withWatch(c), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			return run(ctx, c, keyRequest(c, obj, key), obj, nil, func() error { return c.Get(ctx, key, obj, opts...) })
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			return run(ctx, c, listRequest(c, VerbList, list, opts), list, nil, func() error { return c.List(ctx, list, opts...) })
		},
		Watch: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) (watch.Interface, error) {
			var w watch.Interface
			err := run(ctx, c, listRequest(c, VerbWatch, list, opts), list, nil, func() error {
				var err error
				w, err = c.Watch(ctx, list, opts...)
				return err
			})
			if err != nil {
				return nil, err
			}
			return w, nil
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			return run(ctx, c, objectRequest(c, VerbCreate, obj), obj, nil, func() error { return c.Create(ctx, obj, opts...) })
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			return run(ctx, c, objectRequest(c, VerbUpdate, obj), obj, nil, func() error { return c.Update(ctx, obj, opts...) })
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			return run(ctx, c, objectRequest(c, VerbPatch, obj), obj, patch, func() error { return c.Patch(ctx, obj, patch, opts...) })
		},
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			return run(ctx, c, applyRequest(VerbApply, obj), nil, nil, func() error { return c.Apply(ctx, obj, opts...) })
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			return run(ctx, c, objectRequest(c, VerbDelete, obj), obj, nil, func() error { return c.Delete(ctx, obj, opts...) })
		},
		DeleteAllOf: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteAllOfOption) error {
			return run(ctx, c, deleteAllOfRequest(c, obj, opts), obj, nil, func() error { return c.DeleteAllOf(ctx, obj, opts...) })
		},
		SubResourceGet: func(ctx context.Context, c client.Client, sub string, obj, subObj client.Object, opts ...client.SubResourceGetOption) error {
			return run(ctx, c, objectRequest(c, subresourceVerb(VerbGet, sub), obj), obj, nil, func() error {
				return c.SubResource(sub).Get(ctx, obj, subObj, opts...)
			})
		},
		SubResourceCreate: func(ctx context.Context, c client.Client, sub string, obj, subObj client.Object, opts ...client.SubResourceCreateOption) error {
			return run(ctx, c, objectRequest(c, subresourceVerb(VerbCreate, sub), obj), obj, nil, func() error {
				return c.SubResource(sub).Create(ctx, obj, subObj, opts...)
			})
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			return run(ctx, c, objectRequest(c, subresourceVerb(VerbUpdate, sub), obj), obj, nil, func() error {
				return c.SubResource(sub).Update(ctx, obj, opts...)
			})
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			return run(ctx, c, objectRequest(c, subresourceVerb(VerbPatch, sub), obj), obj, patch, func() error {
				return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
			})
		},
		SubResourceApply: func(ctx context.Context, c client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
			return run(ctx, c, applyRequest(subresourceVerb(VerbApply, sub), obj), nil, nil, func() error {
				return c.SubResource(sub).Apply(ctx, obj, opts...)
			})
		},
	})
}
