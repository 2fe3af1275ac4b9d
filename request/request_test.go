package request_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/reconcilekit/reconcilekit/internal/testapi"
	"github.com/reconcilekit/reconcilekit/request"
)

// The test API type records requests.
var _ request.Object = (*testapi.Widget)(nil)

func widget(token *string, handled string) *testapi.Widget {
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: "w"}}
	if token != nil {
		w.Annotations = map[string]string{request.Annotation: *token, "other": "x"}
	}
	w.Status.LastHandledReconcileAt = handled
	return w
}

func ptr(s string) *string { return &s }

func TestMarkHandled(t *testing.T) {
	for _, tc := range []struct {
		name        string
		obj         *testapi.Widget
		wantChanged bool
		wantHandled string
	}{
		{name: "no request", obj: widget(nil, "")},
		{name: "no request now, one handled before", obj: widget(nil, "1"), wantHandled: "1"},
		{name: "a new request", obj: widget(ptr("2"), "1"), wantChanged: true, wantHandled: "2"},
		{name: "the first request", obj: widget(ptr("1"), ""), wantChanged: true, wantHandled: "1"},
		{name: "handled already", obj: widget(ptr("1"), "1"), wantHandled: "1"},
		{name: "an empty token is a token", obj: widget(ptr(""), "1"), wantChanged: true, wantHandled: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := request.MarkHandled(tc.obj); got != tc.wantChanged {
				t.Errorf("MarkHandled = %v, want %v", got, tc.wantChanged)
			}
			if got := tc.obj.Status.LastHandledReconcileAt; got != tc.wantHandled {
				t.Errorf("lastHandledReconcileAt = %q, want %q", got, tc.wantHandled)
			}
			if request.MarkHandled(tc.obj) {
				t.Error("MarkHandled again changed something")
			}
		})
	}
}

func TestToken(t *testing.T) {
	if token, ok := request.Token(widget(ptr("t1"), "")); token != "t1" || !ok {
		t.Errorf("Token = %q, %v; want t1, true", token, ok)
	}
	if token, ok := request.Token(widget(nil, "t0")); token != "" || ok {
		t.Errorf("Token without the annotation = %q, %v; want none", token, ok)
	}
}

func TestPredicatePassesNewRequestsOnly(t *testing.T) {
	p := request.Predicate()
	for _, tc := range []struct {
		name     string
		old, new *testapi.Widget
		want     bool
	}{
		{"first request", widget(nil, ""), widget(ptr("1"), ""), true},
		{"new request", widget(ptr("1"), "1"), widget(ptr("2"), "1"), true},
		{"same request (our status write, a resync)", widget(ptr("1"), ""), widget(ptr("1"), "1"), false},
		{"request removed", widget(ptr("1"), "1"), widget(nil, "1"), false},
		{"no request", widget(nil, ""), widget(nil, ""), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := p.Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}); got != tc.want {
				t.Errorf("Update = %v, want %v", got, tc.want)
			}
		})
	}
	if p.Update(event.UpdateEvent{ObjectNew: widget(ptr("1"), "")}) {
		t.Error("an update without its old object passed")
	}
	if !p.Create(event.CreateEvent{Object: widget(nil, "")}) {
		t.Error("a create event was dropped")
	}
}
