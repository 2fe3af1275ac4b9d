// Package recorder records Kubernetes events (events.k8s.io/v1) as
// client-go's event broadcaster does, the one behind controller-runtime's
// mgr.GetEventRecorder(name), keeping of each event it sent a few words
// instead of a copy.
//
//	rec := recorder.New(mgr.GetClient(), "at-controller")
//	if err := mgr.Add(rec); err != nil { // the manager starts it
//		return err
//	}
//	r := &AtReconciler{Client: mgr.GetClient(), Recorder: rec}
//
// The name is the operator's field owner, the one its other writes carry:
// every write of an event is sent under it (the field manager the API
// server records in the event's managedFields), and it is the events'
// reportingController. [Recorder.Validate] reports a Recorder that cannot
// send (no client, a scheme without events.k8s.io/v1, an empty name), and
// [Recorder.Start] returns its error, permanent.
//
// A [Recorder] is a client-go events.EventRecorder and a controller-runtime
// recorder.EventRecorder (Eventf and AnnotatedEventf): it goes wherever
// mgr.GetEventRecorder(name) went, reconcile.Loop's Recorder field
// included. The operator needs the same permissions as with client-go's:
// create and patch on events.k8s.io events.
//
// # What the API server sees
//
// What client-go's broadcaster writes (k8s.io/client-go/tools/events),
// request for request:
//
//   - an event named after the regarding object, "<name>.<UnixNano in
//     hex>" (a UUID when that is not a valid name), in the regarding
//     object's namespace ("default" for a cluster-scoped one), with its
//     eventTime, reportingController (the name given to [New]),
//     reportingInstance (the name, "-" and the host name), action, reason, type, regarding and related
//     references (built from the client's scheme), note
//     (fmt.Sprintf(note, args...), not truncated: the API server refuses
//     a note over 1,024 characters, for both) and annotations. An event of
//     a type other than Normal or Warning, or about an object without a
//     reference, is logged and not sent; a related object without one is
//     left out.
//   - a repeat of an isomorphic event (same type, action, reason,
//     regarding and related object; the note may differ) last seen less
//     than 6 minutes ago (6 to 12, as the rounds that forget events fall)
//     makes it a series: the second occurrence
//     patches the first event with series count 2 and its time, later ones
//     are only counted, and the count is written once the series has been
//     idle for 6 minutes, and every 30 minutes while it goes on. A patch
//     that finds no event creates it, from the occurrence at hand.
//   - a write that fails for a transport error is tried again, up to 12
//     tries about 10 seconds apart, until the Recorder's context is done;
//     one the API server refused is not, but for the create of a series
//     whose event appeared meanwhile.
//
// # What it keeps, and why
//
// To merge repeats into series, client-go's broadcaster keeps a whole copy
// of every event it sent for 6 to 12 minutes, under a key that holds two
// more ObjectReferences, and starts a goroutine per event: about 1,070
// bytes of live heap per event (BenchmarkRetainedBytesPerEvent, 10,000
// distinct events), 10 MiB for an operator that records one event on each
// of 10,000 objects (issue 38).
//
// A Recorder keeps what a later write needs. For an event sent once: two
// 64-bit hashes of its key (the first places it, the second tells apart
// two keys whose first hashes collide) and its eventTime, 16 bytes; a
// repeat, about the same object, gives back its name and namespace. About
// 48 bytes of live heap per event in the same benchmark, map included, 22
// times less. For a series: also its namespace and name, count and
// lastObservedTime, 48 bytes and the name. Entries are forgotten after
// the window as client-go's are, and the maps given back after a burst.
// Two keys are merged only if both hashes collide, about once in 2^128
// pairs; when the first alone collides, the event is sent on its own.
//
// Events wait to be sent in a queue of 1,000, client-go's bound, which 4
// goroutines send from; when it is full, an event is dropped, logged and
// counted in reconcilekit_recorder_dropped_events_total. Events recorded
// before [Recorder.Start] wait in the queue.
//
// # Where it differs from client-go
//
//   - A series whose event was deleted from the API server is created
//     again, by client-go, from its copy at the next refresh or at the end
//     of the series; by a Recorder, which keeps no copy, at the next
//     occurrence only, with that occurrence's note and annotations.
//   - client-go starts a goroutine per event, so a slow or unreachable
//     API server holds every event (and its goroutine) until its 12 tries
//     are spent; a Recorder has at most 4 writes in flight, and drops the
//     events that find the queue full meanwhile.
//   - client-go's goroutines take its cache in whatever order they run:
//     two occurrences recorded back to back may make the second the
//     series' first event, or send the series' patch before the create of
//     its event (the patch finds nothing, creates the event, and the
//     first create is refused). A Recorder sends the events of one key in
//     the order they were recorded, the patch after the create returned.
//   - controller-runtime's recorder also logs every event (at V(1)); a
//     Recorder logs only what it cannot send.
//
// # When to use client-go's instead
//
// When memory does not matter (a controller that records a handful of
// events), mgr.GetEventRecorder(name) needs no setup. client-go's is also
// the one for core/v1 events (the deprecated GetEventRecorderFor), for a
// broadcaster whose events other watchers read (StartEventWatcher,
// StartLogging), and for a recorder with a logger of its own (WithLogger).
//
//bench:figure "about 1,070 bytes" [BenchmarkRetainedBytesPerEvent @ clientgo-B/event]
//bench:figure "10 MiB" [BenchmarkRetainedBytesPerEvent @ clientgo-B/event] × 10000
//bench:figure "About 48 bytes" [BenchmarkRetainedBytesPerEvent @ recorder-B/event]
//bench:figure "map included, 22" [BenchmarkRetainedBytesPerEvent @ clientgo/recorder]
//bench:other "eventTime, 16 bytes"
//bench:other "lastObservedTime, 48 bytes"
package recorder
