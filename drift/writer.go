package drift

import (
	"context"
	"fmt"
	"reflect"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/compare"
	"github.com/reconcilekit/reconcilekit/errors"
)

// ErrInvalidWriter is matched (errors.Is) by the error of a [Writer] that
// cannot work: no client, or a HotLoops detector that fails its
// [HotLoopDetector.Validate]. [Writer.Validate] returns it, and so does
// every call of such a Writer, classed permanent, before it reads or writes
// anything. A Writer without a field owner returns [errors.ErrNoFieldOwner]
// instead.
var ErrInvalidWriter = errors.New("drift: invalid writer")

// Writer writes desired objects to the API server only when they drifted,
// as the operator its field owner names. Build it with [NewWriter]: the
// client and the field owner are what no write can do without. Its exported
// fields are optional, and their zero values work. A Writer is safe for
// concurrent use; share one per controller.
type Writer struct {
	// HotLoops, when set, is told of every drift the Writer is about to
	// write, and holds back the write of an object whose same fields keep
	// drifting back (see [HotLoopDetector]): the call then returns a
	// [*HotLoopError]. Nil: every drift is written.
	HotLoops *HotLoopDetector
	// Clock tells HotLoops the time when the detector has no Clock of its
	// own. Nil: the real clock.
	Clock clock.PassiveClock
	// APIReader reads an object whole from the API server (a manager's
	// GetAPIReader()) when the client's cache keeps only part of it (a
	// diet.Fields transform): Ensure, EnsureMutate, EnsureApplied and
	// EnsureApplyConfiguration then compare with the whole object, never
	// mistaking what the cache left out for drift. Nil: such an object is an error wrapping
	// diet.ErrPartial, classed permanent. Objects the cache keeps whole
	// (diet.ManagedFields keeps what the Writer reads) never use it.
	APIReader client.Reader

	client     client.Client
	fieldOwner string
}

// NewWriter returns a Writer that reads and writes with c, every write
// (creates, patches, applies and the managedFields patch of [Replaces])
// carrying fieldOwner as its field manager: the operator's own name, the
// same for all its writes (the status and finalizer writers and
// reconcile.Loop take it too), and never a name another controller uses,
// nor the binary's ("manager" in every kubebuilder project).
//
// The API server records under that name, in metadata.managedFields, which
// fields each write set; the Writer reads its own entry there to remove what
// it wrote before and desired no longer sets (see "Fields we wrote before"
// in package compare). A Writer built with an empty fieldOwner reads and
// writes nothing: every call returns an error wrapping
// [errors.ErrNoFieldOwner], classed permanent.
func NewWriter(c client.Client, fieldOwner string) *Writer {
	return &Writer{client: c, fieldOwner: fieldOwner}
}

// Validate reports what keeps the Writer from working: an empty field owner
// ([errors.ErrNoFieldOwner]), no client or a misconfigured HotLoops
// ([ErrInvalidWriter]). The error is classed permanent. Every call of the
// Writer validates it first and returns this error instead of reading or
// writing; call Validate at setup to fail early.
func (w *Writer) Validate() error {
	switch {
	case w.fieldOwner == "":
		return errors.Permanent(fmt.Errorf("drift: %w: build the Writer with drift.NewWriter(c, name), name the operator's own, the same for all its writes", errors.ErrNoFieldOwner))
	case w.client == nil:
		return errors.Permanent(fmt.Errorf("%w: no client: build it with drift.NewWriter(c, name)", ErrInvalidWriter))
	}
	if h := w.HotLoops; h != nil {
		if err := h.Validate(); err != nil {
			return errors.Permanent(fmt.Errorf("%w: HotLoops: %w", ErrInvalidWriter, err))
		}
	}
	return nil
}

// start resolves the options of a call and validates the Writer; verb and
// obj name the call in the error.
func (w *Writer) start(verb string, obj client.Object, opts []Option) (*config, error) {
	if v := reflect.ValueOf(obj); obj == nil || v.Kind() == reflect.Pointer && v.IsNil() {
		return nil, errors.Permanent(fmt.Errorf("drift: %s: nil object", verb))
	}
	if err := w.Validate(); err != nil {
		return nil, fmt.Errorf("drift: %s %s: %w", verb, describe(obj), err)
	}
	return newConfig(opts), nil
}

// Ensure makes the live object have every field desired sets, writing only
// when something drifted and then only the drifted fields.
//
// It gets the live object by desired's namespace and name. When there is
// none, it creates desired (with a controller reference when given an
// [Owner]). Otherwise it compares with [compare.Diff] rules: no drift means
// no write at all, so fields the server defaulted and fields other writers
// own are never touched; drift means one patch carrying only the drifted
// desired fields, and removing the list elements and map entries the
// Writer's field owner wrote before that desired no longer sets (a
// strategic merge patch for built-in types, a JSON merge patch for custom
// resources and unstructured objects; see [OptimisticLock]). Status is
// never compared or written. With [Replaces], the patch also takes over the
// fields of the managers the operator replaces.
//
// Before it writes to an existing object, Ensure makes sure the object is
// the caller's: controlled or linked by the owner desired names, or written
// before by the Writer's field owner. Somebody else's object is left as it
// is, and Ensure returns a permanent [*ForeignError] naming it; [Adopt]
// takes over one that no owner controls or links.
//
// On success desired holds the object as the server returned it, as after
// client.Create. With HotLoops, a drift that keeps coming back is not
// patched, and Ensure returns a [*HotLoopError] with OperationUnchanged and
// the drift it held back.
//
// What it reads of the live object, from the cache with a manager's client:
// every field desired sets, and of metadata.managedFields the Writer's
// field owner's entries for the object itself and any other manager's entry
// on or beneath the same fields (the entries of the managers [Replaces]
// names too, while there are some). diet.ManagedFields keeps exactly these;
// a transform that strips managedFields turns the removals off without an
// error. An object the cache keeps in part (diet.Fields) is read whole from
// APIReader. The cached object is read without a copy
// (client.UnsafeDisableDeepCopy) and never changed: desired gets a copy.
// EnsureMutate and EnsureApplied read the same.
func (w *Writer) Ensure(ctx context.Context, desired client.Object, opts ...Option) (Outcome, error) {
	return w.ensure(ctx, desired, opts)
}

// EnsureMutate is [Writer.Ensure] for code migrating from
// controllerutil.CreateOrUpdate: obj needs only its namespace and name;
// mutate sets the fields the caller wants, on the live object when there is
// one. mutate must not change the name or namespace.
//
// Unlike CreateOrUpdate it does not write when mutate changed nothing the
// live object lacks (defaulted fields that mutate overwrote with their zero
// value count as unchanged), and when it writes, it patches only the
// drifted fields. A field mutate sets to its zero value is not drift: to
// clear a field, use a pointer or [compare.Own]. Like Ensure it honours
// [Replaces].
func (w *Writer) EnsureMutate(ctx context.Context, obj client.Object, mutate func() error, opts ...Option) (Outcome, error) {
	return w.ensureMutate(ctx, obj, mutate, opts)
}

// EnsureApplied is [Writer.Ensure] through server-side apply: it applies
// desired as the Writer's field owner (see also [ForceOwnership]) when the
// object is missing or has drifted, and sends nothing when [compare.Diff]
// finds no drift. With [Replaces], a drifted object's first apply is
// preceded by a patch of its managedFields that takes the replaced
// managers' fields over.
//
// Before applying, desired is converted to unstructured content and pruned of
// nulls, empty maps and lists, status and server-managed metadata, so the
// apply claims only the fields desired sets. A field our last apply set and
// desired no longer sets is drift (our Apply entry in managedFields says so),
// so the apply that releases it, and lets the server remove it, is sent
// right away. See "Ensure or EnsureApplied?" in the package documentation.
//
// On success desired holds the object as the server returned it.
func (w *Writer) EnsureApplied(ctx context.Context, desired client.Object, opts ...Option) (Outcome, error) {
	return w.ensureApplied(ctx, desired, opts)
}

// kubernetesRules is the Option of the built-in API's rules, which every
// comparison of a Writer passes.
var kubernetesRules = compare.Rules(compare.KubernetesRules()...)

// compareOptions returns the options of the Writer's comparison for a call:
// the built-in rules and the client's scheme, the caller's options, then
// what the Writer decides (its field owner, no status, owner references with
// an Owner) and extra.
func (w *Writer) compareOptions(cfg *config, extra ...compare.Option) []compare.Option {
	opts := make([]compare.Option, 0, 5+len(cfg.compare)+len(extra))
	opts = append(opts, kubernetesRules, compare.WithScheme(w.client.Scheme()))
	opts = append(opts, cfg.compare...)
	opts = append(opts, compare.WithFieldOwner(w.fieldOwner), compare.IgnoreStatus())
	if cfg.owner != nil {
		opts = append(opts, compare.IncludeOwnerReferences())
	}
	return append(opts, extra...)
}

// describe names an object for an error: "namespace/name" or "name".
func describe(obj client.Object) string {
	if obj == nil {
		return "<nil>"
	}
	if ns := obj.GetNamespace(); ns != "" {
		return fmt.Sprintf("%q", ns+"/"+obj.GetName())
	}
	return fmt.Sprintf("%q", obj.GetName())
}
