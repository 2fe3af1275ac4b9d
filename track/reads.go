package track

import (
	"context"
	"fmt"
	"reflect"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/errors"
)

// Reads is the record of one reconcile of one referrer, opened by
// [Tracker.For]: every object read through it is recorded as read by the
// referrer, before it is read, so that a change that comes after the read
// wakes the referrer. [Reads.Done] ends the record. A Reads belongs to one
// reconcile: use it from the goroutine of that reconcile.
type Reads struct {
	t        *Tracker
	referrer types.NamespacedName
	read     []Reference
	done     bool
}

// Get reads the object key names into obj, as client.Reader's Get does,
// and records it as read by the referrer, missing or not: its creation,
// any change of it and its deletion wake the referrer, through the handler
// of [Tracker.Enqueue] for its kind.
//
// When the object's kind is watched and a copy read earlier is still
// current (no event came since), Get serves the copy and sends no request.
//
// A missing object is a [*MissingError] naming it, which also matches
// apierrors.IsNotFound. When its kind is watched, it is marked
// errors.Permanent with reason [ReasonReferenceNotFound]: retrying cannot
// make it appear, and its creation wakes the referrer, so a reconcile.Loop (or a
// requeue.Policy) reports the referrer Stalled, naming the object, and does
// not retry in a loop. When its kind is not watched, nothing would wake the
// referrer: the error stays transient (retried with backoff).
//
// A Tracker that fails [Tracker.Validate] reads nothing: Get returns that
// error.
func (r *Reads) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := r.t.Validate(); err != nil {
		return err
	}
	if v := reflect.ValueOf(obj); obj == nil || v.Kind() != reflect.Pointer || v.IsNil() {
		return errors.Permanent(fmt.Errorf("track: get %s: obj must be a non-nil pointer, not %T", key, obj))
	}
	ref, err := r.t.referenceAt(obj, key, schema.GroupKind{})
	if err != nil {
		return errors.Permanent(fmt.Errorf("track: get %s: the kind of %T: %w", key, obj, err))
	}

	t := r.t
	t.mu.Lock()
	held := t.add(ref, r.referrer)
	r.record(ref)
	watched := t.watched[ref.GroupKind()]
	if watched && held.copy != nil && reflect.TypeOf(held.copy) == reflect.TypeOf(obj) {
		reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(held.copy.DeepCopyObject()).Elem())
		t.mu.Unlock()
		return nil
	}
	events := held.events
	t.mu.Unlock()

	err = t.reader.Get(ctx, key, obj, opts...)
	switch {
	case err == nil:
		if watched {
			t.mu.Lock()
			// Keep the copy only if no event came during the read (the
			// event's reconcile reads again) and someone still reads it.
			if h := t.refs[ref]; h == held && h.events == events {
				h.copy = obj.DeepCopyObject().(client.Object)
			}
			t.mu.Unlock()
		}
		return nil
	case apierrors.IsNotFound(err):
		missing := errors.WithReason(&MissingError{Reference: ref, Referrer: r.referrer, Err: err}, ReasonReferenceNotFound)
		if watched {
			return errors.Permanent(missing)
		}
		return missing
	default:
		return fmt.Errorf("track: read %s: %w", ref, err)
	}
}

// Track records obj (its kind, namespace and name) as read by the referrer
// without reading it: its changes, creation and deletion wake the referrer
// as a Get's would. Use it for an object the reconcile depends on but reads
// otherwise, such as one a drift.Writer refused as somebody else's: its
// deletion, or its owner letting it go, wakes the referrer to try again.
func (r *Reads) Track(obj client.Object) error {
	if err := r.t.Validate(); err != nil {
		return err
	}
	if v := reflect.ValueOf(obj); obj == nil || v.Kind() != reflect.Pointer || v.IsNil() {
		return errors.Permanent(fmt.Errorf("track: track %T: not a non-nil pointer", obj))
	}
	ref, err := r.t.referenceOf(obj, schema.GroupKind{})
	if err != nil {
		return errors.Permanent(fmt.Errorf("track: track %s: the kind of %T: %w", client.ObjectKeyFromObject(obj), obj, err))
	}
	r.t.mu.Lock()
	defer r.t.mu.Unlock()
	r.t.add(ref, r.referrer)
	r.record(ref)
	return nil
}

// Done ends the record: from now on the referrer reads exactly what this
// reconcile read (with Get or Track), and the Tracker forgets what it read
// before and not this time. A reconcile that failed part-way forgets what it
// did not reach: a transient failure is retried and reads it again, and a
// permanent one is retried only when something it did read changes (or the
// referrer does). Calling Done again does nothing.
func (r *Reads) Done() {
	if r.done {
		return
	}
	r.done = true
	t := r.t
	t.mu.Lock()
	defer t.mu.Unlock()
	mine := t.referrers[r.referrer]
	kept := mine[:0]
	for _, ref := range mine {
		if slices.Contains(r.read, ref) {
			kept = append(kept, ref)
		} else {
			t.drop(ref, r.referrer)
		}
	}
	clear(mine[len(kept):])
	if len(kept) == 0 {
		delete(t.referrers, r.referrer)
	} else {
		t.referrers[r.referrer] = kept
	}
}

// record adds ref to what this reconcile read.
func (r *Reads) record(ref Reference) {
	if !slices.Contains(r.read, ref) {
		r.read = append(r.read, ref)
	}
}
