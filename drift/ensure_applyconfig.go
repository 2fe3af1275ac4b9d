package drift

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/errors"
)

// ErrInvalidApplyConfiguration is matched (errors.Is) by the error of
// [Writer.EnsureApplyConfiguration] given an apply configuration it cannot
// apply: nil, one that does not encode to a JSON object, or one without an
// apiVersion, a kind or a name (build it with its generated constructor,
// such as appsv1ac.Deployment(name, namespace), which sets all of them). The
// error is classed permanent and nothing is sent.
var ErrInvalidApplyConfiguration = errors.New("drift: invalid apply configuration")

// EnsureApplyConfiguration is [Writer.EnsureApplied] for a generated apply
// configuration: the types of k8s.io/client-go/applyconfigurations for the
// built-in kinds (appsv1ac.Deployment(name, namespace).WithSpec(...)), those
// controller-gen's applyconfiguration generator writes for a project's own
// kinds (what kubebuilder's server-side apply mode generates), or an
// unstructured object wrapped by client.ApplyConfigurationFromUnstructured.
// It is the body controller-runtime's client.Apply sends, and this is what
// it sends, only when the object is missing or has drifted.
//
// An apply configuration says which fields it sets: every field is a
// pointer, nil unless a With method set it, so an explicit zero (replicas 0,
// paused false, an empty map) is sent and a field left alone is not. A
// plain Go struct cannot say so: [Writer.EnsureApplied] converts desired to
// unstructured content, and a field without omitempty is there with its
// zero value (a Service port's targetPort 0, a custom resource's int field
// without omitempty), so the apply sends it and the Writer's field owner
// claims it: the server then refuses, with a Conflict, another manager's
// value for it, or with [ForceOwnership] overwrites that value with the
// zero. This is the zero-value trap of server-side apply with typed
// objects; an apply configuration has none.
//
// The comparison is [compare.Diff]'s on the content the apply would send,
// so it compares exactly what the configuration sets, explicit zeros
// included, against the live object (read with the Writer's client into
// the Go type the client's scheme has for the kind, so a manager's client
// reads it from the cache it already keeps; an unstructured object for a
// kind the scheme lacks). Converged, it sends nothing. A field, list element
// or map entry an earlier apply of the field owner set and the
// configuration no longer sets is drift (our Apply entry in managedFields
// says so), and the apply that no longer carries it makes the server remove
// it. [Owner] adds the controller reference to what is sent; [Replaces],
// [ForceOwnership], [CompareOptions] and the Writer's HotLoops work as for
// EnsureApplied.
//
// desired is only read: unlike client.Apply, the call does not fill it with
// the server's response (a converged call has none). Read the object
// through the client when you need it; with a manager's client that is a
// read from the cache, no request.
//
// A desired that is nil, does not encode to a JSON object, or lacks an
// apiVersion, a kind or a name returns an error wrapping
// [ErrInvalidApplyConfiguration], classed permanent, and sends nothing.
func (w *Writer) EnsureApplyConfiguration(ctx context.Context, desired runtime.ApplyConfiguration, opts ...Option) (Outcome, error) {
	return w.ensureApplyConfiguration(ctx, desired, opts)
}

func (w *Writer) ensureApplyConfiguration(ctx context.Context, desired runtime.ApplyConfiguration, opts []Option) (out Outcome, err error) {
	u, err := applyConfigurationContent(desired)
	if err != nil {
		return Outcome{}, err
	}
	if err := w.Validate(); err != nil {
		return Outcome{}, fmt.Errorf("drift: ensure %s: %w", describe(u), err)
	}
	cfg := newConfig(opts)
	c := w.client
	defer func() { observeEnsure(c, u, out, err) }()
	if cfg.owner != nil {
		if err := setController(cfg.owner, u, c.Scheme()); err != nil {
			return Outcome{}, err
		}
	}
	// The cache's own object (see getLive): applyDrift only looks at it.
	live, getErr := w.readLive(ctx, u, func() (client.Object, error) { return liveFor(u, c.Scheme()), nil })
	out, _, err = w.applyDrift(ctx, cfg, u, live, getErr, func() (*unstructured.Unstructured, error) {
		// A copy: the client fills what it applies with the response.
		return u.DeepCopy(), nil
	})
	return out, err
}

// applyConfigurationContent returns what client.Apply would send for ac, as
// unstructured content: its JSON encoding, or the content of an unstructured
// object wrapped by client.ApplyConfigurationFromUnstructured, copied.
func applyConfigurationContent(ac runtime.ApplyConfiguration) (*unstructured.Unstructured, error) {
	if v := reflect.ValueOf(ac); ac == nil || v.Kind() == reflect.Pointer && v.IsNil() {
		return nil, errors.Permanent(fmt.Errorf("%w: nil", ErrInvalidApplyConfiguration))
	}
	var m map[string]any
	if uc, ok := ac.(runtime.Unstructured); ok {
		m = runtime.DeepCopyJSON(uc.UnstructuredContent())
	} else {
		b, err := json.Marshal(ac)
		if err != nil {
			return nil, errors.Permanent(fmt.Errorf("%w: encoding %T: %w", ErrInvalidApplyConfiguration, ac, err))
		}
		// Integers decode as int64, as in the content of a converted object.
		if err := utiljson.Unmarshal(b, &m); err != nil {
			return nil, errors.Permanent(fmt.Errorf("%w: %T does not encode to a JSON object: %w", ErrInvalidApplyConfiguration, ac, err))
		}
	}
	u := &unstructured.Unstructured{Object: m}
	switch {
	case m == nil:
		return nil, errors.Permanent(fmt.Errorf("%w: %T is empty", ErrInvalidApplyConfiguration, ac))
	case u.GetAPIVersion() == "" || u.GetKind() == "":
		return nil, errors.Permanent(fmt.Errorf("%w: %T sets no apiVersion or no kind: build it with its generated constructor (appsv1ac.Deployment(name, namespace))", ErrInvalidApplyConfiguration, ac))
	case u.GetName() == "":
		return nil, errors.Permanent(fmt.Errorf("%w: %T %s sets no name", ErrInvalidApplyConfiguration, ac, u.GetKind()))
	}
	return u, nil
}

// liveFor returns an empty object to read the live version of u into: of
// the Go type scheme has for u's kind, so that a cached client reads it
// from the informer it keeps for that type, or unstructured.
func liveFor(u *unstructured.Unstructured, scheme *runtime.Scheme) client.Object {
	gvk := u.GroupVersionKind()
	if scheme != nil {
		if o, err := scheme.New(gvk); err == nil {
			if obj, ok := o.(client.Object); ok {
				if _, isU := o.(runtime.Unstructured); !isU {
					return obj
				}
			}
		}
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(gvk)
	return live
}
