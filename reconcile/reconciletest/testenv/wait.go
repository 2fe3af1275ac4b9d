package testenv

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/yaml"
)

// pollInterval is how often a wait reads the object again, and readTimeout
// bounds one read.
const (
	pollInterval = 50 * time.Millisecond
	readTimeout  = 10 * time.Second
)

// WaitFor waits until obj, read from the API server (not a cache), makes
// met return true. obj names the object (namespace and name) and receives
// each read; met inspects it, usually through the typed variable obj points
// to:
//
//	w := &v1.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w"}}
//	err := env.WaitFor(ctx, w, "status.phase Done", func() bool { return w.Status.Phase == "Done" })
//
// met runs only after a read that found the object: while it is absent
// (not created yet, or deleted) the wait goes on, and a deleted object
// never meets a condition. To wait until an object is gone, use
// [Env.WaitGone].
//
// The wait ends with ctx, or after [Options.WaitTimeout] when ctx has no
// deadline; the error then says what was awaited, for how long, and shows
// the object as last seen (or that it was never found), and wraps
// context.DeadlineExceeded.
func (e *Env) WaitFor(ctx context.Context, obj client.Object, what string, met func() bool) error {
	if e == nil || e.reader == nil {
		return errors.New("testenv: WaitFor on an Env that is not running")
	}
	return e.wait(ctx, e.reader, obj, what, found(met))
}

// WaitGone waits until obj, read from the API server (not a cache), is gone:
// a read finds no object of its namespace and name, or, when obj has a UID
// (as it has once created or read), finds another object of the same name,
// created again after obj was deleted. An object that is being deleted is
// not gone while a finalizer holds it; the error of a wait that ends first
// shows it as last seen, its deletionTimestamp and finalizers included.
//
//	if err := c.Delete(ctx, w); err != nil { ... }
//	if err := env.WaitGone(ctx, w); err != nil {
//		t.Fatal(err) // says which finalizer still held it
//	}
//
// obj receives each read. The wait ends as [Env.WaitFor]'s does.
func (e *Env) WaitGone(ctx context.Context, obj client.Object) error {
	if e == nil || e.reader == nil {
		return errors.New("testenv: WaitGone on an Env that is not running")
	}
	uid := obj.GetUID()
	return e.wait(ctx, e.reader, obj, "gone", func(err error) bool {
		return apierrors.IsNotFound(err) || err == nil && uid != "" && obj.GetUID() != uid
	})
}

// found is the condition of a wait that met decides once the object is
// read.
func found(met func() bool) func(error) bool {
	return func(err error) bool { return err == nil && met() }
}

// WaitForCondition waits until obj has the condition type with the status
// in status.conditions, and its observedGeneration (when set) is the
// object's generation: the object's controller has seen its latest spec.
// It works on any object with standard conditions, typed or unstructured.
func (e *Env) WaitForCondition(ctx context.Context, obj client.Object, conditionType string, status metav1.ConditionStatus) error {
	what := fmt.Sprintf("condition %s=%s", conditionType, status)
	return e.WaitFor(ctx, obj, what, func() bool { return HasCondition(obj, conditionType, status) })
}

// HasCondition reports whether obj's status.conditions hold the condition
// type with the status, observed at the object's generation when the
// condition records one.
func HasCondition(obj client.Object, conditionType string, status metav1.ConditionStatus) bool {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return false
	}
	st, _ := u["status"].(map[string]any)
	list, _ := st["conditions"].([]any)
	for _, item := range list {
		c, _ := item.(map[string]any)
		if c["type"] != conditionType {
			continue
		}
		if c["status"] != string(status) {
			return false
		}
		observed, ok := c["observedGeneration"].(int64)
		return !ok || observed == obj.GetGeneration()
	}
	return false
}

// wait reads obj through r until done holds of the read's error (nil when
// it found the object, which obj then holds).
func (e *Env) wait(ctx context.Context, r client.Reader, obj client.Object, what string, done func(error) bool) error {
	timeout := e.waitTimeout
	if _, ok := ctx.Deadline(); ok {
		timeout = 0
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	// A wait on a real API server, with real timeouts, by the real clock.
	var clk clock.PassiveClock = clock.RealClock{}
	started := clk.Now()
	key := client.ObjectKeyFromObject(obj)
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	// last is the object as last read, lastErr why the last read failed.
	var last client.Object
	lastErr := errNeverRead
	for {
		// A read is not cut short by the wait's deadline, so the last
		// one shown is a real observation.
		readCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readTimeout)
		err := r.Get(readCtx, key, obj)
		cancel()
		if err == nil {
			last, lastErr = obj.DeepCopyObject().(client.Object), nil
		} else {
			last, lastErr = nil, err
		}
		if done(err) {
			return nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return &WaitError{
				What:   fmt.Sprintf("%s %q to be %s", e.kindOf(obj), key, what),
				Waited: clk.Since(started).Round(time.Millisecond),
				Last:   e.lastSeen(last, lastErr),
				Err:    context.Cause(ctx),
			}
		}
	}
}

// errNeverRead is why a wait saw no object when it ended before its first
// read.
var errNeverRead = errors.New("the wait ended before the first read")

// WaitError is the error of a wait that ended before its condition held.
type WaitError struct {
	// What was awaited: `Widget "ns/w" to be condition Ready=True`.
	What string
	// Waited is how long the wait lasted.
	Waited time.Duration
	// Last is the object as last seen, as YAML without managedFields, or
	// why it could not be read.
	Last string
	// Err is why the wait ended: the context's error.
	Err error
}

// Error says what was awaited, for how long, and what was last seen.
func (e *WaitError) Error() string {
	return fmt.Sprintf("testenv: gave up after %v waiting for %s (%v); last seen:\n%s", e.Waited, e.What, e.Err, e.Last)
}

// Unwrap returns the context's error.
func (e *WaitError) Unwrap() error { return e.Err }

func (e *Env) kindOf(obj client.Object) string {
	if gvk, err := apiutil.GVKForObject(obj, e.Scheme); err == nil {
		return gvk.Kind
	}
	return fmt.Sprintf("%T", obj)
}

// maxLastSeen bounds the object shown in a wait's error.
const maxLastSeen = 4096

func (e *Env) lastSeen(obj client.Object, err error) string {
	switch {
	case apierrors.IsNotFound(err):
		return "  (not found)"
	case err != nil:
		return fmt.Sprintf("  (cannot read it: %v)", err)
	}
	u, convErr := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if convErr != nil {
		return fmt.Sprintf("  (cannot show it: %v)", convErr)
	}
	if m, ok := u["metadata"].(map[string]any); ok {
		delete(m, "managedFields")
	}
	if gvk, err := apiutil.GVKForObject(obj, e.Scheme); err == nil {
		u["apiVersion"], u["kind"] = gvk.GroupVersion().String(), gvk.Kind
	}
	data, yamlErr := yaml.Marshal(u)
	if yamlErr != nil {
		return fmt.Sprintf("  (cannot show it: %v)", yamlErr)
	}
	s := string(data)
	if len(s) > maxLastSeen {
		s = s[:maxLastSeen] + "\n... (cut)"
	}
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}
