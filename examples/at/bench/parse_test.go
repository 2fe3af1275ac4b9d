package bench_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	"github.com/reconcilekit/reconcilekit/examples/at/bench"
)

// Lines as kube-apiserver 1.37 writes them at level Metadata (the user's
// extra and the annotations shortened).
const (
	auditPodCreate      = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"39480a20-5024-409b-8ac9-56aaae92f114","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/exp-x2kj8/pods","verb":"create","user":{"username":"classic-1","groups":["system:masters","bench:controllers","system:authenticated"]},"sourceIPs":["127.0.0.1"],"userAgent":"classic/v0.0.0 (linux/amd64) kubernetes/$Format","objectRef":{"resource":"pods","namespace":"exp-x2kj8","name":"at-00006-pod","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":201},"requestReceivedTimestamp":"2026-11-22T14:39:20.287785Z","stageTimestamp":"2026-11-22T14:39:20.298755Z","annotations":{"authorization.k8s.io/decision":"allow"}}`
	auditLeaseGet404    = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"661f382b-9283-4839-ad9a-e745d7aeede7","stage":"ResponseComplete","requestURI":"/apis/coordination.k8s.io/v1/namespaces/bench-leases/leases/classic-at.bench.reconcilekit.dev?timeout=5s","verb":"get","user":{"username":"classic-1","groups":["system:masters"]},"objectRef":{"resource":"leases","namespace":"bench-leases","name":"classic-at.bench.reconcilekit.dev","apiGroup":"coordination.k8s.io","apiVersion":"v1"},"responseStatus":{"metadata":{},"status":"Failure","reason":"NotFound","code":404},"requestReceivedTimestamp":"2026-11-22T14:37:58.968844Z","stageTimestamp":"2026-11-22T14:37:58.971574Z"}`
	auditDiscovery      = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"ce62c09d-c103-449e-8a56-e9b2f678e777","stage":"ResponseComplete","requestURI":"/api","verb":"get","user":{"username":"classic-1"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2026-11-22T14:37:58.997938Z","stageTimestamp":"2026-11-22T14:37:59.000150Z"}`
	auditWatchStart     = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"825b931b-1a0c-4dc5-98cf-7c823d32f144","stage":"ResponseStarted","requestURI":"/api/v1/pods?allowWatchBookmarks=true\u0026resourceVersionMatch=NotOlderThan\u0026sendInitialEvents=true\u0026timeoutSeconds=351\u0026watch=true","verb":"watch","user":{"username":"reconcilekit-2"},"objectRef":{"resource":"pods","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2026-11-22T14:46:47.414661Z","stageTimestamp":"2026-11-22T14:46:47.417684Z"}`
	auditWatchEnd       = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"825b931b-1a0c-4dc5-98cf-7c823d32f144","stage":"ResponseComplete","requestURI":"/api/v1/pods?allowWatchBookmarks=true\u0026resourceVersionMatch=NotOlderThan\u0026sendInitialEvents=true\u0026timeoutSeconds=351\u0026watch=true","verb":"watch","user":{"username":"reconcilekit-2"},"objectRef":{"resource":"pods","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2026-11-22T14:46:47.414661Z","stageTimestamp":"2026-11-22T14:52:38.417684Z"}`
	auditStatusPatch409 = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"0a0a","stage":"ResponseComplete","requestURI":"/apis/cnat.reconcilekit.dev/v1alpha1/namespaces/n/ats/a/status?fieldManager=at-controller","verb":"patch","user":{"username":"reconcilekit-2"},"objectRef":{"resource":"ats","namespace":"n","name":"a","apiGroup":"cnat.reconcilekit.dev","apiVersion":"v1alpha1","subresource":"status"},"responseStatus":{"metadata":{},"code":409},"requestReceivedTimestamp":"2026-11-22T14:46:48Z","stageTimestamp":"2026-11-22T14:46:48.001Z"}`
	auditEventCreate    = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"0b0b","stage":"ResponseComplete","requestURI":"/apis/events.k8s.io/v1/namespaces/n/events","verb":"create","user":{"username":"reconcilekit-2"},"objectRef":{"resource":"events","namespace":"n","name":"a.1","apiGroup":"events.k8s.io","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":201},"requestReceivedTimestamp":"2026-11-22T14:46:48Z","stageTimestamp":"2026-11-22T14:46:48.001Z"}`
	auditListUncached   = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"0c0c","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/n/pods?labelSelector=a%3Db","verb":"list","user":{"username":"u"},"objectRef":{"resource":"pods","namespace":"n","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2026-11-22T14:46:48Z","stageTimestamp":"2026-11-22T14:46:48.001Z"}`
	auditListInformer   = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"0d0d","stage":"ResponseComplete","requestURI":"/api/v1/pods?limit=500\u0026resourceVersion=0","verb":"list","user":{"username":"u"},"objectRef":{"resource":"pods","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2026-11-22T14:46:48Z","stageTimestamp":"2026-11-22T14:46:48.001Z"}`
	// Level Request for Leases: a range Lease acquired (created), and
	// released (holder emptied).
	auditLeaseCreate  = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Request","auditID":"7edb74e1-0691-4dbc-9a87-e80824a6fcf5","stage":"ResponseComplete","requestURI":"/apis/coordination.k8s.io/v1/namespaces/bench-leases/leases","verb":"create","user":{"username":"sharded-x","groups":["system:masters","bench:controllers","system:authenticated"]},"objectRef":{"resource":"leases","namespace":"bench-leases","name":"at-1-of-2","apiGroup":"coordination.k8s.io","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":201},"requestObject":{"kind":"Lease","apiVersion":"coordination.k8s.io/v1","metadata":{"name":"at-1-of-2","namespace":"bench-leases","labels":{"shard.reconcilekit.dev/group":"at"}},"spec":{"holderIdentity":"vm_er65ywej9jtc","leaseDurationSeconds":4,"acquireTime":"2026-11-25T13:35:33.964132Z","renewTime":"2026-11-25T13:35:33.964132Z","leaseTransitions":0}},"requestReceivedTimestamp":"2026-11-25T13:35:33.966107Z","stageTimestamp":"2026-11-25T13:35:33.967714Z"}`
	auditLeaseRelease = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Request","auditID":"324f4809-35ba-462e-b84b-2cca9a27f543","stage":"ResponseComplete","requestURI":"/apis/coordination.k8s.io/v1/namespaces/bench-leases/leases/at-1-of-2","verb":"update","user":{"username":"sharded-x"},"objectRef":{"resource":"leases","namespace":"bench-leases","name":"at-1-of-2","uid":"2bbb0e3c-f6ad-4dec-ad68-c8d5e6de6ef6","apiGroup":"coordination.k8s.io","apiVersion":"v1","resourceVersion":"228"},"responseStatus":{"metadata":{},"code":200},"requestObject":{"kind":"Lease","apiVersion":"coordination.k8s.io/v1","metadata":{"name":"at-1-of-2","namespace":"bench-leases","resourceVersion":"228","labels":{"shard.reconcilekit.dev/group":"at"}},"spec":{"holderIdentity":"","leaseDurationSeconds":1,"acquireTime":"2026-11-25T13:35:34.982418Z","renewTime":"2026-11-25T13:35:34.982418Z","leaseTransitions":0}},"requestReceivedTimestamp":"2026-11-25T13:35:34.982505Z","stageTimestamp":"2026-11-25T13:35:34.984016Z"}`
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestParseAuditLine(t *testing.T) {
	tests := []struct {
		name       string
		line       string
		want       bench.AuditRequest
		wantClass  bench.RequestClass
		wantTarget string
	}{
		{
			name: "a Pod create, accepted",
			line: auditPodCreate,
			want: bench.AuditRequest{ID: "39480a20-5024-409b-8ac9-56aaae92f114", Stage: "ResponseComplete", User: "classic-1", Verb: "create",
				Resource: "pods", Namespace: "exp-x2kj8", Name: "at-00006-pod", URI: "/api/v1/namespaces/exp-x2kj8/pods", Code: 201,
				Received: at("2026-11-22T14:39:20.287785Z"), Staged: at("2026-11-22T14:39:20.298755Z")},
			wantClass: bench.ClassWrite, wantTarget: "create pods",
		},
		{
			name: "a Lease not found",
			line: auditLeaseGet404,
			want: bench.AuditRequest{ID: "661f382b-9283-4839-ad9a-e745d7aeede7", Stage: "ResponseComplete", User: "classic-1", Verb: "get",
				Group: "coordination.k8s.io", Resource: "leases", Namespace: "bench-leases", Name: "classic-at.bench.reconcilekit.dev",
				URI: "/apis/coordination.k8s.io/v1/namespaces/bench-leases/leases/classic-at.bench.reconcilekit.dev?timeout=5s", Code: 404,
				Received: at("2026-11-22T14:37:58.968844Z"), Staged: at("2026-11-22T14:37:58.971574Z")},
			wantClass: bench.ClassLeaderElection, wantTarget: "get leases",
		},
		{
			name: "discovery has no objectRef",
			line: auditDiscovery,
			want: bench.AuditRequest{ID: "ce62c09d-c103-449e-8a56-e9b2f678e777", Stage: "ResponseComplete", User: "classic-1", Verb: "get",
				URI: "/api", Code: 200, Received: at("2026-11-22T14:37:58.997938Z"), Staged: at("2026-11-22T14:37:59.000150Z")},
			wantClass: bench.ClassDiscovery, wantTarget: "get /api",
		},
		{
			name: "a watch-list watch",
			line: auditWatchStart,
			want: bench.AuditRequest{ID: "825b931b-1a0c-4dc5-98cf-7c823d32f144", Stage: "ResponseStarted", User: "reconcilekit-2", Verb: "watch",
				Resource: "pods", URI: "/api/v1/pods?allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&timeoutSeconds=351&watch=true",
				Code: 200, Received: at("2026-11-22T14:46:47.414661Z"), Staged: at("2026-11-22T14:46:47.417684Z")},
			wantClass: bench.ClassInformer, wantTarget: "watch pods",
		},
		{
			name: "a status patch refused",
			line: auditStatusPatch409,
			want: bench.AuditRequest{ID: "0a0a", Stage: "ResponseComplete", User: "reconcilekit-2", Verb: "patch",
				Group: "cnat.reconcilekit.dev", Resource: "ats", Subresource: "status", Namespace: "n", Name: "a",
				URI: "/apis/cnat.reconcilekit.dev/v1alpha1/namespaces/n/ats/a/status?fieldManager=at-controller", Code: 409,
				Received: at("2026-11-22T14:46:48Z"), Staged: at("2026-11-22T14:46:48.001Z")},
			wantClass: bench.ClassWrite, wantTarget: "patch ats/status",
		},
		{
			name: "an event of events.k8s.io",
			line: auditEventCreate,
			want: bench.AuditRequest{ID: "0b0b", Stage: "ResponseComplete", User: "reconcilekit-2", Verb: "create",
				Group: "events.k8s.io", Resource: "events", Namespace: "n", Name: "a.1", URI: "/apis/events.k8s.io/v1/namespaces/n/events", Code: 201,
				Received: at("2026-11-22T14:46:48Z"), Staged: at("2026-11-22T14:46:48.001Z")},
			wantClass: bench.ClassWrite, wantTarget: "create events (events.k8s.io)",
		},
		{
			name: "a list without resourceVersion bypassed the cache",
			line: auditListUncached,
			want: bench.AuditRequest{ID: "0c0c", Stage: "ResponseComplete", User: "u", Verb: "list", Resource: "pods", Namespace: "n",
				URI: "/api/v1/namespaces/n/pods?labelSelector=a%3Db", Code: 200, Received: at("2026-11-22T14:46:48Z"), Staged: at("2026-11-22T14:46:48.001Z")},
			wantClass: bench.ClassRead, wantTarget: "list pods",
		},
		{
			name: "a reflector's list carries a resourceVersion",
			line: auditListInformer,
			want: bench.AuditRequest{ID: "0d0d", Stage: "ResponseComplete", User: "u", Verb: "list", Resource: "pods",
				URI: "/api/v1/pods?limit=500&resourceVersion=0", Code: 200, Received: at("2026-11-22T14:46:48Z"), Staged: at("2026-11-22T14:46:48.001Z")},
			wantClass: bench.ClassInformer, wantTarget: "list pods",
		},
		{
			name: "a Lease acquired, at level Request: who it names holder, for how long, renewed when",
			line: auditLeaseCreate,
			want: bench.AuditRequest{ID: "7edb74e1-0691-4dbc-9a87-e80824a6fcf5", Stage: "ResponseComplete", User: "sharded-x", Verb: "create",
				Group: "coordination.k8s.io", Resource: "leases", Namespace: "bench-leases", Name: "at-1-of-2",
				URI: "/apis/coordination.k8s.io/v1/namespaces/bench-leases/leases", Code: 201,
				Received: at("2026-11-25T13:35:33.966107Z"), Staged: at("2026-11-25T13:35:33.967714Z"),
				Holder: ptr.To("vm_er65ywej9jtc"), LeaseDuration: 4 * time.Second, RenewTime: at("2026-11-25T13:35:33.964132Z")},
			wantClass: bench.ClassLeaderElection, wantTarget: "create leases",
		},
		{
			name: "a Lease released: no holder",
			line: auditLeaseRelease,
			want: bench.AuditRequest{ID: "324f4809-35ba-462e-b84b-2cca9a27f543", Stage: "ResponseComplete", User: "sharded-x", Verb: "update",
				Group: "coordination.k8s.io", Resource: "leases", Namespace: "bench-leases", Name: "at-1-of-2",
				URI: "/apis/coordination.k8s.io/v1/namespaces/bench-leases/leases/at-1-of-2", Code: 200,
				Received: at("2026-11-25T13:35:34.982505Z"), Staged: at("2026-11-25T13:35:34.984016Z"),
				Holder: ptr.To(""), LeaseDuration: time.Second, RenewTime: at("2026-11-25T13:35:34.982418Z")},
			wantClass: bench.ClassLeaderElection, wantTarget: "update leases",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := bench.ParseAuditLine([]byte(tt.line))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseAuditLine (-want +got):\n%s", diff)
			}
			if c := got.Class(); c != tt.wantClass {
				t.Errorf("Class() = %q, want %q", c, tt.wantClass)
			}
			if tg := got.Target(); tg != tt.wantTarget {
				t.Errorf("Target() = %q, want %q", tg, tt.wantTarget)
			}
		})
	}
}

func TestAuditRequestVerdicts(t *testing.T) {
	tests := []struct {
		verb                     string
		code                     int
		write, accepted, refused bool
	}{
		{verb: "create", code: 201, write: true, accepted: true},
		{verb: "patch", code: 409, write: true, refused: true},
		{verb: "update", code: 422, write: true},
		{verb: "delete", code: 200, write: true, accepted: true},
		{verb: "deletecollection", code: 200, write: true, accepted: true},
		{verb: "get", code: 404},
		{verb: "list", code: 200, accepted: true},
		{verb: "watch", code: 0},
	}
	for _, tt := range tests {
		r := bench.AuditRequest{Verb: tt.verb, Code: tt.code, Resource: "ats"}
		if r.Write() != tt.write || r.Accepted() != tt.accepted || r.Refused() != tt.refused {
			t.Errorf("%s %d: Write, Accepted, Refused = %t, %t, %t; want %t, %t, %t", tt.verb, tt.code,
				r.Write(), r.Accepted(), r.Refused(), tt.write, tt.accepted, tt.refused)
		}
	}
}

func TestParseAuditLineRejects(t *testing.T) {
	for _, line := range []string{
		``,
		`not json`,
		`{"kind":"Pod","apiVersion":"v1"}`,
		`{"kind":"Event","apiVersion":"events.k8s.io/v1","auditID":"a","stage":"ResponseComplete","verb":"get","requestReceivedTimestamp":"2026-11-22T14:46:48Z"}`,
		`{"kind":"Event","apiVersion":"audit.k8s.io/v1","stage":"ResponseComplete","verb":"get","requestReceivedTimestamp":"2026-11-22T14:46:48Z"}`,
		`{"kind":"Event","apiVersion":"audit.k8s.io/v1","auditID":"a","stage":"ResponseComplete","verb":"get"}`,
		`{"kind":"Event","apiVersion":"audit.k8s.io/v1","auditID":"a","stage":"ResponseComplete","verb":"get","requestReceivedTimestamp":"yesterday"}`,
		`{"kind":"Event","apiVersion":"audit.k8s.io/v1","auditID":"a","stage":"ResponseComplete","verb":"update","requestReceivedTimestamp":"2026-11-22T14:46:48Z",` +
			`"objectRef":{"resource":"leases","apiGroup":"coordination.k8s.io","name":"l"},"requestObject":{"kind":"Lease","spec":{"holderIdentity":7}}}`,
	} {
		if _, err := bench.ParseAuditLine([]byte(line)); !errors.Is(err, bench.ErrMalformedAudit) {
			t.Errorf("ParseAuditLine(%q) error = %v, want ErrMalformedAudit", line, err)
		}
	}
}

func TestReadAuditKeepsOneRequestPerIDAndLeavesAPartialLine(t *testing.T) {
	log := auditPodCreate + "\n\n" + auditWatchStart + "\n" + auditDiscovery + "\n" + auditWatchEnd + "\n" + auditStatusPatch409[:40]
	reqs, n, err := bench.ReadAudit(strings.NewReader(log), func(r bench.AuditRequest) bool { return r.User != "classic-1" || r.Verb == "create" })
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range reqs {
		got = append(got, r.Stage+" "+r.Target())
	}
	want := []string{"ResponseComplete create pods", "ResponseStarted watch pods"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	if wantN := int64(len(log) - 40); n != wantN {
		t.Errorf("consumed %d bytes, want %d (all but the partial line)", n, wantN)
	}
	if _, _, err := bench.ReadAudit(strings.NewReader(auditPodCreate+"\n{\n"), nil); !errors.Is(err, bench.ErrMalformedAudit) {
		t.Errorf("a malformed complete line: error %v, want ErrMalformedAudit", err)
	}
}

func FuzzParseAuditLine(f *testing.F) {
	for _, l := range []string{auditPodCreate, auditLeaseGet404, auditDiscovery, auditWatchStart, auditStatusPatch409, auditEventCreate, auditListInformer,
		auditLeaseCreate, auditLeaseRelease, "", "{}"} {
		f.Add([]byte(l))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := bench.ParseAuditLine(line)
		if err != nil {
			if !errors.Is(err, bench.ErrMalformedAudit) {
				t.Fatalf("error %v does not wrap ErrMalformedAudit", err)
			}
			return
		}
		if r.ID == "" || r.Stage == "" || r.Verb == "" || r.Received.IsZero() {
			t.Fatalf("accepted %q without ID, stage, verb or receipt: %+v", line, r)
		}
		if r.Class() == "" || !strings.HasPrefix(r.Target(), r.Verb+" ") {
			t.Fatalf("%+v: class %q, target %q", r, r.Class(), r.Target())
		}
	})
}

const procStatus = `Name:	at
Umask:	0022
State:	S (sleeping)
Pid:	4242
VmPeak:	 1290012 kB
VmSize:	 1290012 kB
VmHWM:	   71234 kB
VmRSS:	   65536 kB
RssAnon:	   40000 kB
Threads:	12
`

func TestParseProcStatus(t *testing.T) {
	tests := []struct {
		name    string
		status  string
		want    bench.ProcMemory
		wantErr bool
	}{
		{name: "a running process", status: procStatus, want: bench.ProcMemory{RSS: 65536 * 1024, HWM: 71234 * 1024, Anon: 40000 * 1024}},
		{name: "spaces instead of tabs", status: "VmHWM: 1 kB\nVmRSS: 0 kB\n", want: bench.ProcMemory{RSS: 0, HWM: 1024}},
		{name: "with RssAnon", status: "VmHWM:\t9 kB\nVmRSS:\t8 kB\nRssAnon:\t5 kB\nRssFile:\t3 kB\n", want: bench.ProcMemory{RSS: 8 * 1024, HWM: 9 * 1024, Anon: 5 * 1024}},
		{name: "RssAnon not kB", status: "VmHWM:\t9 kB\nVmRSS:\t8 kB\nRssAnon:\t5 MB\n", wantErr: true},
		{name: "a zombie has no Vm lines", status: "Name:\tat\nState:\tZ (zombie)\n", wantErr: true},
		{name: "VmHWM missing", status: "VmRSS:\t1 kB\n", wantErr: true},
		{name: "not kB", status: "VmHWM:\t1 MB\nVmRSS:\t1 kB\n", wantErr: true},
		{name: "not a number", status: "VmHWM:\tlots kB\nVmRSS:\t1 kB\n", wantErr: true},
		{name: "overflows bytes", status: "VmHWM:\t18446744073709551615 kB\nVmRSS:\t1 kB\n", wantErr: true},
		{name: "negative", status: "VmHWM:\t-1 kB\nVmRSS:\t1 kB\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := bench.ParseProcStatus(strings.NewReader(tt.status))
			if tt.wantErr {
				if !errors.Is(err, bench.ErrMalformedProcStatus) {
					t.Errorf("error = %v, want ErrMalformedProcStatus", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("ParseProcStatus = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func FuzzParseProcStat(f *testing.F) {
	f.Add("4242 (kube-apiserver) S 4200 4242 4200 0 -1 4194560 91011 0 12 0 1530 412 0 0 20 0 17")
	f.Add("7 (a (b) c) R 1 7 7 0 -1 0 0 0 0 0 3 4")
	f.Add("7 () R")
	f.Fuzz(func(t *testing.T, line string) {
		st, err := bench.ParseProcStat(line)
		if err != nil {
			if !errors.Is(err, bench.ErrMalformedProcStat) {
				t.Fatalf("error %v does not wrap ErrMalformedProcStat", err)
			}
			return
		}
		// The fields after the name are read back: a line rebuilt from
		// what was parsed parses to the same.
		rest := strings.Fields(line[strings.LastIndexByte(line, ')')+1:])
		rebuilt := fmt.Sprintf("1 (%s) %s %d %s", st.Comm, rest[0], st.PPID, strings.Join(rest[2:11], " "))
		utime, _ := strconv.ParseUint(rest[11], 10, 64)
		rebuilt += fmt.Sprintf(" %d %d", utime, st.CPUTicks-utime)
		again, err := bench.ParseProcStat(rebuilt)
		if err != nil || again != st {
			t.Fatalf("%q parsed to %+v; rebuilt as %q, it parses to %+v, %v", line, st, rebuilt, again, err)
		}
	})
}

// Lines logged as requests arrive (a policy that does not omit the stage
// RequestReceived): no code yet, no Lease sent, and a create's objectRef
// without the name handling finds in the object.
const (
	auditLeaseCreateReceived = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Request","auditID":"7edb74e1-0691-4dbc-9a87-e80824a6fcf5","stage":"RequestReceived","requestURI":"/apis/coordination.k8s.io/v1/namespaces/bench-leases/leases","verb":"create","user":{"username":"sharded-x"},"objectRef":{"resource":"leases","namespace":"bench-leases","apiGroup":"coordination.k8s.io","apiVersion":"v1"},"requestReceivedTimestamp":"2026-11-25T13:35:33.966107Z","stageTimestamp":"2026-11-25T13:35:33.966107Z"}`
	auditPatchReceivedOnly   = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"0e0e","stage":"RequestReceived","requestURI":"/apis/cnat.reconcilekit.dev/v1alpha1/namespaces/n/ats/a","verb":"patch","user":{"username":"sharded-x"},"objectRef":{"resource":"ats","namespace":"n","name":"a","apiGroup":"cnat.reconcilekit.dev","apiVersion":"v1alpha1"},"requestReceivedTimestamp":"2026-11-25T13:35:34Z","stageTimestamp":"2026-11-25T13:35:34Z"}`
)

func TestReadAuditTakesTheHandledLineOverRequestReceived(t *testing.T) {
	log := auditLeaseCreateReceived + "\n" + auditPatchReceivedOnly + "\n" + auditLeaseCreate + "\n"
	reqs, _, err := bench.ReadAudit(strings.NewReader(log), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2: %+v", len(reqs), reqs)
	}
	lease, patch := reqs[0], reqs[1]
	if lease.Stage != "ResponseComplete" || lease.Name != "at-1-of-2" || lease.Code != 201 || lease.Holder == nil || *lease.Holder != "vm_er65ywej9jtc" {
		t.Errorf("the Lease create: stage %q, name %q, code %d, holder %v; want the handled line's ResponseComplete, at-1-of-2, 201, vm_er65ywej9jtc",
			lease.Stage, lease.Name, lease.Code, lease.Holder)
	}
	// A request the server never finished logging: received, no code, an
	// outcome nobody knows.
	if patch.Stage != "RequestReceived" || patch.Target() != "patch ats" || patch.Code != 0 {
		t.Errorf("the patch received only: stage %q, target %q, code %d; want RequestReceived, patch ats, 0", patch.Stage, patch.Target(), patch.Code)
	}
}

// TestAuditTailMergesARequestSplitBetweenTwoReads: a tail read while the
// server handles a request sees its RequestReceived line only; the next
// read brings the handled line, which must replace it as within one read
// (the Lease's holder and name come with it), not only lend it its code.
func TestAuditTailMergesARequestSplitBetweenTwoReads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(auditLeaseCreateReceived+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tail := &auditTail{path: path, user: "sharded-x", keep: func(string) bool { return true }, index: map[string]int{}}
	if reqs := tail.read(t); len(reqs) != 1 || reqs[0].Stage != "RequestReceived" || reqs[0].Code != 0 {
		t.Fatalf("first read: %+v, want the Lease create as received, no code", reqs)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(auditLeaseCreate + "\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	reqs := tail.read(t)
	if len(reqs) != 1 {
		t.Fatalf("second read: %d requests, want the one Lease create: %+v", len(reqs), reqs)
	}
	if r := reqs[0]; r.Stage != "ResponseComplete" || r.Name != "at-1-of-2" || r.Code != 201 || r.Holder == nil || *r.Holder != "vm_er65ywej9jtc" {
		t.Errorf("second read: stage %q, name %q, code %d, holder %v; want ResponseComplete, at-1-of-2, 201, vm_er65ywej9jtc",
			r.Stage, r.Name, r.Code, r.Holder)
	}
}
