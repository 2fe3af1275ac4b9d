package request

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// Annotation asks for a reconcile of the object it is set on. Its value is
// a token: any new value is a new request (the time, as flux reconcile
// writes it, is a good one). It is Flux's name, so that the scripts, tools
// and habits that already ask Flux's objects for a reconcile work on the
// operator's objects too:
//
//	kubectl annotate --overwrite widget/w reconcile.fluxcd.io/requestedAt="$(date +%s)"
const Annotation = "reconcile.fluxcd.io/requestedAt"

// Status is an API type whose status records the last request handled,
// the token of the [Annotation] the last reconcile saw. The method names are
// those of Flux's meta.ReconcileRequestStatus, and the field is Flux's too:
//
//	// LastHandledReconcileAt is the last reconcile request handled.
//	// +optional
//	LastHandledReconcileAt string `json:"lastHandledReconcileAt,omitempty"`
//
//	// GetLastHandledReconcileRequest returns status.lastHandledReconcileAt.
//	func (w *Website) GetLastHandledReconcileRequest() string {
//		return w.Status.LastHandledReconcileAt
//	}
//
//	// SetLastHandledReconcileRequest sets status.lastHandledReconcileAt.
//	func (w *Website) SetLastHandledReconcileRequest(token string) {
//		w.Status.LastHandledReconcileAt = token
//	}
type Status interface {
	GetLastHandledReconcileRequest() string
	SetLastHandledReconcileRequest(token string)
}

// Object is an object whose status records the last request handled.
type Object interface {
	metav1.Object
	Status
}

// Token returns the value of obj's [Annotation] and whether it has one.
func Token(obj metav1.Object) (token string, ok bool) {
	token, ok = obj.GetAnnotations()[Annotation]
	return token, ok
}

// MarkHandled records that a reconcile handled obj's request: it sets the
// last request handled to the token of obj's [Annotation], and reports
// whether that changed anything. An object without the annotation keeps the
// token it recorded before. Call it when the outcome of the reconcile is on
// the object's status, in the same status write, so that a script that sees
// its token there reads the outcome of a reconcile that ran after its
// request.
func MarkHandled(obj Object) (changed bool) {
	token, ok := Token(obj)
	if !ok || token == obj.GetLastHandledReconcileRequest() {
		return false
	}
	obj.SetLastHandledReconcileRequest(token)
	return true
}

// Predicate lets through the updates that request a reconcile: those that
// set [Annotation] to a new value. Create, delete and generic events pass.
// Add it with predicate.Or beside a filter that drops changes of
// annotations, such as predicate.GenerationChangedPredicate;
// reconcile.Predicate includes it. Removing the annotation asks for nothing.
func Predicate() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			if e.ObjectOld == nil || e.ObjectNew == nil {
				return false
			}
			token, ok := Token(e.ObjectNew)
			old, had := Token(e.ObjectOld)
			return ok && (!had || token != old)
		},
	}
}
