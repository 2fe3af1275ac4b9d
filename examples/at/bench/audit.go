package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"
)

// AuditRequest is one request as kube-apiserver's audit log (level
// Metadata or more, JSON lines of audit.k8s.io/v1 Event) records it: who
// sent it, what it did to which resource, and how the server answered; for
// a write of a Lease logged at level Request, who it names as holder.
type AuditRequest struct {
	// ID is the request's audit ID; the stages of one request share it.
	ID string
	// Stage is the audit stage of the line ("ResponseStarted" for the
	// start of a watch, "ResponseComplete", "Panic").
	Stage string
	// User is the authenticated user name.
	User string
	// Verb is the Kubernetes verb ("get", "list", "watch", "create",
	// "update", "patch", "delete", "deletecollection"), or the lower-case
	// HTTP method of a request for a non-resource URL.
	Verb string
	// Group, Resource, Subresource, Namespace and Name come from the
	// event's objectRef; all empty for a non-resource URL (discovery).
	Group, Resource, Subresource, Namespace, Name string
	// URI is the request URI, query included.
	URI string
	// Code is the HTTP status code of the response (0 when the line has
	// none).
	Code int
	// Received is when the server received the request
	// (requestReceivedTimestamp); Staged is when it reached Stage
	// (stageTimestamp).
	Received, Staged time.Time
	// Holder is, for a write of a Lease (coordination.k8s.io) whose line
	// carries the request's object (level Request or more), the
	// spec.holderIdentity it sent: "" for a Lease that names no holder (a
	// released one). Nil for every other line.
	Holder *string
	// LeaseDuration is the spec.leaseDurationSeconds that Lease write
	// sent; 0 when it sent none or the line carries no Lease.
	LeaseDuration time.Duration
	// RenewTime is the spec.renewTime that Lease write sent; zero when it
	// sent none or the line carries no Lease.
	RenewTime time.Time
}

// ErrMalformedAudit is wrapped by the errors [ParseAuditLine] and
// [ReadAudit] return for a line that is not an audit event.
var ErrMalformedAudit = errors.New("bench: malformed audit event")

// auditEvent is the part of audit.k8s.io/v1 Event that AuditRequest keeps.
type auditEvent struct {
	Kind       string `json:"kind"`
	APIVersion string `json:"apiVersion"`
	AuditID    string `json:"auditID"`
	Stage      string `json:"stage"`
	RequestURI string `json:"requestURI"`
	Verb       string `json:"verb"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		APIGroup    string `json:"apiGroup"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestReceivedTimestamp time.Time       `json:"requestReceivedTimestamp"`
	StageTimestamp           time.Time       `json:"stageTimestamp"`
	RequestObject            json.RawMessage `json:"requestObject"`
}

// leaseObject is the part of a coordination.k8s.io Lease that
// AuditRequest keeps.
type leaseObject struct {
	Kind string `json:"kind"`
	Spec struct {
		HolderIdentity       *string    `json:"holderIdentity"`
		LeaseDurationSeconds *int32     `json:"leaseDurationSeconds"`
		RenewTime            *time.Time `json:"renewTime"`
	} `json:"spec"`
}

// ParseAuditLine reads one line of a JSON audit log. A line that is not an
// audit.k8s.io Event with an audit ID, a stage, a verb and a received
// timestamp, or whose Lease request object cannot be read, gives an error
// wrapping [ErrMalformedAudit].
func ParseAuditLine(line []byte) (AuditRequest, error) {
	var ev auditEvent
	if err := json.Unmarshal(line, &ev); err != nil {
		return AuditRequest{}, fmt.Errorf("%w: %v", ErrMalformedAudit, err)
	}
	if ev.Kind != "Event" || !strings.HasPrefix(ev.APIVersion, "audit.k8s.io/") {
		return AuditRequest{}, fmt.Errorf("%w: kind %q, apiVersion %q", ErrMalformedAudit, ev.Kind, ev.APIVersion)
	}
	if ev.AuditID == "" || ev.Stage == "" || ev.Verb == "" || ev.RequestReceivedTimestamp.IsZero() {
		return AuditRequest{}, fmt.Errorf("%w: no auditID, stage, verb or requestReceivedTimestamp", ErrMalformedAudit)
	}
	r := AuditRequest{
		ID: ev.AuditID, Stage: ev.Stage, User: ev.User.Username, Verb: ev.Verb, URI: ev.RequestURI,
		Received: ev.RequestReceivedTimestamp, Staged: ev.StageTimestamp,
	}
	if o := ev.ObjectRef; o != nil {
		r.Group, r.Resource, r.Subresource, r.Namespace, r.Name = o.APIGroup, o.Resource, o.Subresource, o.Namespace, o.Name
	}
	if ev.ResponseStatus != nil {
		r.Code = ev.ResponseStatus.Code
	}
	if len(ev.RequestObject) > 0 && r.Group == "coordination.k8s.io" && r.Resource == "leases" && r.Subresource == "" {
		var l leaseObject
		if err := json.Unmarshal(ev.RequestObject, &l); err != nil {
			return AuditRequest{}, fmt.Errorf("%w: the Lease sent: %v", ErrMalformedAudit, err)
		}
		if l.Kind == "Lease" {
			holder := ""
			if l.Spec.HolderIdentity != nil {
				holder = *l.Spec.HolderIdentity
			}
			r.Holder = &holder
			if l.Spec.LeaseDurationSeconds != nil {
				r.LeaseDuration = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
			}
			if l.Spec.RenewTime != nil {
				r.RenewTime = *l.Spec.RenewTime
			}
		}
	}
	return r, nil
}

// ReadAudit reads audit lines from r and returns one AuditRequest per
// request (per audit ID: a watch logs a line when it starts and another
// when it ends; the first is kept, with the last line's code when it has
// one), in the order their first line appears. A RequestReceived line,
// logged before the request is handled, gives way to the request's next
// line, which carries what handling it found (a created object's name, the
// Lease sent); a request with no line after it (the server stopped with it
// in flight) is returned as received, with no code. keep, when not nil, selects
// the requests to return. An incomplete last line (a log still being
// written) is not an error: it is left unread, and ReadAudit returns how
// many bytes it consumed, so that a caller following a growing log can
// continue from there.
func ReadAudit(r io.Reader, keep func(AuditRequest) bool) ([]AuditRequest, int64, error) {
	var out []AuditRequest
	index := map[string]int{}
	br := bufio.NewReaderSize(r, 1<<20)
	var consumed int64
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return out, consumed, nil // a partial line waits for its end
		}
		if err != nil {
			return out, consumed, fmt.Errorf("bench: reading the audit log: %w", err)
		}
		consumed += int64(len(line))
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		req, err := ParseAuditLine(line)
		if err != nil {
			return out, consumed, fmt.Errorf("line %d: %w", n, err)
		}
		if keep != nil && !keep(req) {
			continue
		}
		if i, ok := index[req.ID]; ok {
			out[i] = out[i].Merge(req)
			continue
		}
		index[req.ID] = len(out)
		out = append(out, req)
	}
}

// stageRequestReceived is the audit stage logged as a request arrives,
// before it is handled.
const stageRequestReceived = "RequestReceived"

// Merge returns what is known of a request from r, a line of it, and next,
// a later line with the same audit ID (as [ReadAudit] keeps them): next
// whole when r is the RequestReceived line, which lacks what handling
// found (a created object's name, the Lease sent); otherwise r, with
// next's code when next has one. A caller that reads a growing log in
// several calls of ReadAudit merges a request split between two with it.
func (r AuditRequest) Merge(next AuditRequest) AuditRequest {
	switch {
	case r.Stage == stageRequestReceived && next.Stage != stageRequestReceived:
		return next
	case next.Code != 0:
		r.Code = next.Code
	}
	return r
}

// RequestClass sorts a controller's requests by what sent them.
type RequestClass string

// The classes of [AuditRequest.Class].
const (
	// ClassLeaderElection is a request for a Lease (leader election).
	ClassLeaderElection RequestClass = "leader election"
	// ClassInformer is a request of a cache's reflector: a watch, or a
	// list that carries a resourceVersion parameter (reflectors always
	// set one; a client's own List does not unless asked to).
	ClassInformer RequestClass = "informer list/watch"
	// ClassDiscovery is a request for a non-resource URL (/api, /apis,
	// /version...): API discovery.
	ClassDiscovery RequestClass = "discovery"
	// ClassWrite is a create, update, patch, delete or deletecollection.
	ClassWrite RequestClass = "write"
	// ClassRead is a get, or a list that no informer sent: a read that
	// bypassed the cache.
	ClassRead RequestClass = "uncached read"
)

// Class says which part of a controller sent the request.
func (r AuditRequest) Class() RequestClass {
	switch {
	case r.Resource == "":
		return ClassDiscovery
	case r.Resource == "leases" && r.Group == "coordination.k8s.io":
		return ClassLeaderElection
	case r.Verb == "watch":
		return ClassInformer
	case r.Verb == "list" && hasQuery(r.URI, "resourceVersion"):
		return ClassInformer
	case r.Write():
		return ClassWrite
	}
	return ClassRead
}

// Write reports whether the request is a write.
func (r AuditRequest) Write() bool {
	switch r.Verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

// Refused reports whether the server refused the request with 409
// Conflict (an optimistic-lock conflict, or a create of an object that
// exists).
func (r AuditRequest) Refused() bool { return r.Code == 409 }

// Accepted reports whether the server answered with a 2xx code.
func (r AuditRequest) Accepted() bool { return r.Code >= 200 && r.Code < 300 }

// ServerError reports whether the server answered with a 5xx code: a write
// of unknown outcome (a 504 may have been applied), which a loaded server
// may also have received well after it was sent.
func (r AuditRequest) ServerError() bool { return r.Code >= 500 }

// Target names the request's verb and resource the way the report prints
// them: "patch ats/status", "create events (events.k8s.io)", "get pods";
// the group is named only when it is not the At's, the core group or
// leader election's.
func (r AuditRequest) Target() string {
	if r.Resource == "" {
		return r.Verb + " " + pathOf(r.URI)
	}
	res := r.Verb + " " + r.Resource
	if r.Subresource != "" {
		res += "/" + r.Subresource
	}
	if r.Group != "" && r.Group != "cnat.reconcilekit.dev" && r.Group != "coordination.k8s.io" {
		res += " (" + r.Group + ")"
	}
	return res
}

func hasQuery(uri, key string) bool {
	_, q, ok := strings.Cut(uri, "?")
	if !ok {
		return false
	}
	v, err := url.ParseQuery(q)
	return err == nil && v.Has(key)
}

func pathOf(uri string) string {
	p, _, _ := strings.Cut(uri, "?")
	return p
}
