package health

import (
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/errors"
)

// Status is how an object is doing, in the words of kstatus
// (sigs.k8s.io/cli-utils/pkg/kstatus): [Current], [InProgress] or [Failed].
type Status string

const (
	// Current: the object's status says it is what its spec asks for, at
	// its current generation. A parent whose children are all Current may
	// say Ready.
	Current Status = "Current"
	// InProgress: the object is on its way (a rollout, a Pod starting, a
	// controller that has not observed the latest generation yet), or its
	// status cannot tell yet. A parent says Reconciling.
	InProgress Status = "InProgress"
	// Failed: the object's own status says it will not get there without a
	// change (a Deployment past its progress deadline, a failed Job). A
	// parent says Stalled.
	Failed Status = "Failed"
)

// rank orders statuses from best to worst; a Status of no known value
// (the zero Health's) counts as InProgress: nothing says it is Current.
func (s Status) rank() int {
	switch s {
	case Current:
		return 0
	case Failed:
		return 2
	}
	return 1
}

// Health is what an object's own status says of it: its [Status], why (a
// CamelCase Reason and a Message), and which object it is.
//
// A Message names what the object waits for or why it failed, never a count
// its controller moves at every step ("2 of 3 replicas updated"): a parent
// that reports its children's health then changes its conditions, and
// writes its status, when a child moves to another stage, not at every
// step of a rollout.
type Health struct {
	// Status is Current, InProgress or Failed.
	Status Status
	// Reason is a CamelCase word: kstatus's where it has one
	// (LessAvailable, ProgressDeadlineExceeded), the object's own
	// condition's or phase's otherwise (BackoffLimitExceeded,
	// CrashLoopBackOff).
	Reason string
	// Message says what the object waits for, or why it failed.
	Message string
	// Kind, Namespace and Name say which object it is.
	Kind, Namespace, Name string
}

// String returns "Kind namespace/name: Status (Reason: Message)".
func (h Health) String() string {
	return fmt.Sprintf("%s: %s (%s: %s)", h.object(), h.Status, h.Reason, h.Message)
}

// object names the object: "Deployment shop/web", "ClusterRole admin".
func (h Health) object() string {
	name := h.Name
	if h.Namespace != "" {
		name = h.Namespace + "/" + name
	}
	switch {
	case h.Kind == "":
		return name
	case name == "":
		return h.Kind
	}
	return h.Kind + " " + name
}

// ParentCondition returns the reason and message a parent's summary
// conditions (Reconciling or Stalled) carry for a child of health h: the
// child's kind before its reason, so that the reason names both
// ("DeploymentProgressDeadlineExceeded", "JobBackoffLimitExceeded"; its
// status stands for a reason it lacks: "WidgetInProgress"), and the
// child's kind, namespace and name before its message ("Deployment shop/web:
// waiting for 3 updated replicas to be available"). [Mark] and
// reconcile.Progress.WithChildren set the parent's conditions with them.
func (h Health) ParentCondition() (reason, message string) {
	word := string(InProgress) // a Status of no known value counts as InProgress
	if h.Status == Failed || h.Status == Current {
		word = string(h.Status)
	}
	reason = conditionReason(h.Kind + orDefault(h.Reason, word))
	if reason == "" {
		reason = word
	}
	message = h.object()
	if h.Message != "" {
		if message != "" {
			message += ": "
		}
		message += h.Message
	}
	return reason, message
}

// conditionReason keeps what a metav1.Condition's reason may hold (letters,
// digits, '_', ',' and ':', starting with a letter and not ending with ','
// or ':'), so that a reason a child's controller chose never makes the
// parent's status write invalid. It is at most 1024 bytes.
func conditionReason(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s) && len(b) < 1024; i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case len(b) > 0 && (c >= '0' && c <= '9' || c == '_' || c == ',' || c == ':'):
		default:
			continue
		}
		b = append(b, c)
	}
	return strings.TrimRight(string(b), ",:")
}

// ErrUnreadable is matched (errors.Is) by the error of [Of] and [OfAll]
// for an object whose health cannot be read: nil, or unstructured
// content whose status or metadata is not of the shape its kind has. It is
// classed permanent: reading the same object again cannot help, and a
// change of the object is an event of its own.
var ErrUnreadable = errors.New("health: unreadable object")

// Of says obj's health from its own metadata and status, with no request
// and no clock: the same object always gives the same Health. obj may be
// typed (*appsv1.Deployment, a custom resource's Go type) or unstructured.
//
// The built-in kinds operators create have rules of their own (Deployment,
// StatefulSet, DaemonSet, ReplicaSet, Job, Pod, PersistentVolumeClaim,
// Service, PodDisruptionBudget, CustomResourceDefinition); every other
// object is read by the kstatus conventions: status.observedGeneration,
// and the Ready, Reconciling and Stalled conditions. The package
// documentation lists the rules and where they differ from kstatus.
//
// An object being deleted is InProgress; an object whose status describes
// an older generation than its metadata.generation is InProgress, never
// Current. Of sees the copy it is given: read a child through a client
// guarded by a freshness.Tracker, and no copy is older than this process's
// last write of it (see "Never Ready on a stale status" in the package
// documentation).
func Of(obj client.Object) (Health, error) {
	if obj == nil || reflect.ValueOf(obj).Kind() == reflect.Pointer && reflect.ValueOf(obj).IsNil() {
		return Health{}, errors.Permanent(fmt.Errorf("%w: nil object", ErrUnreadable))
	}
	if h, ok := typed(obj); ok {
		return h, nil
	}
	u, gvk, custom, err := content(obj)
	if err != nil {
		return Health{}, errors.Permanent(fmt.Errorf("%w: %s %s: %w", ErrUnreadable, kindOf(obj), key(obj), err))
	}
	if t, ok := typedFor(gvk); ok {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, t); err != nil {
			return Health{}, errors.Permanent(fmt.Errorf("%w: %s %s: %w", ErrUnreadable, gvk.Kind, key(obj), err))
		}
		h, _ := typed(t)
		return h, nil
	}
	v, err := read(u)
	if err != nil {
		return Health{}, errors.Permanent(fmt.Errorf("%w: %s %s: %w", ErrUnreadable, gvk.Kind, key(obj), err))
	}
	h := conventions(v, gvk, custom)
	h.Kind, h.Namespace, h.Name = gvk.Kind, obj.GetNamespace(), obj.GetName()
	return h, nil
}

// Summarize returns the health of the worst of children: the first Failed
// one, else the first InProgress one (a Health of no known Status counts as
// InProgress), else, when every child is Current or there is none, a
// Current Health that names no object. It returns the child's Health as it
// is; [Health.ParentCondition] says it for the parent.
func Summarize(children ...Health) Health {
	worst := -1
	for i, h := range children {
		if h.Status.rank() > 0 && (worst < 0 || h.Status.rank() > children[worst].Status.rank()) {
			worst = i
		}
	}
	if worst < 0 {
		return Health{Status: Current}
	}
	h := children[worst]
	if h.Status.rank() == 1 {
		h.Status = InProgress
	}
	return h
}

// OfAll returns the health of the worst of objs, as [Summarize] says it of
// their [Of]: the one call that tells a reconciler what its parent's
// conditions say of its children. It returns the first error of Of, and
// no Health, when an object is unreadable.
func OfAll(objs ...client.Object) (Health, error) {
	hs := make([]Health, 0, len(objs))
	for _, obj := range objs {
		h, err := Of(obj)
		if err != nil {
			return Health{}, err
		}
		hs = append(hs, h)
	}
	return Summarize(hs...), nil
}

func key(obj client.Object) string {
	if ns := obj.GetNamespace(); ns != "" {
		return fmt.Sprintf("%q", ns+"/"+obj.GetName())
	}
	return fmt.Sprintf("%q", obj.GetName())
}

// content returns obj as unstructured content with its kind, and whether
// it is a custom resource (a kind client-go's scheme does not know).
func content(obj client.Object) (*unstructured.Unstructured, schema.GroupVersionKind, bool, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		gvk := u.GroupVersionKind()
		return u, gvk, !clientgoscheme.Scheme.Recognizes(gvk), nil
	}
	gvk := gvkOf(obj)
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, gvk, false, err
	}
	return &unstructured.Unstructured{Object: m}, gvk, !builtIn(obj), nil
}

// builtIn reports whether obj's Go type is one of k8s.io/api's.
func builtIn(obj runtime.Object) bool {
	t := reflect.TypeOf(obj)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return strings.HasPrefix(t.PkgPath(), "k8s.io/api/") || strings.HasPrefix(t.PkgPath(), "k8s.io/apiextensions-apiserver/")
}

// gvkOf returns a typed object's kind: its TypeMeta's when set, client-go's
// scheme's for a built-in type, else its Go type's name (a custom
// resource's Go type is named after its kind).
func gvkOf(obj runtime.Object) schema.GroupVersionKind {
	if gvk := obj.GetObjectKind().GroupVersionKind(); gvk.Kind != "" {
		return gvk
	}
	if gvks, _, err := clientgoscheme.Scheme.ObjectKinds(obj); err == nil && len(gvks) > 0 {
		return gvks[0]
	}
	t := reflect.TypeOf(obj)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	gvk := schema.GroupVersionKind{Kind: t.Name()}
	for gk, b := range builtins {
		if v, ok := strings.CutPrefix(t.PkgPath(), b.goPackage); ok && b.goPackage != "" && gk.Kind == t.Name() {
			gvk.Group, gvk.Version = gk.Group, v
		}
	}
	return gvk
}

// kindOf names obj's kind for an error.
func kindOf(obj runtime.Object) string {
	if u, ok := obj.(*unstructured.Unstructured); ok && u.GetKind() != "" {
		return u.GetKind()
	}
	return gvkOf(obj).Kind
}
