package health

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/reconcilekit/reconcilekit/internal/jsonnum"
)

// view is what the conventions read of an object: its generation, whether
// it is being deleted, and its status's observedGeneration and conditions.
type view struct {
	generation  int64
	deleting    bool
	observed    int64
	hasObserved bool
	conditions  []condition
	// noStatus: the object has no status, or an empty one.
	noStatus bool
}

// condition is one element of status.conditions.
type condition struct {
	typ, status, reason, message string
	observedGeneration           int64
}

// read takes the view of unstructured content; content of the wrong
// shape (a status that is not an object, a condition type that is not a
// string) is an error.
func read(u *unstructured.Unstructured) (view, error) {
	v := view{generation: u.GetGeneration()}
	if ts, found, _ := unstructured.NestedFieldNoCopy(u.Object, "metadata", "deletionTimestamp"); found {
		if s, ok := ts.(string); !ok || s != "" {
			v.deleting = true
		}
	}
	raw, found := u.Object["status"]
	if !found || raw == nil {
		v.noStatus = true
		return v, nil
	}
	st, ok := raw.(map[string]any)
	if !ok {
		return v, fmt.Errorf("status is a %T, not an object", raw)
	}
	v.noStatus = len(st) == 0
	if og, found := st["observedGeneration"]; found && og != nil {
		n, err := integer(og)
		if err != nil {
			return v, fmt.Errorf("status.observedGeneration: %w", err)
		}
		v.observed, v.hasObserved = n, true
	}
	raw, found = st["conditions"]
	if !found || raw == nil {
		return v, nil
	}
	list, ok := raw.([]any)
	if !ok {
		return v, fmt.Errorf("status.conditions is a %T, not a list", raw)
	}
	for i, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			return v, fmt.Errorf("status.conditions[%d] is a %T, not an object", i, item)
		}
		var c condition
		for _, f := range []struct {
			name string
			to   *string
		}{{"type", &c.typ}, {"status", &c.status}, {"reason", &c.reason}, {"message", &c.message}} {
			switch s := m[f.name].(type) {
			case string:
				*f.to = s
			case nil:
			default:
				return v, fmt.Errorf("status.conditions[%d].%s is a %T, not a string", i, f.name, s)
			}
		}
		if og, found := m["observedGeneration"]; found && og != nil {
			n, err := integer(og)
			if err != nil {
				return v, fmt.Errorf("status.conditions[%d].observedGeneration: %w", i, err)
			}
			c.observedGeneration = n
		}
		v.conditions = append(v.conditions, c)
	}
	return v, nil
}

// integer reads a JSON number of unstructured content that must be an
// integer (package jsonnum: any number type of Go content, float32 too).
func integer(x any) (int64, error) {
	if n, ok := jsonnum.Int(x); ok {
		return n, nil
	}
	return 0, fmt.Errorf("%v is not an integer", x)
}

// conventions says the health of an object without a typed rule of its
// own, by kstatus's generic rules: deletion, observedGeneration, the
// Reconciling and Stalled conditions, a CustomResourceDefinition's
// Established, the Ready condition. Two rules are stricter than kstatus's:
// a Ready condition whose observedGeneration is older than the object's
// generation describes an older spec, and a custom resource with no
// status at all has not been observed by its controller yet; both are
// InProgress (kstatus: the Ready condition's verdict, and Current).
func conventions(v view, gvk schema.GroupVersionKind, custom bool) Health {
	if v.deleting {
		return terminating()
	}
	if v.hasObserved && v.observed != v.generation {
		return notObserved(v.generation, v.observed)
	}
	for _, c := range v.conditions {
		if c.status != "True" {
			continue
		}
		switch c.typ {
		case "Reconciling":
			return inProgress(orDefault(c.reason, "Reconciling"), c.message)
		case "Stalled":
			return failed(orDefault(c.reason, "Stalled"), c.message)
		}
	}
	if b := builtins[gvk.GroupKind()]; b.view != nil {
		return b.view(v)
	}
	for _, c := range v.conditions {
		if c.typ != "Ready" {
			continue
		}
		if c.observedGeneration != 0 && c.observedGeneration < v.generation {
			return inProgress(reasonNotObserved, fmt.Sprintf("generation %d not yet observed by its controller (its Ready condition describes generation %d)", v.generation, c.observedGeneration))
		}
		switch c.status {
		case "True":
			return current("Ready", c.message)
		case "False", "Unknown":
			return inProgress(orDefault(c.reason, "NotReady"), c.message)
		}
	}
	if custom && v.noStatus && v.generation != 0 {
		return inProgress("NoStatus", "no status yet: its controller has not reported")
	}
	return current("Current", "")
}

// definition: a CustomResourceDefinition is Current once Established,
// Failed when its names are refused or it cannot be established.
func definition(v view) Health {
	for _, c := range v.conditions {
		if c.typ == "NamesAccepted" && c.status == "False" {
			return failed(orDefault(c.reason, "NamesNotAccepted"), c.message)
		}
		if c.typ == "Established" {
			if c.status == "False" && c.reason != "Installing" {
				return failed(orDefault(c.reason, "NotEstablished"), c.message)
			}
			if c.status == "True" {
				return current("Established", "established")
			}
		}
	}
	return inProgress("Installing", "being installed")
}
