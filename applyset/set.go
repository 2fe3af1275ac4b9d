package applyset

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reconcilekit/reconcilekit/drift"
	"github.com/reconcilekit/reconcilekit/errors"
)

// The labels and annotations of KEP-3659 (kubectl's ApplySet) that a Set
// keeps, so that kubectl and other tools see its members.
const (
	// PartOfLabel is on every child a Set writes; its value is the Set's
	// ID for the parent ([ID]). kubectl get -A -l
	// applyset.kubernetes.io/part-of=<id> lists a parent's children.
	PartOfLabel = "applyset.kubernetes.io/part-of"
	// IDLabel is on the parent: its value is [ID] of the parent, the value
	// of its children's PartOfLabel.
	IDLabel = "applyset.kubernetes.io/id"
	// ToolingAnnotation is on the parent: the tool that manages its set,
	// "<name>/<version>" ([Set.Tooling]). A tool leaves a set another tool
	// manages alone, and so does a Set.
	ToolingAnnotation = "applyset.kubernetes.io/tooling"
	// GroupKindsAnnotation is on the parent: the kinds its children may
	// be of ("ConfigMap,Deployment.apps"), sorted, comma-separated. Tools
	// list these kinds to find the members; a Set lists them to prune.
	GroupKindsAnnotation = "applyset.kubernetes.io/contains-group-kinds"
	// NamespacesAnnotation is on the parent: the namespaces other than its
	// own that hold children, sorted, comma-separated (absent when there is
	// none).
	NamespacesAnnotation = "applyset.kubernetes.io/additional-namespaces"
)

// Defaults of a zero [Set].
const (
	// DefaultMaxWaiting is how many parents a Set remembers as waiting for
	// a kind to be installed when its MaxWaiting is zero.
	DefaultMaxWaiting = 10_000
)

// ErrInvalidSet is matched (errors.Is) by the error of a [Set] that cannot
// work: no client, an unknown Propagation, a Tooling that is not
// "<name>/<version>", a negative MaxWaiting, or a HotLoops detector that
// fails its Validate. [Set.Validate] returns it, and so does every call of
// such a Set, classed permanent, before it reads or writes anything. A Set
// without a field owner returns errors.ErrNoFieldOwner instead.
var ErrInvalidSet = errors.New("applyset: invalid set")

// Set writes the children of parent objects as sets: every child of any
// kind, in any namespace or cluster-scoped, written with a drift.Writer's
// rules; membership recorded with KEP-3659's labels and annotations;
// children waiting for the children they need; and the children that left
// the set deleted. Build it with [New]; [Set.Apply] does the work, once per
// reconcile of a parent.
//
// Its exported fields are optional, and their zero values work. A Set is
// safe for concurrent use; share one per controller: it remembers which of
// the controller's parents wait for a kind to be installed
// ([Set.EnqueueWaiting]) until they no longer wait or are gone
// ([Set.Forget]), at most MaxWaiting of them.
type Set struct {
	// Recorder records a DriftCorrected event on the parent when a write
	// puts back what another field manager changed ([ReasonDriftCorrected]),
	// and is the HotLoops detector's recorder when HotLoops is nil. Nil:
	// no event is recorded (the metric still counts).
	Recorder events.EventRecorder
	// HotLoops stops the writes of a child whose same fields keep drifting
	// back (another controller fights the operator), as a drift.Writer's
	// does. Nil: a detector of the Set's own with drift's defaults, so
	// that a Set never writes in a loop; set one to change its settings.
	HotLoops *drift.HotLoopDetector
	// Clock tells the hot-loop detector the time, and times the wake-ups
	// of [Set.EnqueueWaiting] after a CustomResourceDefinition's event.
	// Nil: the real clock.
	Clock clock.Clock
	// APIReader is the drift.Writer's: it reads whole an object the cache
	// keeps in part (diet.Fields). Nil: such a child is an error.
	APIReader client.Reader
	// Replaces names field managers whose fields the Set takes over, on
	// every child, as drift.Replaces does: the code the Set replaces wrote
	// the children under them.
	Replaces []string
	// Propagation is the propagation policy of the deletes of children that
	// left the set. Zero: metav1.DeletePropagationBackground.
	Propagation metav1.DeletionPropagation
	// Tooling is the value of the parent's [ToolingAnnotation],
	// "<name>/<version>". Empty: the field owner, "/v1" appended.
	Tooling string
	// MaxWaiting bounds how many parents are remembered as waiting for a
	// kind to be installed ([Set.EnqueueWaiting]); beyond it, an arbitrary
	// one is forgotten, and wakes up with its next resync instead. A
	// parent is forgotten before that when an Apply finds it waits for
	// nothing, or when it is found gone ([Set.Forget]). Zero:
	// [DefaultMaxWaiting].
	MaxWaiting int

	client     client.Client
	fieldOwner string

	once     sync.Once
	writer   *drift.Writer
	hotLoops drift.HotLoopDetector // when HotLoops is nil
	waiting  waitIndex
}

// New returns a Set that reads and writes with c (the manager's client:
// reads come from its cache), every write carrying fieldOwner as its field
// manager: the operator's own name, the same for all its writes (drift,
// status, finalizer and reconcile.Loop take it too). A Set built with an
// empty fieldOwner reads and writes nothing: every call returns an error
// wrapping errors.ErrNoFieldOwner, classed permanent.
//
// Give it a client whose reads follow its own writes (the manager's client
// built with freshness.Tracker.NewClient, or tracker.Wrap(mgr.GetClient())):
// a list of a kind that misses a child this process created a moment ago
// could drop the kind from the parent's annotation before the child is
// pruned, and a child's health read from a cached copy older than the
// Set's last write of it could say Current for the spec before, letting
// what depends on it go first.
func New(c client.Client, fieldOwner string) *Set {
	return &Set{client: c, fieldOwner: fieldOwner}
}

// Validate reports what keeps the Set from working: an empty field owner
// (errors.ErrNoFieldOwner), no client, a Propagation that is not one of
// Kubernetes', a Tooling not of the form "<name>/<version>", a negative
// MaxWaiting, or a HotLoops that fails its Validate ([ErrInvalidSet]). The
// error is classed permanent. Every call of the Set validates it first and
// returns this error instead of reading or writing; call it at setup to
// fail early.
func (s *Set) Validate() error {
	if s.fieldOwner == "" {
		return errors.Permanent(fmt.Errorf("applyset: %w: build the Set with applyset.New(c, name), name the operator's own, the same for all its writes", errors.ErrNoFieldOwner))
	}
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidSet}, args...)...))
	}
	if s.client == nil {
		bad("no client: build it with applyset.New(c, name)")
	}
	switch s.Propagation {
	case "", metav1.DeletePropagationBackground, metav1.DeletePropagationForeground, metav1.DeletePropagationOrphan:
	default:
		bad("Propagation is %q; want empty (Background), %s, %s or %s", s.Propagation,
			metav1.DeletePropagationBackground, metav1.DeletePropagationForeground, metav1.DeletePropagationOrphan)
	}
	if s.Tooling != "" {
		name, version, ok := strings.Cut(s.Tooling, "/")
		if !ok || name == "" || version == "" || strings.Contains(version, "/") {
			bad("Tooling is %q; want <name>/<version>, as kubectl/v1.37", s.Tooling)
		}
	}
	if s.MaxWaiting < 0 {
		bad("MaxWaiting is %d; want 0 (the default, %d) or more", s.MaxWaiting, DefaultMaxWaiting)
	}
	if s.HotLoops != nil {
		if err := s.HotLoops.Validate(); err != nil {
			bad("HotLoops: %w", err)
		}
	}
	if len(errs) > 0 {
		return errors.Permanent(errors.Join(errs...))
	}
	return nil
}

// tooling returns the parent's ToolingAnnotation value.
func (s *Set) tooling() string {
	if s.Tooling != "" {
		return s.Tooling
	}
	return s.fieldOwner + "/v1"
}

// clock returns the Set's clock.
func (s *Set) clock() clock.Clock {
	if s.Clock != nil {
		return s.Clock
	}
	return clock.RealClock{}
}

// propagation returns the propagation policy of prunes.
func (s *Set) propagation() metav1.DeletionPropagation {
	if s.Propagation == "" {
		return metav1.DeletePropagationBackground
	}
	return s.Propagation
}

// drift returns the Set's writer, built on first use.
func (s *Set) drift() *drift.Writer {
	s.once.Do(func() {
		w := drift.NewWriter(s.client, s.fieldOwner)
		w.Clock, w.APIReader = s.clock(), s.APIReader
		w.HotLoops = s.HotLoops
		if w.HotLoops == nil {
			s.hotLoops.Recorder = s.Recorder
			w.HotLoops = &s.hotLoops
		}
		s.writer = w
	})
	return s.writer
}

// ID returns the KEP-3659 ID of the set whose parent is of kind gk, in
// namespace (empty for a cluster-scoped parent) and named name:
// "applyset-" + the URL-safe base64 of the SHA-256 of
// "<name>.<namespace>.<kind>.<group>" + "-v1", as kubectl computes it. It
// is the value of the parent's IDLabel and of its children's PartOfLabel.
func ID(gk schema.GroupKind, namespace, name string) string {
	sum := sha256.Sum256([]byte(strings.Join([]string{name, namespace, gk.Kind, gk.Group}, ".")))
	return "applyset-" + base64.RawURLEncoding.EncodeToString(sum[:]) + "-v1"
}
