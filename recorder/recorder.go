package recorder

import (
	"context"
	"fmt"
	"hash/maphash"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record/util"
	"k8s.io/client-go/tools/reference"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/reconcilekit/reconcilekit/errors"
)

// client-go's constants (k8s.io/client-go/tools/events), the defaults of a
// Recorder's knobs.
const (
	maxTriesPerEvent = 12
	finishTime       = 6 * time.Minute
	refreshTime      = 30 * time.Minute
	maxQueuedEvents  = 1000
	sleepDuration    = 10 * time.Second
	// senders is how many requests a Recorder has in flight at most.
	senders = 4
	// dropLogEvery is how often at most a Recorder logs that it drops
	// events.
	dropLogEvery = time.Minute
)

// ErrInvalidRecorder is wrapped by the error of [Recorder.Validate], and by
// the one [Recorder.Start] returns when the Recorder cannot send: it was
// not built by [New], its client is nil or its client's scheme does not
// know events.k8s.io/v1 Event, its field owner is empty, or it was started
// twice.
var ErrInvalidRecorder = errors.New("recorder: invalid recorder")

// Recorder records events.k8s.io/v1 Events as client-go's event broadcaster
// does, keeping of each event sent a few words instead of a copy (see the
// package documentation). It implements client-go's
// events.EventRecorder and controller-runtime's recorder.EventRecorder
// (Eventf and AnnotatedEventf), and controller-runtime's manager.Runnable:
// add it to the manager, which starts it.
//
// A nil *Recorder records nothing: its Eventf and AnnotatedEventf do
// nothing, so a reconciler may hold one that is not set. The zero value
// records nothing either; build a Recorder with [New]. One that
// [Recorder.Validate] refuses drops every event, logged once, and does not
// start.
type Recorder struct {
	// Clock is where the Recorder reads the time (an event's eventTime and
	// name, a series' lastObservedTime and its end) and waits (between
	// tries, between the rounds that end and refresh series). Nil means
	// the real clock. Set it before the first event.
	Clock clock.Clock
	// Fence, when set, is asked just before each write of an event (its
	// create, and the patch that makes it a series) whether this process
	// may still write about the event's regarding object, given as a
	// metav1.PartialObjectMetadata with its kind, namespace, name and UID;
	// an error drops the event, logged at debug level. A sharded
	// controller sets its Member's Check (shard.Member.Check), so that a
	// replica that lost an object's range, or could not renew its Lease,
	// sends no event about it. The later writes of a series' count (when
	// it ends, and its refresh, minutes on) are not asked: they have no
	// regarding object at hand, and change only an Event this process
	// created. Set it before the first event.
	Fence func(regarding client.Object) error

	c      client.Client
	scheme *runtime.Scheme
	// fieldOwner is the field manager of every write and the events'
	// reportingController; instance their reportingInstance.
	fieldOwner string
	instance   string
	// invalid is what Validate reports of a Recorder built by New (what
	// it checks is set there, once), and invalidLogged says whether an
	// event dropped for it was logged.
	invalid       error
	invalidLogged atomic.Bool
	// seed and check hash an event's key: seed places it in series, check
	// tells apart two keys whose seed hashes collide.
	seed, check maphash.Seed

	// queue holds the events to send, as client-go's watcher channel
	// does: maxQueuedEvents deep, dropping when full.
	queue chan queued

	// client-go's constants; tests shorten them.
	sleep, finish, refresh time.Duration
	tries, senders         int

	// dropped counts the events dropped because the queue was full.
	dropped atomic.Uint64

	mu sync.Mutex
	// singles and series are client-go's eventCache, by the key's hash:
	// an entry per key sent within the window, a few words each. singles
	// holds the events sent once, series the series.
	singles map[uint64]single
	series  map[uint64]entry
	// peakSingles and peakSeries are the most entries each map held since
	// it was last rebuilt: a Go map does not shrink when its entries are
	// deleted.
	peakSingles, peakSeries int
	// inflight holds, by the key's hash, the keys with an event queued or
	// being sent, and the events of the same key recorded meanwhile: the
	// sender of the first sends them after it, in order, so that the
	// patch of a series never overtakes the create of its event.
	inflight map[uint64][]*eventsv1.Event
	// started: Start was called; stopped: it returned.
	started, stopped bool
	logger           logr.Logger
	// lastDropLog and unlogged: when drops were last logged, and how many
	// since.
	lastDropLog time.Time
	unlogged    uint64
}

// New returns a Recorder that writes events through c (the manager's
// client: its writes go to the API server), every write under the field
// manager fieldOwner, the operator's name (the one its other writes
// carry). The name is also the events' reportingController, and their
// reportingInstance is the name, "-" and the host name, as client-go's
// broadcaster names them. References to the objects are built with c's
// scheme. Start it, or add it to the manager (mgr.Add): events recorded
// before are queued. A Recorder with no client, a scheme without
// events.k8s.io/v1 Event or an empty fieldOwner does not start
// ([Recorder.Validate]).
func New(c client.Client, fieldOwner string) *Recorder {
	hostname, _ := os.Hostname()
	r := &Recorder{
		c:          c,
		fieldOwner: fieldOwner,
		instance:   fieldOwner + "-" + hostname,
		seed:       maphash.MakeSeed(),
		check:      maphash.MakeSeed(),
		queue:      make(chan queued, maxQueuedEvents),
		sleep:      sleepDuration,
		finish:     finishTime,
		refresh:    refreshTime,
		tries:      maxTriesPerEvent,
		senders:    senders,
		singles:    map[uint64]single{},
		series:     map[uint64]entry{},
		inflight:   map[uint64][]*eventsv1.Event{},
		logger:     log.Log.WithName("recorder").WithValues("reportingController", fieldOwner),
	}
	if c != nil {
		r.scheme = c.Scheme()
	}
	r.invalid = r.validate()
	return r
}

// Validate reports what keeps r from sending: a Recorder not built by
// [New] (nil, or the zero value), no client, a client whose scheme does
// not know events.k8s.io/v1 Event, an empty field owner (the error then
// also wraps errors.ErrNoFieldOwner). The error wraps [ErrInvalidRecorder]
// and names every mistake. [Recorder.Start] returns it, marked permanent;
// Eventf on such a Recorder drops the event.
func (r *Recorder) Validate() error {
	if r == nil || r.queue == nil {
		return fmt.Errorf("%w: not built by recorder.New", ErrInvalidRecorder)
	}
	return r.invalid
}

// validate is Validate of a Recorder built by New.
func (r *Recorder) validate() error {
	var errs []error
	switch {
	case r.c == nil || r.scheme == nil:
		errs = append(errs, errors.New("no client"))
	case !r.scheme.Recognizes(eventsv1.SchemeGroupVersion.WithKind("Event")):
		errs = append(errs, fmt.Errorf("the client's scheme does not know %s Event (add k8s.io/client-go/kubernetes/scheme's AddToScheme)",
			eventsv1.SchemeGroupVersion))
	}
	if r.fieldOwner == "" {
		errs = append(errs, errors.ErrNoFieldOwner)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidRecorder, err)
	}
	return nil
}

// NeedLeaderElection reports false: every replica sends the events it
// records, leader or not, as client-go's broadcaster does.
func (r *Recorder) NeedLeaderElection() bool { return false }

// Start sends the events recorded until ctx is done; then it gives up the
// events it was sending and those queued, as client-go's broadcaster does
// when its context ends, and queues no more. It returns nil when ctx is
// done, and, marked errors.Permanent (no retry makes it send), the error
// of [Recorder.Validate], or one wrapping [ErrInvalidRecorder] when it was
// started before. A Recorder is started once.
func (r *Recorder) Start(ctx context.Context) error {
	if err := r.Validate(); err != nil {
		return errors.Permanent(err)
	}
	r.mu.Lock()
	if r.started {
		r.mu.Unlock()
		return errors.Permanent(fmt.Errorf("%w: started twice", ErrInvalidRecorder))
	}
	r.started = true
	r.logger = log.FromContext(ctx).WithName("recorder").WithValues("reportingController", r.fieldOwner)
	ctx = log.IntoContext(ctx, r.logger)
	r.mu.Unlock()

	var wg sync.WaitGroup
	for range r.senders {
		wg.Go(func() { r.send(ctx) })
	}
	wg.Go(func() { r.rounds(ctx) })
	wg.Wait()
	r.mu.Lock()
	r.stopped = true
	r.mu.Unlock()
	return nil
}

// Eventf records an event of type eventtype (Normal or Warning) about
// regarding, with related as its related object (nil for none), as
// client-go's recorder does: the note is fmt.Sprintf(note, args...), an
// event whose type is neither or whose regarding object has no reference
// is logged and dropped, a related object without one is left out. It
// never blocks: when the queue is full, the event is dropped. A nil
// Recorder does nothing.
func (r *Recorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	r.AnnotatedEventf(regarding, related, nil, eventtype, reason, action, note, args...)
}

// AnnotatedEventf is [Recorder.Eventf] with annotations on the event. They
// are not part of what makes two events the same (client-go's key), so a
// repeat with other annotations joins the series of the first. A nil
// Recorder does nothing; one that [Recorder.Validate] refuses drops the
// event (the first one logged with the reason).
func (r *Recorder) AnnotatedEventf(regarding, related runtime.Object, annotations map[string]string, eventtype, reason, action, note string, args ...any) {
	if r == nil || r.queue == nil {
		return
	}
	if r.invalid != nil {
		if r.invalidLogged.CompareAndSwap(false, true) {
			r.log().Error(r.invalid, "Cannot send events: dropping every event of this Recorder")
		}
		return
	}
	now := r.now()
	message := fmt.Sprintf(note, args...)
	refRegarding, err := reference.GetReference(r.scheme, regarding)
	if err != nil {
		r.log().Error(err, "Could not construct reference, will not report event", "object", regarding, "eventType", eventtype, "reason", reason, "message", message)
		return
	}
	var refRelated *corev1.ObjectReference
	if related != nil {
		refRelated, err = reference.GetReference(r.scheme, related)
		if err != nil {
			r.log().V(9).Info("Could not construct reference", "object", related, "err", err)
		}
	}
	if !util.ValidateEventType(eventtype) {
		r.log().Error(nil, "Unsupported event type", "eventType", eventtype)
		return
	}
	namespace := refRegarding.Namespace
	if namespace == "" {
		namespace = metav1.NamespaceDefault
	}
	ev := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name:        util.GenerateEventName(refRegarding.Name, now.UnixNano()),
			Namespace:   namespace,
			Annotations: annotations,
		},
		EventTime:           metav1.MicroTime{Time: now},
		ReportingController: r.fieldOwner,
		ReportingInstance:   r.instance,
		Action:              action,
		Reason:              reason,
		Regarding:           *refRegarding,
		Related:             refRelated,
		Note:                message,
		Type:                eventtype,
	}
	r.record(ev)
}

// clock returns the Recorder's clock.
func (r *Recorder) clock() clock.Clock {
	if r.Clock == nil {
		return clock.RealClock{}
	}
	return r.Clock
}

func (r *Recorder) now() time.Time { return r.clock().Now() }

// log returns the logger of the Recorder: the one of Start's context once
// started.
func (r *Recorder) log() logr.Logger {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.logger
}

// queued is an event to send and the hash of its key.
type queued struct {
	ev *eventsv1.Event
	h  uint64
}

// enqueue queues ev, whose key hashes to h, to be sent: after the event of
// the same key queued or being sent, when there is one; otherwise in the
// queue, or it drops ev when the queue is full and reports false. r.mu is
// held.
func (r *Recorder) enqueue(ev *eventsv1.Event, h uint64) bool {
	if held, ok := r.inflight[h]; ok {
		r.inflight[h] = append(held, ev)
		return true
	}
	select {
	case r.queue <- queued{ev, h}:
		r.inflight[h] = nil
		return true
	default:
	}
	r.dropped.Add(1)
	droppedEventsTotal.Inc()
	r.unlogged++
	if now := r.now(); r.lastDropLog.IsZero() || now.Sub(r.lastDropLog) >= dropLogEvery {
		r.logger.Info("event queue full: dropping events", "dropped", r.unlogged, "queue", cap(r.queue))
		r.lastDropLog, r.unlogged = now, 0
	}
	return false
}
