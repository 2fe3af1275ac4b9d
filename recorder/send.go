package recorder

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/reconcilekit/reconcilekit/errors"
)

// send sends the queued events, one at a time, until ctx is done.
func (r *Recorder) send(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case q := <-r.queue:
			r.sendInOrder(ctx, q)
		}
	}
}

// sendInOrder sends q's event, then the events of its key recorded while
// it was queued or sent, in the order they were recorded.
func (r *Recorder) sendInOrder(ctx context.Context, q queued) {
	for ev := q.ev; ; {
		r.attemptRecording(ctx, ev)
		r.mu.Lock()
		held := r.inflight[q.h]
		if len(held) == 0 || ctx.Err() != nil {
			delete(r.inflight, q.h)
			r.mu.Unlock()
			return
		}
		ev, r.inflight[q.h] = held[0], held[1:]
		r.mu.Unlock()
	}
}

// attemptRecording is client-go's: it tries to write ev up to r.tries
// times, sleeping r.sleep (jittered by a quarter) between tries, and gives
// up when ctx is done.
func (r *Recorder) attemptRecording(ctx context.Context, ev *eventsv1.Event) {
	tries := 0
	for {
		if _, retry := r.recordEvent(ctx, ev, true); !retry {
			return
		}
		tries++
		if tries >= r.tries {
			log.FromContext(ctx).Error(nil, "Unable to write event (retry limit exceeded!)", "event", klogEvent(ev))
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-r.clock().After(wait.Jitter(r.sleep, 0.25)):
		}
	}
}

// recordEvent is client-go's: it patches the series of ev when ev has one,
// and creates ev when it has none or the patch found no event (unless
// create is false: a series' final count or refresh, which has no event
// at hand, then reports notFound). It reports whether to try again: after a
// transport error, or when the create of a series found its event created
// meanwhile; never after the API server refused the request otherwise.
func (r *Recorder) recordEvent(ctx context.Context, ev *eventsv1.Event, create bool) (notFound, retry bool) {
	logger := log.FromContext(ctx)
	if r.Fence != nil && ev.Regarding.UID != "" {
		if err := r.Fence(regardingObject(ev.Regarding)); err != nil {
			logger.V(1).Info("Fenced: not writing the event", "event", klogEvent(ev), "reason", err.Error())
			return false, false
		}
	}
	var err error
	isSeries := ev.Series != nil
	if isSeries {
		patch, perr := seriesPatch(ev.Series)
		if perr != nil {
			logger.Error(perr, "Unable to calculate diff, no merge is possible")
			return false, false
		}
		target := &eventsv1.Event{}
		target.Name, target.Namespace = ev.Name, ev.Namespace
		err = r.c.Patch(ctx, target, client.RawPatch(types.StrategicMergePatchType, patch), client.FieldOwner(r.fieldOwner))
	}
	if !isSeries || isKeyNotFound(err) {
		if !create {
			return true, false
		}
		ev.ResourceVersion = ""
		err = r.c.Create(ctx, ev, client.FieldOwner(r.fieldOwner))
	}
	if err == nil {
		return false, false
	}
	var construction *rest.RequestConstructionError
	var status *apierrors.StatusError
	switch {
	case errors.As(err, &construction):
		logger.Error(err, "Unable to construct event (will not retry!)", "event", klogEvent(ev))
		return false, false
	case errors.As(err, &status):
		if apierrors.IsAlreadyExists(err) {
			// A series' event created meanwhile, between the patch that
			// found none and this create: patch it now.
			if isSeries {
				return false, true
			}
			logger.V(5).Info("Server rejected event (will not retry!)", "event", klogEvent(ev), "err", err)
		} else {
			logger.Error(err, "Server rejected event (will not retry!)", "event", klogEvent(ev))
		}
		return false, false
	}
	logger.Error(err, "Unable to write event (may retry after sleeping)")
	return false, true
}

// regardingObject is the object ref refers to, as far as the reference
// tells: what Fence is given.
func regardingObject(ref corev1.ObjectReference) client.Object {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: ref.APIVersion, Kind: ref.Kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: ref.Namespace, Name: ref.Name, UID: ref.UID},
	}
}

// isKeyNotFound is client-go's util.IsKeyNotFoundError: a StatusError of
// code 404.
func isKeyNotFound(err error) bool {
	var status *apierrors.StatusError
	return errors.As(err, &status) && status.Status().Code == http.StatusNotFound
}

// seriesPatch is the strategic merge patch client-go's
// createPatchBytesForSeries computes between an event and the same event
// with series s: {"series":{"count":N,"lastObservedTime":"..."}}.
func seriesPatch(s *eventsv1.EventSeries) ([]byte, error) {
	b, err := json.Marshal(struct {
		Series *eventsv1.EventSeries `json:"series"`
	}{s})
	if err != nil {
		return nil, fmt.Errorf("recorder: series patch: %w", err)
	}
	return b, nil
}

// klogEvent is what a log line says of an event.
func klogEvent(ev *eventsv1.Event) string {
	return fmt.Sprintf("%s/%s %s %s %s/%s", ev.Namespace, ev.Name, ev.Type, ev.Reason, ev.Regarding.Kind, ev.Regarding.Name)
}
