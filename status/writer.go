package status

import (
	"bytes"
	"context"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	clientretry "k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/errors"
)

// ErrNoClient is returned by a [Writer] without a client (the zero Writer:
// build one with [NewWriter]).
var ErrNoClient = errors.New("status: writer has no client")

// ErrInvalidWriter is wrapped by the error of [Writer.Validate] for a
// Writer that cannot write, with the reason.
var ErrInvalidWriter = errors.New("status: invalid Writer")

// ErrNoResourceVersion is returned when the object to write has no
// resourceVersion: the writer needs the version it read to detect
// concurrent writers, so the object must come from the API server.
var ErrNoResourceVersion = errors.New("status: object has no resourceVersion")

// ErrObjectReplaced is returned when, after a conflict, the object read
// again is another object of the same name (it was deleted and created
// again): the changes were made for the old one and are not applied.
var ErrObjectReplaced = errors.New("status: object was deleted and created again")

// Writer writes an object's status subresource only when the status
// changed, without losing what other writers put there.
//
// Take a [Snapshot] before changing the status, change it, then call
// [Snapshot.Write]; or let [Writer.Patch] do the three steps. A write is a
// JSON merge patch of the status subresource that carries the
// resourceVersion of the object, so the API server refuses it (409 Conflict)
// if anyone wrote the object since it was read: a condition set by another
// writer is never overwritten by a stale copy. On a conflict the writer reads
// the object again through APIReader and re-applies only its own changes:
// the conditions it set or removed (matched by type in status.conditions)
// and the other status fields it changed. Conditions of other types, and
// fields it did not touch, keep the server's values.
//
// When nothing in the status changed, a write sends no request at all.
//
// Why a merge patch with a resourceVersion rather than server-side apply:
// applying a typed object claims every field it carries, including the
// conditions of other writers it happened to read, and a later apply without
// them would delete them; applying only this writer's fields needs to know
// which it owns and an apply configuration per type. A merge patch replaces
// status.conditions whole, which is only safe against the version it was
// computed from, hence the resourceVersion and the re-apply on conflict.
//
// Other status fields this writer changed are re-applied with JSON merge
// patch semantics: on a field both writers changed, this writer's value
// wins. Conditions kept anywhere but status.conditions are such a field.
//
// What it reads of an object, the one given and the one re-read after a
// conflict: its status, resourceVersion, UID, name and namespace; nothing of
// managedFields (a cache diet keeps all of it).
//
// Build a Writer with [NewWriter], which takes what every write needs: the
// client and the operator's field owner. The zero Writer has neither and
// every write of it fails ([ErrNoClient]).
type Writer struct {
	// client writes the status subresource.
	client client.Client
	// APIReader re-reads the object after a conflict. Use a reader that asks
	// the API server, such as the manager's GetAPIReader(): a cached client
	// may return the same stale object again. Defaults to the Writer's
	// client.
	APIReader client.Reader
	// fieldOwner names the operator: the field manager of every status
	// write.
	fieldOwner string
	// Retry says how often, and how far apart, a patch refused with a
	// conflict is sent again after re-reading the object: Retry.Steps is
	// the most patches sent in all. The zero value means client-go's
	// retry.DefaultRetry (k8s.io/client-go/util/retry): 5 patches, 10ms
	// apart, with jitter. No field may be negative ([Writer.Validate]).
	Retry wait.Backoff
}

// NewWriter returns a Writer that writes status through c under the field
// manager fieldOwner: the operator's own name, under which the API server
// records in metadata.managedFields the fields each write set. Give every
// write of the operator the same name (drift, finalizer and reconcile take
// it where they are built too), never the client's default (the binary's
// name: every kubebuilder binary is "manager") nor a name another
// controller uses. With an empty fieldOwner every write fails with
// errors.ErrNoFieldOwner and sends nothing. Set the optional fields
// (APIReader, Retry) before the first write.
func NewWriter(c client.Client, fieldOwner string) *Writer {
	return &Writer{client: c, fieldOwner: fieldOwner}
}

// Validate reports a Writer that cannot write: no client, no field owner
// (the error also wraps errors.ErrNoFieldOwner), or a negative field of
// Retry. The error wraps [ErrInvalidWriter]. Every [Snapshot.Write] calls
// it first and returns its error, classed permanent, without sending
// anything; call it while setting up to fail early.
func (w *Writer) Validate() error {
	switch {
	case w == nil:
		return fmt.Errorf("%w: nil", ErrInvalidWriter)
	case w.client == nil:
		return fmt.Errorf("%w: %w: build it with status.NewWriter(c, fieldOwner)", ErrInvalidWriter, ErrNoClient)
	case w.fieldOwner == "":
		return fmt.Errorf("%w: %w: build it with status.NewWriter(c, fieldOwner), fieldOwner the operator's own name, the same for all its writes", ErrInvalidWriter, errors.ErrNoFieldOwner)
	case w.Retry.Steps < 0 || w.Retry.Duration < 0 || w.Retry.Factor < 0 || w.Retry.Jitter < 0 || w.Retry.Cap < 0:
		return fmt.Errorf("%w: Retry has a negative field: %+v", ErrInvalidWriter, w.Retry)
	}
	return nil
}

// Snapshot is an object's status as it was before a change, taken with
// [Writer.Snapshot]. Its zero value is not usable.
type Snapshot struct {
	w      Writer
	obj    client.Object
	before client.Object
}

// Snapshot records a deep copy of obj so that a later [Snapshot.Write] can
// tell what changed in obj's status. obj must not be nil.
func (w *Writer) Snapshot(obj client.Object) *Snapshot {
	s := &Snapshot{obj: obj}
	if w != nil {
		s.w = *w
	}
	s.reset()
	return s
}

// SnapshotFrom is [Writer.Snapshot] of obj when the state to compare with
// is at hand: before is obj as it was read, before any change. The
// Snapshot only reads before, so it may be the cache's own object, read
// without a copy (client.UnsafeDisableDeepCopy): a reconciler that copies
// what it read to change it then makes one deep copy instead of two.
// before is never written to, and is dropped after the first write (the
// snapshot then holds a copy of obj, as Snapshot's does). A nil before is
// Snapshot(obj).
func (w *Writer) SnapshotFrom(obj, before client.Object) *Snapshot {
	if before == nil || reflect.ValueOf(before).Kind() == reflect.Pointer && reflect.ValueOf(before).IsNil() {
		return w.Snapshot(obj)
	}
	s := &Snapshot{obj: obj, before: before}
	if w != nil {
		s.w = *w
	}
	return s
}

// reset makes the object's current state the snapshot.
func (s *Snapshot) reset() {
	if s.obj == nil {
		return
	}
	if c, ok := s.obj.DeepCopyObject().(client.Object); ok {
		s.before = c
	}
}

// Patch snapshots obj, calls mutate to change its status, and writes the
// status if it changed, as [Snapshot.Write] does. When mutate returns an
// error nothing is written and the error is returned.
func (w *Writer) Patch(ctx context.Context, obj client.Object, mutate func() error) (changed bool, err error) {
	s := w.Snapshot(obj)
	if err := mutate(); err != nil {
		return false, err
	}
	return s.Write(ctx)
}

// Changed reports whether the status of the object differs from the
// snapshot, that is whether [Snapshot.Write] would send a request. It sends
// none itself.
func (s *Snapshot) Changed() (bool, error) {
	e, _, _, err := s.pending()
	return !e.empty(), err
}

// pending returns this writer's changes since the snapshot, and the JSON
// status of the snapshot and of the object; no changes when there are none.
func (s *Snapshot) pending() (e edits, before, after map[string]any, err error) {
	if err := s.valid(); err != nil {
		return edits{}, nil, nil, err
	}
	// Fast path for the common no-op: an untouched status is identical to
	// its deep copy (only the status is written: whatever else changed,
	// such as the type meta a cache leaves unset, writes nothing).
	// Anything else is decided on the JSON form.
	if b, ok := statusValue(s.before); ok {
		if a, ok := statusValue(s.obj); ok && reflect.DeepEqual(b, a) {
			return edits{}, nil, nil, nil
		}
	} else if reflect.DeepEqual(s.before, s.obj) {
		return edits{}, nil, nil, nil
	}
	return s.edits()
}

func (s *Snapshot) valid() error {
	if s == nil || s.obj == nil || s.before == nil {
		return errors.New("status: snapshot not taken with Writer.Snapshot")
	}
	if s.w.client == nil {
		return ErrNoClient
	}
	return nil
}

func (e edits) empty() bool {
	return len(e.rest) == 0 && len(e.conditions.set) == 0 && len(e.conditions.remove) == 0
}

// edits returns this writer's changes and the JSON status of the snapshot
// and of the object.
func (s *Snapshot) edits() (e edits, before, after map[string]any, err error) {
	if before, err = statusOf(s.before); err != nil {
		return edits{}, nil, nil, err
	}
	if after, err = statusOf(s.obj); err != nil {
		return edits{}, nil, nil, err
	}
	return diffEdits(before, after), before, after, nil
}

// statusOf returns the JSON form of obj's status, nil when it is not a JSON
// object: only the status is encoded when encoding/json's rules say which
// field it is (the object's managedFields, spec and the rest can be many
// times its size), else the whole object.
func statusOf(obj client.Object) (map[string]any, error) {
	var m map[string]any
	v, ok := statusValue(obj)
	var err error
	if ok {
		m, err = jsonObject(v)
	} else if m, err = toJSONMap(obj); err == nil {
		m, _ = m["status"].(map[string]any)
	}
	if err != nil {
		return nil, fmt.Errorf("status: encoding %s: %w", client.ObjectKeyFromObject(obj), err)
	}
	return m, nil
}

// jsonObject returns the JSON form of v as a map, or nil when it is not a
// JSON object (null, a string, a list).
func jsonObject(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if b = bytes.TrimSpace(b); len(b) == 0 || b[0] != '{' {
		return nil, nil
	}
	return decodeJSONMap(b)
}

// statusValue returns what encoding/json writes as obj's "status" field
// (nil when it leaves the field out), and false when it cannot tell: the
// type encodes itself, or has no single top-level field named "status".
func statusValue(obj client.Object) (any, bool) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.Object["status"], true
	}
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct ||
		v.Type().Implements(jsonMarshaler) || v.Type().Implements(textMarshaler) {
		return nil, false
	}
	v = v.Elem()
	i, opts, ok := statusField(v.Type())
	if !ok {
		return nil, false
	}
	fv := v.Field(i)
	if omitted(fv, opts) {
		return nil, true
	}
	// Through its address, as when the whole object is encoded: methods
	// with a pointer receiver (MarshalJSON, MarshalText) count.
	return fv.Addr().Interface(), true
}

// statusField returns the index and the json tag options of the top-level
// field of struct type t that encoding/json writes as "status"; false when
// there is none, two (encoding/json then writes neither), or an embedded
// field tagged "status" (left to encoding the whole object).
func statusField(t reflect.Type) (index int, opts string, ok bool) {
	index = -1
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, o, _ := strings.Cut(tag, ",")
		if f.Anonymous {
			if name == "status" {
				return 0, "", false
			}
			continue // its fields are promoted, below any top-level one
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if name != "status" {
			continue
		}
		if index >= 0 {
			return 0, "", false
		}
		index, opts = i, o
	}
	return index, opts, index >= 0
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
	zeroer        = reflect.TypeFor[interface{ IsZero() bool }]()
)

// omitted reports whether encoding/json leaves out a struct field with the
// tag options opts and the addressable value v.
func omitted(v reflect.Value, opts string) bool {
	for o := range strings.SplitSeq(opts, ",") {
		if (o == "omitempty" && isEmpty(v)) || (o == "omitzero" && isZero(v)) {
			return true
		}
	}
	return false
}

// isEmpty is encoding/json's omitempty test.
func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}

// isZero is encoding/json's omitzero test: the field type's IsZero method
// when it has one, else the zero value.
func isZero(v reflect.Value) bool {
	t := v.Type()
	call := func(v reflect.Value) bool { return v.Interface().(interface{ IsZero() bool }).IsZero() }
	switch {
	case t.Kind() == reflect.Interface && t.Implements(zeroer):
		return v.IsNil() || (v.Elem().Kind() == reflect.Pointer && v.Elem().IsNil()) || call(v)
	case t.Kind() == reflect.Pointer && t.Implements(zeroer):
		return v.IsNil() || call(v)
	case t.Implements(zeroer):
		return call(v)
	case reflect.PointerTo(t).Implements(zeroer):
		return call(v.Addr())
	}
	return v.IsZero()
}

// Write sends the status changes made to the object since the snapshot to
// its status subresource and reports whether it sent one that the server
// accepted. With no change it sends nothing and returns false. On success the
// object is replaced by the server's answer, so its resourceVersion is
// current; after conflicts it also holds the other writers' changes.
//
// Errors from the API server are wrapped: apierrors.IsConflict is true for
// the error returned after Retry.Steps conflicts, and apierrors.IsNotFound
// when the object is gone. A Writer that [Writer.Validate] refuses (built
// without a client or with an empty field owner) sends nothing and returns
// its error, classed permanent, whether or not the status changed.
func (s *Snapshot) Write(ctx context.Context) (changed bool, err error) {
	changed, err = s.write(ctx)
	switch {
	case err != nil:
		writesTotal.WithLabelValues("failed").Inc()
	case changed:
		writesTotal.WithLabelValues("written").Inc()
	default:
		writesTotal.WithLabelValues("unchanged").Inc()
	}
	return changed, err
}

func (s *Snapshot) write(ctx context.Context) (changed bool, err error) {
	// The first patch turns the snapshot into the object as the caller
	// left it; after a conflict, the same edits are re-applied on a fresh
	// copy.
	if s == nil || s.obj == nil || s.before == nil {
		return false, s.valid()
	}
	if err := s.w.Validate(); err != nil {
		// The same on every write, with or without a change: the mistake
		// shows on the first reconcile.
		return false, s.wrap(errors.Permanent(err))
	}
	e, before, after, err := s.pending()
	if err != nil || e.empty() {
		return false, err
	}
	rv := s.obj.GetResourceVersion()
	if rv == "" {
		return false, s.wrap(ErrNoResourceVersion)
	}
	retry := s.w.Retry
	if retry == (wait.Backoff{}) {
		retry = clientretry.DefaultRetry
	}
	maxAttempts := max(retry.Steps, 1)
	reader := s.w.APIReader
	if reader == nil {
		reader = s.w.client
	}
	for attempt := 1; ; attempt++ {
		patch := mergeDiff(before, after)
		err := s.send(ctx, rv, patch)
		if err == nil {
			s.reset()
			return true, nil
		}
		if !apierrors.IsConflict(err) {
			return false, s.wrap(err)
		}
		writesTotal.WithLabelValues("conflict").Inc()
		if attempt >= maxAttempts {
			return false, s.wrap(fmt.Errorf("gave up after %d conflicting attempts: %w", attempt, err))
		}
		if err := sleep(ctx, retry.Step()); err != nil {
			return false, s.wrap(err)
		}
		fresh, err := newEmpty(s.obj)
		if err != nil {
			return false, s.wrap(err)
		}
		if err := reader.Get(ctx, client.ObjectKeyFromObject(s.obj), fresh); err != nil {
			return false, s.wrap(fmt.Errorf("re-reading after a conflict: %w", err))
		}
		if uid := s.obj.GetUID(); uid != "" && fresh.GetUID() != uid {
			return false, s.wrap(fmt.Errorf("%w: uid %s, now %s", ErrObjectReplaced, uid, fresh.GetUID()))
		}
		if before, err = statusOf(fresh); err != nil {
			return false, s.wrap(err)
		}
		if after, err = e.apply(before); err != nil {
			return false, s.wrap(err)
		}
		rv = fresh.GetResourceVersion()
		if len(mergeDiff(before, after)) == 0 {
			copyInto(s.obj, fresh)
			s.reset()
			return false, nil
		}
	}
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// send patches the status subresource with the merge patch and, on success,
// replaces the caller's object with the server's answer.
func (s *Snapshot) send(ctx context.Context, rv string, statusPatch map[string]any) error {
	body, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": rv},
		"status":   statusPatch,
	})
	if err != nil {
		return err
	}
	out, err := newEmpty(s.obj)
	if err != nil {
		return err
	}
	out.SetNamespace(s.obj.GetNamespace())
	out.SetName(s.obj.GetName())
	if err := s.w.client.Status().Patch(ctx, out, client.RawPatch(types.MergePatchType, body), client.FieldOwner(s.w.fieldOwner)); err != nil {
		return err
	}
	copyInto(s.obj, out)
	return nil
}

func (s *Snapshot) wrap(err error) error {
	return fmt.Errorf("status: write %s: %w", client.ObjectKeyFromObject(s.obj), err)
}

// newEmpty returns a new, empty object of obj's type, so that decoding a
// server answer into it leaves no stale fields behind.
func newEmpty(obj client.Object) (client.Object, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		n := &unstructured.Unstructured{}
		n.SetGroupVersionKind(u.GroupVersionKind())
		return n, nil
	}
	t := reflect.TypeOf(obj)
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("status: %T is not a pointer to a struct", obj)
	}
	n, ok := reflect.New(t.Elem()).Interface().(client.Object)
	if !ok {
		return nil, fmt.Errorf("status: new %T is not a client.Object", obj)
	}
	return n, nil
}

// copyInto makes dst a copy of src, two objects of the same type.
func copyInto(dst, src client.Object) {
	reflect.ValueOf(dst).Elem().Set(reflect.ValueOf(src).Elem())
}
