// Package errors classifies the errors a reconciler meets, so that each one
// gets the right treatment: retried soon, retried later, retried with
// backoff, or not retried at all. It is a drop-in superset of the standard
// library's errors package ([New], [Is], [As], [AsType], [Join], [Unwrap],
// [Errorf], [ErrUnsupported] are re-exported), so a file can import it in
// place of the standard one.
//
// [Classify] returns a [Class] ([ClassNone], [ClassTransient], [ClassConflict],
// [ClassThrottled], [ClassPermanent], [ClassCanceled]) and, when throttled, the delay
// to wait. Callers state what they know with markers, [Permanent],
// [Transient] and [RetryAfter], which keep the cause visible to [Is] and
// [As] and win over everything inferred. A [Permanent] error is also a
// controller-runtime terminal error: errors.Is(err,
// reconcile.TerminalError(nil)) is true, so controller-runtime stops
// retrying it and counts it in its terminal-error metric. [Reason] and
// [Message] turn an error into a condition reason and a condition message
// that stay the same across retries of the same failure, so a status writer
// does not rewrite status on every attempt; [WithReason] lets a reconciler
// name a failure itself ("InvalidSpec" rather than "PermanentError").
//
// The package decides; it does not act. The requeue package maps a class to
// the ctrl.Result and error a Reconcile returns.
//
// # Kubernetes API status errors
//
// An error carrying an API status (apierrors.APIStatus, as returned by
// client-go and the controller-runtime client) is classified by its reason:
//
//	Reason / code                        Class       Why
//	any with Details.RetryAfterSeconds   Throttled   the server asked to wait that long (apierrors.SuggestsClientDelay);
//	  > 0                                            the delay is returned
//	TooManyRequests (429)                Throttled   priority and fairness or a webhook is shedding load; no delay given,
//	                                                 so the caller picks one
//	Conflict (409)                       Conflict    stale resourceVersion: re-read and retry soon; routine, not a failure
//	AlreadyExists (409)                  Conflict    a create raced with another writer or the cache has not caught up;
//	                                                 the next attempt sees the object and updates it instead
//	ServerTimeout (500), Timeout (504)   Transient   the server or etcd was slow; the same request may well succeed
//	ServiceUnavailable (503)             Transient   the server (or an aggregated API) is starting or overloaded
//	InternalError (500), other 5xx       Transient   server-side failures are not the object's fault
//	NotFound (404)                       Transient   a dependency not created yet, or a cache that lags; it may appear.
//	                                                 (A Get of the reconciled object itself should use client.IgnoreNotFound;
//	                                                 a dependency of a watched kind read through a track.Reads comes back
//	                                                 Permanent, reason ReferenceNotFound: its creation wakes the reconciler.)
//	Forbidden (403)                      Transient   RBAC, admission and quota are fixed by an administrator without touching
//	                                                 the object, so no event would retrigger a permanently failed reconcile;
//	                                                 retry with backoff (capped) instead
//	Unauthorized (401)                   Transient   credentials expire and are refreshed or rotated
//	Gone (410), Expired                  Transient   a watch or list continuation expired; start over
//	Invalid (422)                        Permanent   validation rejected the object: the same request fails until the spec
//	                                                 (or the code) changes, and a spec change triggers a new reconcile anyway
//	BadRequest (400)                     Permanent   malformed request: a bug or bad input, retrying repeats it
//	RequestEntityTooLarge (413)          Permanent   the object will not get smaller by itself
//	UnsupportedMediaType (415)           Permanent   wrong patch type or content type for this resource
//	MethodNotAllowed (405)               Permanent   the resource does not support the verb
//	NotAcceptable (406)                  Permanent   no acceptable representation; retrying does not change that
//	unknown reason                       by code     409 Conflict, 429 Throttled, 400/405/406/413/415/422 Permanent,
//	                                                 anything else Transient
//
// A ServerTimeout whose RetryAfterSeconds is 0 stays transient. client-go
// already retries 429 and 5xx responses that carry Retry-After (up to 10 times by default)
// before a reconciler sees them, so an error that arrives here has
// outlasted those retries.
//
// # Other errors
//
// context.Canceled is [ClassCanceled]: usually the controller is shutting down,
// which is not a failure. context.DeadlineExceeded, network timeouts
// (net.Error.Timeout), refused, reset and aborted connections, unreachable
// hosts and io.ErrUnexpectedEOF are transient. A reconcile.TerminalError is
// permanent. Everything unknown is transient: an error nobody recognised is
// retried with backoff rather than dropped.
//
// # Precedence and joined errors
//
// Down one %w chain the outermost explicit decision wins. A marker, an error
// of another package that states its own class ([Classed]) and a
// reconcile.TerminalError (any error errors.Is matches with
// reconcile.TerminalError(nil)) are all explicit: someone said what to do.
// The one nearest the top of the chain said it last, knowing the most, so
// reconcile.TerminalError(Transient(err)) is [ClassPermanent] (the caller
// wrapped a failure it was told is transient and decided to give up, and
// controller-runtime will not retry it whatever Classify says), while
// Transient(reconcile.TerminalError(err)) is [ClassTransient]. Beneath no
// explicit decision, an API status decides, then a context or network
// error. Where the chain splits ([Join], or [Errorf] with
// several %w verbs) each branch is classified alone and the most urgent
// class wins: [ClassCanceled] (the work was interrupted, so the rest says
// nothing), then [ClassTransient] (an unexplained failure must be reported
// and backed off), then [ClassThrottled] (with the longest delay, so no server is
// retried early), then [ClassConflict]. A joined error is [ClassPermanent] only
// when every branch is permanent: if any part may succeed on retry, retry.
//
// A walk inspects at most 10,000 errors, so a cyclic Unwrap cannot hang it,
// and skips typed nil pointers instead of calling their methods.
package errors
