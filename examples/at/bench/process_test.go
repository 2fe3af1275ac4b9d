package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/reconcilekit/reconcilekit/examples/at/bench"
	"github.com/reconcilekit/reconcilekit/internal/envstart"
	"github.com/reconcilekit/reconcilekit/internal/gobuild"
	"github.com/reconcilekit/reconcilekit/internal/procs"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
)

// controllerGroup is the group of every controller user: the audit policy
// logs their requests, and only theirs.
const controllerGroup = "bench:controllers"

// auditPolicy logs, at level Metadata (who, verb, resource, name, response
// code, timestamps; no bodies), every request of a controller user, and
// nothing else: the harness's own requests (creating Ats, playing the
// kubelet, watching for DONE) are not in the log. A controller user's
// requests for Leases are logged at level Request: a Lease write then
// carries the Lease sent, whose spec.holderIdentity says who holds it (the
// sharded test reconstructs from it which replica held which range when).
//
// Only each request's last stage is logged (ResponseComplete; a watch's
// ResponseStarted too): a request logs its line once it has been handled.
// A kube-apiserver killed in the middle of a request may have applied it
// without logging that line; startPlaneReceived logs RequestReceived too,
// so that such a request is in the log with no code (see mayHaveApplied).
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Request
  userGroups: ["` + controllerGroup + `"]
  resources:
  - group: "coordination.k8s.io"
    resources: ["leases"]
- level: Metadata
  userGroups: ["` + controllerGroup + `"]
- level: None
`

// shardingGate is the kube-apiserver feature gate of server-side sharded
// list and watch (KEP-5866): the plane runs with it on, so that a sharded
// At's ShardSelector is honoured. Controllers that send no ShardSelector
// are unaffected.
const shardingGate = "ShardedListAndWatch=true"

// leaseNamespace holds both controllers' leader election Leases.
const leaseNamespace = "bench-leases"

// plane is a control plane of its own for the process benchmark: envtest's
// kube-apiserver and etcd with the At CRD, whose API server writes an audit
// log of the requests of the controller users.
type plane struct {
	te       *envtest.Environment
	cfg      *rest.Config // a cluster admin, not audited
	admin    client.WithWatch
	auditLog string
	dir      string
	// apiserverPID and etcdPID are the plane's own processes (a test
	// binary may run other control planes beside it).
	apiserverPID, etcdPID int
}

// startPlane starts a control plane with audit logging and sharded list
// and watch on (shardingGate); it is stopped when the test ends.
func startPlane(tb testing.TB) *plane {
	tb.Helper()
	return startPlaneGated(tb, true)
}

// startPlaneGated is startPlane with the sharding gate on or off: off, the
// API server ignores a ShardSelector, as managed control planes do.
func startPlaneGated(tb testing.TB, gated bool) *plane {
	tb.Helper()
	return startPlaneWith(tb, gated, auditPolicy)
}

// startPlaneReceived is startPlane with every controller request logged
// when it is received too, not only once handled: for a test that kills
// kube-apiserver with requests in flight (see auditPolicy). ReadAudit keeps
// one request per audit ID, with the code of its last line: one whose
// last line never came has none.
func startPlaneReceived(tb testing.TB) *plane {
	tb.Helper()
	policy := strings.Replace(auditPolicy, `omitStages: ["RequestReceived"]`+"\n", "", 1)
	if policy == auditPolicy {
		tb.Fatal("auditPolicy no longer omits RequestReceived in the form startPlaneReceived removes")
	}
	return startPlaneWith(tb, true, policy)
}

// startPlaneWith starts a plane with the gate on or off whose API server
// audits with the policy given (see auditPolicy).
func startPlaneWith(tb testing.TB, gated bool, policyYAML string) *plane {
	tb.Helper()
	assets, err := testenv.FindAssets()
	if err != nil {
		tb.Skip(err)
	}
	base := tb.TempDir()
	p := &plane{}
	// A fresh directory and audit log per attempt: envstart starts a
	// fresh plane when envtest gives up on the first too early.
	te, cfg, err := envstart.Start(func(attempt int) *envtest.Environment {
		p.dir = filepath.Join(base, fmt.Sprintf("attempt-%d", attempt))
		p.auditLog = filepath.Join(p.dir, "audit.log")
		policy := filepath.Join(p.dir, "audit-policy.yaml")
		if err := os.MkdirAll(p.dir, 0o700); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(policy, []byte(policyYAML), 0o600); err != nil {
			tb.Fatal(err)
		}
		te := &envtest.Environment{
			BinaryAssetsDirectory:    assets,
			CRDDirectoryPaths:        []string{"../config/crd"},
			ErrorIfCRDPathMissing:    true,
			Scheme:                   env.Scheme,
			ControlPlaneStartTimeout: 2 * time.Minute,
			ControlPlaneStopTimeout:  time.Minute,
		}
		te.ControlPlane.GetAPIServer().Configure().
			Set("audit-policy-file", policy).
			Set("audit-log-path", p.auditLog).
			Set("audit-log-format", "json").
			Set("audit-log-mode", "blocking").
			// The log backend rotates at 100 MB by default, and a full run
			// writes more: a file rotated under a tail's offset would hide
			// requests. 0 disables rotation.
			Set("audit-log-maxsize", "0")
		if gated {
			te.ControlPlane.GetAPIServer().Configure().Set("feature-gates", shardingGate)
		}
		return te
	})
	if err != nil {
		tb.Fatalf("starting the audited control plane: %v", err)
	}
	p.te = te
	// Attached, so that a test process that dies first (a panic, a
	// timeout) does not leave the plane running under later measurements.
	guard, err := testenv.Attach(p.te, testenv.Options{})
	if err != nil {
		_ = p.te.Stop()
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = guard.Stop()
		if err := p.te.Stop(); err != nil {
			tb.Errorf("stopping the audited control plane: %v", err)
		}
		p.keepAudit(tb)
	})
	if p.apiserverPID, err = procs.ChildWith("kube-apiserver", "--audit-log-path="+p.auditLog); err != nil {
		tb.Fatal(err)
	}
	if p.etcdPID, err = procs.ChildWith("etcd", "--data-dir="+p.te.ControlPlane.Etcd.DataDir); err != nil {
		tb.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 500, 1000
	p.cfg = cfg
	if p.admin, err = client.NewWithWatch(cfg, client.Options{Scheme: env.Scheme}); err != nil {
		tb.Fatal(err)
	}
	p.namespaceNamed(tb, leaseNamespace)
	return p
}

// keepAuditDir is where a failed test's audit logs are copied, when set:
// the proofs judge from the audit log, which goes with the test's temporary
// directory.
var keepAuditDir = flag.String("at.keepaudit", "", "copy the audit log of a failed test's control plane into this directory")

// keepAudit copies the plane's audit log into -at.keepaudit when the test
// failed, named after the test, and says where.
func (p *plane) keepAudit(tb testing.TB) {
	if *keepAuditDir == "" || !tb.Failed() {
		return
	}
	data, err := os.ReadFile(p.auditLog)
	if err == nil {
		err = os.MkdirAll(*keepAuditDir, 0o700)
	}
	name := filepath.Join(*keepAuditDir, strings.NewReplacer("/", "_", " ", "_").Replace(tb.Name())+".audit.log")
	if err == nil {
		err = os.WriteFile(name, data, 0o600)
	}
	if err != nil {
		tb.Logf("keeping the audit log: %v", err)
		return
	}
	tb.Logf("audit log kept in %s", name)
}

// namespace creates a namespace with a generated name.
func (p *plane) namespace(tb testing.TB, prefix string) string {
	tb.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if err := p.admin.Create(context.Background(), ns); err != nil {
		tb.Fatal(err)
	}
	return ns.Name
}

func (p *plane) namespaceNamed(tb testing.TB, name string) {
	tb.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := p.admin.Create(context.Background(), ns); err != nil {
		tb.Fatal(err)
	}
}

// user provisions a controller user (a client certificate for name, in
// system:masters and controllerGroup, so audited) and writes its
// kubeconfig.
func (p *plane) user(tb testing.TB, name string) string {
	tb.Helper()
	u, err := p.te.AddUser(envtest.User{Name: name, Groups: []string{"system:masters", controllerGroup}}, nil)
	if err != nil {
		tb.Fatalf("user %s: %v", name, err)
	}
	data, err := u.KubeConfig()
	if err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(p.dir, name+".kubeconfig")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

// auditTail follows the audit log from where it stood when the tail was
// made, keeping the requests of the users it follows, one per audit ID.
type auditTail struct {
	path string
	// user names what the tail follows (in its messages); keep says which
	// users' requests it keeps.
	user   string
	keep   func(user string) bool
	offset int64

	mu    sync.Mutex
	reqs  []bench.AuditRequest
	index map[string]int
}

// tail follows the requests of one user.
func (p *plane) tail(tb testing.TB, user string) *auditTail {
	tb.Helper()
	return p.tailUsers(tb, user, func(u string) bool { return u == user })
}

// tailUsers follows the requests of every user that keep accepts; what
// names them in the tail's messages.
func (p *plane) tailUsers(tb testing.TB, what string, keep func(user string) bool) *auditTail {
	tb.Helper()
	fi, err := os.Stat(p.auditLog)
	var offset int64
	switch {
	case err == nil:
		offset = fi.Size()
	case !errors.Is(err, os.ErrNotExist):
		tb.Fatal(err)
	}
	return &auditTail{path: p.auditLog, user: what, keep: keep, offset: offset, index: map[string]int{}}
}

// read takes in the lines written since the last read and returns every
// request of the followed users so far.
func (a *auditTail) read(tb testing.TB) []bench.AuditRequest {
	tb.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	f, err := os.Open(a.path)
	if errors.Is(err, os.ErrNotExist) {
		return a.reqs
	}
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		tb.Fatal(err)
	} else if fi.Size() < a.offset {
		tb.Fatalf("audit log %s shrank under the tail (%d bytes, tail at %d): rotated? requests would be lost", a.path, fi.Size(), a.offset)
	}
	if _, err := f.Seek(a.offset, io.SeekStart); err != nil {
		tb.Fatal(err)
	}
	reqs, n, err := bench.ReadAudit(f, func(r bench.AuditRequest) bool { return a.keep(r.User) })
	if err != nil {
		tb.Fatalf("audit log %s after byte %d: %v", a.path, a.offset, err)
	}
	a.offset += n
	for _, r := range reqs {
		if i, ok := a.index[r.ID]; ok {
			// Its first line came in an earlier read.
			a.reqs[i] = a.reqs[i].Merge(r)
			continue
		}
		a.index[r.ID] = len(a.reqs)
		a.reqs = append(a.reqs, r)
	}
	return append([]bench.AuditRequest(nil), a.reqs...)
}

// busy reports whether a request is work of the controller (a write or an
// uncached read), as opposed to what a running controller does anyway:
// renew its Lease and keep its watches open.
func busy(r bench.AuditRequest) bool { return beyondWatches(r) }

// waitQuiet waits until the user has sent no write and no uncached read for
// quiet (after since), and returns when its last one was received.
func (a *auditTail) waitQuiet(tb testing.TB, since time.Time, quiet, timeout time.Duration) time.Time {
	tb.Helper()
	last := since
	deadline := time.Now().Add(timeout)
	for {
		for _, r := range a.read(tb) {
			if busy(r) && r.Received.After(last) {
				last = r.Received
			}
		}
		if time.Since(last) >= quiet {
			return last
		}
		if time.Now().After(deadline) {
			tb.Logf("%s: still busy %s after %s (last request %s ago)", a.user, timeout, since.Format(time.StampMilli), time.Since(last))
			return last
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// between returns the requests received in [from, to).
func between(reqs []bench.AuditRequest, from, to time.Time) []bench.AuditRequest {
	var out []bench.AuditRequest
	for _, r := range reqs {
		if !r.Received.Before(from) && r.Received.Before(to) {
			out = append(out, r)
		}
	}
	return out
}

// binaries are the controllers' executables (see buildBinaries).
type binaries struct {
	classic, handwritten, at, bare string
	// atTraced is the At built with tracingOverlay.
	atTraced string
	// atPprof says how the At binary serves pprof: "flag" (it has
	// --pprof-bind-address), "overlay" (built with the harness's pprof
	// listener, see pprofOverlay), or "" (no pprof).
	atPprof string
}

const (
	atPackage          = "github.com/reconcilekit/reconcilekit/examples/at"
	classicPackage     = "github.com/reconcilekit/reconcilekit/examples/at/bench/classic/cmd/classic"
	handwrittenPackage = "github.com/reconcilekit/reconcilekit/examples/at/bench/handwritten/cmd/handwritten"
	barePackage        = "github.com/reconcilekit/reconcilekit/examples/at/bench/bare/cmd/bare"
)

// pprofEnv names the environment variable that the overlay's listener
// reads.
const pprofEnv = "RECONCILEKIT_BENCH_PPROF_ADDR"

// pprofOverlay is added to the At operator's package main, at build time
// only and only when a CPU profile is asked for and the binary has no
// --pprof-bind-address flag: net/http/pprof on the address in pprofEnv.
// main.go is not changed.
const pprofOverlay = `package main

import (
	"net/http"
	_ "net/http/pprof"
	"os"
)

func init() {
	if addr := os.Getenv("` + pprofEnv + `"); addr != "" {
		go func() { _ = http.ListenAndServe(addr, nil) }()
	}
}
`

// tracingSpansMetric counts the spans the traced At's exporter took.
const tracingSpansMetric = "reconcilekit_bench_spans_exported_total"

// tracingOverlay replaces the At's exporter.go in the traced At's build:
// the spans go to an exporter in memory, which counts them on the
// process's metrics endpoint and drops them, instead of a collector. The
// rest of the At is the binary as it ships: the SDK's TracerProvider with
// its batch span processor, tracing.Config around every client and a
// Tracer on the controller, turned on by the OTLP variables (see
// tracedEnv).
const tracingOverlay = `package main

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/reconcilekit/reconcilekit/examples/at/internal/otlphttp"
)

var benchSpans = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "` + tracingSpansMetric + `",
	Help: "Spans the bench's in-memory exporter took (and dropped).",
})

func init() { metrics.Registry.MustRegister(benchSpans) }

type memoryExporter struct{}

func (memoryExporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	benchSpans.Add(float64(len(spans)))
	return nil
}

func (memoryExporter) Shutdown(context.Context) error { return nil }

func newExporter(otlphttp.Config) (sdktrace.SpanExporter, error) { return memoryExporter{}, nil }
`

// tracedEnv turns the traced At's tracing on, sampling every span: the
// endpoint is never contacted (tracingOverlay's exporter sends nothing).
var tracedEnv = []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:1", "OTEL_TRACES_SAMPLER=always_on"}

// buildTraced returns the At built with tracingOverlay, from the go build
// cache as executable does; with profiling, with pprofOverlay too (the
// traced At is profiled as the At is).
func buildTraced(tb testing.TB, profiling bool) string {
	tb.Helper()
	dir := tb.TempDir()
	src, err := exec.Command("go", "list", "-f", "{{.Dir}}", atPackage).Output()
	if err != nil {
		tb.Fatal(err)
	}
	file := filepath.Join(dir, "bench_exporter.go")
	if err := os.WriteFile(file, []byte(tracingOverlay), 0o600); err != nil {
		tb.Fatal(err)
	}
	replace := map[string]string{filepath.Join(strings.TrimSpace(string(src)), "exporter.go"): file}
	if profiling {
		pprof := filepath.Join(dir, "zz_bench_pprof.go")
		if err := os.WriteFile(pprof, []byte(pprofOverlay), 0o600); err != nil {
			tb.Fatal(err)
		}
		replace[filepath.Join(strings.TrimSpace(string(src)), "zz_bench_pprof.go")] = pprof
	}
	overlay, err := json.Marshal(map[string]map[string]string{"Replace": replace})
	if err != nil {
		tb.Fatal(err)
	}
	ov := filepath.Join(dir, "tracing-overlay.json")
	if err := os.WriteFile(ov, overlay, 0o600); err != nil {
		tb.Fatal(err)
	}
	bin, err := gobuild.Executable(context.Background(), tb.TempDir(), atPackage, "-overlay", ov)
	if err != nil {
		tb.Fatal(err)
	}
	return bin
}

// buildBinaries returns the controllers, built without -race (they are
// measured, as they would run in production), from the go build cache:
// linked once, not once per test (see gobuild.Executable). With
// profiling, an At binary that lacks --pprof-bind-address is built with
// pprofOverlay into the test's temporary directory.
func buildBinaries(tb testing.TB, profiling bool) binaries {
	tb.Helper()
	b := binaries{classic: executable(tb, classicPackage), handwritten: executable(tb, handwrittenPackage),
		at: executable(tb, atPackage), bare: executable(tb, barePackage), atTraced: buildTraced(tb, profiling)}
	if !profiling {
		return b
	}
	out, _ := exec.Command(b.at, "-h").CombinedOutput()
	if bytes.Contains(out, []byte("pprof-bind-address")) {
		b.atPprof = "flag"
		return b
	}
	src, err := exec.Command("go", "list", "-f", "{{.Dir}}", atPackage).Output()
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	file := filepath.Join(dir, "zz_bench_pprof.go")
	if err := os.WriteFile(file, []byte(pprofOverlay), 0o600); err != nil {
		tb.Fatal(err)
	}
	overlay, err := json.Marshal(map[string]map[string]string{
		"Replace": {filepath.Join(strings.TrimSpace(string(src)), "zz_bench_pprof.go"): file},
	})
	if err != nil {
		tb.Fatal(err)
	}
	ov := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(ov, overlay, 0o600); err != nil {
		tb.Fatal(err)
	}
	b.at = filepath.Join(dir, "at")
	goBuild(tb, b.at, atPackage, "-overlay", ov)
	b.atPprof = "overlay"
	return b
}

// buildAt returns the At operator's binary alone, as buildBinaries does.
func buildAt(tb testing.TB) binaries {
	tb.Helper()
	return binaries{at: executable(tb, atPackage)}
}

// executable returns the path of pkg's executable, built without -race.
func executable(tb testing.TB, pkg string) string {
	tb.Helper()
	path, err := gobuild.Executable(context.Background(), tb.TempDir(), pkg)
	if err != nil {
		tb.Fatal(err)
	}
	return path
}

func goBuild(tb testing.TB, out, pkg string, flags ...string) {
	tb.Helper()
	args := append([]string{"build", "-o", out}, flags...)
	cmd := exec.Command("go", append(args, pkg)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go %s %s: %v\n%s", strings.Join(args, " "), pkg, err, b)
	}
}

// leaseID is the name of the controller's leader election Lease.
func (k kind) leaseID() string {
	switch k {
	case classicAt:
		return "classic-at.bench.reconcilekit.dev"
	case handwrittenAt:
		return "handwritten-at.bench.reconcilekit.dev"
	case bareAt:
		return "bare-at.bench.reconcilekit.dev"
	}
	return "at.cnat.reconcilekit.dev"
}

// proc is one controller process.
type proc struct {
	kind    kind
	name    string
	cmd     *exec.Cmd
	log     string
	metrics string // host:port of /metrics
	pprof   string // host:port of /debug/pprof/, or ""

	done    chan struct{}
	waitErr error

	peakRSS  atomic.Uint64 // the largest VmRSS sampled
	peakAnon atomic.Uint64 // the largest RssAnon sampled
	hwm      atomic.Uint64 // the last VmHWM read
}

// procOptions say how to run a controller process.
type procOptions struct {
	kubeconfig string
	workers    int
	pprof      bool
	// args are flags added to the command line (the At's --shards and
	// lease timings).
	args []string
	// env is added to the process's environment (the soak's
	// GODEBUG=memprofilerate for finer heap profiles).
	env []string
}

// startProc runs the controller's binary: same flags for both, leader
// election on with the default timings, its Lease in leaseNamespace. It is
// stopped when the test ends, and its log shown if the test failed.
func startProc(tb testing.TB, bins binaries, k kind, name string, o procOptions) *proc {
	tb.Helper()
	addrs := freeAddrs(tb, 3) // metrics, probes, pprof
	p := &proc{kind: k, name: name, metrics: addrs[0], done: make(chan struct{})}
	bin := bins.at
	switch k {
	case classicAt:
		bin = bins.classic
	case handwrittenAt:
		bin = bins.handwritten
	case bareAt:
		bin = bins.bare
	case libraryTracedAt:
		bin = bins.atTraced
	}
	args := []string{"--kubeconfig", o.kubeconfig, "--workers", fmt.Sprint(o.workers),
		"--leader-elect=true", "--leader-election-namespace", leaseNamespace,
		"--metrics-bind-address", p.metrics, "--health-probe-bind-address", addrs[1]}
	if k == upstreamGuardAt {
		args = append(args, "--read-your-writes=controller-runtime")
	}
	if k == libraryNoDietAt {
		args = append(args, "--cache-diet=false")
	}
	args = append(args, o.args...)
	environ := slices.Clone(o.env)
	if k == libraryTracedAt {
		environ = append(environ, tracedEnv...)
	}
	if o.pprof {
		p.pprof = addrs[2]
		switch {
		case k == classicAt || k == handwrittenAt || k == bareAt || bins.atPprof == "flag":
			args = append(args, "--pprof-bind-address", p.pprof)
		case bins.atPprof == "overlay":
			environ = append(environ, pprofEnv+"="+p.pprof)
		default:
			p.pprof = ""
		}
	}
	p.log = filepath.Join(tb.TempDir(), name+".log")
	f, err := os.Create(p.log)
	if err != nil {
		tb.Fatal(err)
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append(os.Environ(), environ...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	if err := p.cmd.Start(); err != nil {
		f.Close()
		tb.Fatalf("starting %s: %v", name, err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		f.Close()
		close(p.done)
	}()
	go p.sample()
	tb.Cleanup(func() {
		p.stop(tb)
		if *keepLogs != "" {
			if b, err := os.ReadFile(p.log); err == nil {
				_ = os.MkdirAll(*keepLogs, 0o755)
				_ = os.WriteFile(filepath.Join(*keepLogs, strings.ReplaceAll(tb.Name(), "/", "_")+"."+name+".log"), b, 0o644)
			}
		}
		if tb.Failed() {
			b, _ := os.ReadFile(p.log)
			tb.Logf("log of %s (last 15 lines):\n%s", name, lastLines(string(b), 15))
		}
	})
	return p
}

// sample reads the process's VmRSS and VmHWM every 100 ms until it exits.
func (p *proc) sample() {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		if m, err := p.memory(); err == nil {
			if m.RSS > p.peakRSS.Load() {
				p.peakRSS.Store(m.RSS)
			}
			if m.Anon > p.peakAnon.Load() {
				p.peakAnon.Store(m.Anon)
			}
			p.hwm.Store(m.HWM)
		}
		select {
		case <-p.done:
			return
		case <-t.C:
		}
	}
}

// memory reads /proc/<pid>/status.
func (p *proc) memory() (bench.ProcMemory, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return bench.ProcMemory{}, err
	}
	defer f.Close()
	return bench.ParseProcStatus(f)
}

// peak returns the process's peak resident memory now (VmHWM, read while
// it runs) and the largest VmRSS sampled.
func (p *proc) peak(tb testing.TB) (hwm, sampled uint64) {
	tb.Helper()
	m, err := p.memory()
	if err != nil {
		tb.Fatalf("%s: %v", p.name, err)
	}
	return m.HWM, max(p.peakRSS.Load(), m.RSS)
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop stops the process gracefully (SIGTERM: the manager releases its
// Lease), and kills it if that takes more than 30 s. It may be called more
// than once.
func (p *proc) stop(tb testing.TB) {
	if p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		tb.Logf("%s did not stop within 30 s of SIGTERM: killed", p.name)
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// freeze stops the process with SIGSTOP for d, as a long GC pause, a
// paused VM or a starved node stops it, timers and all, and wakes it with
// SIGCONT. It returns when it sent each signal. A test that ends while the
// process is frozen wakes it first, so that it can be stopped.
func (p *proc) freeze(tb testing.TB, d time.Duration) (stopped, woken time.Time) {
	tb.Helper()
	wake := func() { _ = p.cmd.Process.Signal(syscall.SIGCONT) }
	tb.Cleanup(wake)
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		tb.Fatalf("freezing %s: %v", p.name, err)
	}
	stopped = time.Now()
	time.Sleep(d)
	if err := p.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		tb.Fatalf("waking %s: %v", p.name, err)
	}
	return stopped, time.Now()
}

// scrape sums the samples of a metric on the process's /metrics that carry
// the labels of match, and says how many there were.
func (p *proc) scrape(name string, match map[string]string) (float64, int, error) {
	hc := &http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Get("http://" + p.metrics + "/metrics")
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, 0, fmt.Errorf("%s /metrics: %s", p.name, resp.Status)
	}
	return bench.SumMetric(resp.Body, name, match)
}

// reconciles is controller-runtime's count of the process's reconciles
// (every result: success, requeue, error).
func (p *proc) reconciles(tb testing.TB) float64 {
	tb.Helper()
	v, _, err := p.scrape("controller_runtime_reconcile_total", map[string]string{"controller": p.kind.controllerName()})
	if err != nil {
		tb.Fatalf("%s: %v", p.name, err)
	}
	return v
}

// metric is the sum of a metric's samples carrying the labels of match.
func (p *proc) metric(tb testing.TB, name string, match map[string]string) float64 {
	tb.Helper()
	v, n, err := p.scrape(name, match)
	if err != nil || n == 0 {
		tb.Fatalf("%s: metric %s%v: %d samples, %v", p.name, name, match, n, err)
	}
	return v
}

// waitLeader waits until the process leads (its leader election metric
// says so) and its caches watch Ats and Pods (the audit log shows the
// watches, which a reflector starts once it has listed).
func (p *proc) waitLeader(tb testing.TB, tail *auditTail, timeout time.Duration) {
	tb.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		if p.exited() {
			return false, fmt.Errorf("%s exited: %v", p.name, p.waitErr)
		}
		v, n, err := p.scrape("leader_election_master_status", map[string]string{"name": p.kind.leaseID()})
		if err != nil || n == 0 || v != 1 {
			return false, nil
		}
		watching := map[string]bool{}
		for _, r := range tail.read(tb) {
			if r.Verb == "watch" {
				watching[r.Resource] = true
			}
		}
		return watching["ats"] && watching["pods"], nil
	})
	if err != nil {
		tb.Fatalf("waiting for %s to lead and watch: %v", p.name, err)
	}
}

// waitReconciles waits until the process has counted at least n
// reconciles.
func (p *proc) waitReconciles(tb testing.TB, n float64, timeout time.Duration) {
	tb.Helper()
	var got float64
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		if p.exited() {
			return false, fmt.Errorf("%s exited: %v", p.name, p.waitErr)
		}
		v, _, err := p.scrape("controller_runtime_reconcile_total", map[string]string{"controller": p.kind.controllerName()})
		if err != nil {
			return false, nil // not serving yet
		}
		got = v
		return got >= n, nil
	})
	if err != nil {
		tb.Fatalf("waiting for %s to reconcile %v times (%v so far): %v", p.name, n, got, err)
	}
}

// cpuProfile fetches a CPU profile of d from the process's pprof endpoint
// into path, in the background; the returned function waits for it.
func (p *proc) cpuProfile(tb testing.TB, d time.Duration, path string) func() {
	tb.Helper()
	if p.pprof == "" {
		tb.Logf("%s serves no pprof endpoint: no CPU profile", p.name)
		return func() {}
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		hc := &http.Client{Timeout: d + time.Minute}
		resp, err := hc.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", p.pprof, int(d.Seconds())))
		if err != nil {
			tb.Errorf("CPU profile of %s: %v", p.name, err)
			return
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			tb.Errorf("CPU profile of %s: %s %v", p.name, resp.Status, err)
			return
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			tb.Errorf("CPU profile of %s: %v", p.name, err)
		}
	})
	return wg.Wait
}

// heapProfile writes the process's heap profile (after a garbage
// collection) to path.
func (p *proc) heapProfile(tb testing.TB, path string) {
	tb.Helper()
	if p.pprof == "" {
		return
	}
	hc := &http.Client{Timeout: time.Minute}
	resp, err := hc.Get("http://" + p.pprof + "/debug/pprof/heap?gc=1")
	if err != nil {
		tb.Errorf("heap profile of %s: %v", p.name, err)
		return
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		tb.Errorf("heap profile of %s: %s %v", p.name, resp.Status, err)
		return
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		tb.Errorf("heap profile of %s: %v", p.name, err)
	}
}

// handedOut are the ports freeAddrs has returned in this process: the
// scenarios that run in parallel start processes at the same time, and a
// port one of them was given must not go to another before its process
// binds it.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// freeAddrs returns n distinct localhost addresses whose ports were free a
// moment ago and were never returned before in this process: all n are held
// open together, since the kernel may hand out a port again as soon as it
// is closed (two calls one after the other once gave a process the same
// port for its metrics and its probes).
func freeAddrs(tb testing.TB, n int) []string {
	tb.Helper()
	handedOut.Lock()
	defer handedOut.Unlock()
	addrs := make([]string, 0, n)
	for len(addrs) < n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		defer l.Close() // held open until all n are chosen, the skipped too
		port := l.Addr().(*net.TCPAddr).Port
		if handedOut.ports[port] {
			continue
		}
		handedOut.ports[port] = true
		addrs = append(addrs, l.Addr().String())
	}
	return addrs
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
