package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/reconcilekit/reconcilekit/examples/at/internal/controller"
)

func TestParseFlagsDefaults(t *testing.T) {
	got, err := parseFlags(nil, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	want := summary{
		metricsAddr: "127.0.0.1:8080", probeAddr: "127.0.0.1:8081",
		leaderElect: true, leaseDuration: 15 * time.Second, renewDeadline: 10 * time.Second, retryPeriod: 2 * time.Second,
		workers: controller.DefaultWorkers, readYourWrites: "freshness", cacheDiet: true,
	}
	if diff := cmp.Diff(want, summarize(got), cmp.AllowUnexported(summary{})); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
}

// summary is what the tests compare of options (zap.Options holds funcs).
type summary struct {
	kubeconfig, metricsAddr, probeAddr, namespace string
	leaderElect                                   bool
	leaseDuration, renewDeadline, retryPeriod     time.Duration
	workers                                       int
	readYourWrites                                string
	shards                                        int
	cacheDiet                                     bool
}

func summarize(o *options) summary {
	return summary{o.kubeconfig, o.metricsAddr, o.probeAddr, o.leaderElectionNamespace,
		o.leaderElect, o.leaseDuration, o.renewDeadline, o.retryPeriod, o.workers, o.readYourWrites, o.shards, o.cacheDiet}
}

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    func(*summary) // changes from the defaults
		wantErr []string       // substrings of the error, one per problem
	}{
		{
			name: "everything set",
			args: []string{"--kubeconfig", "/tmp/kc", "--metrics-bind-address=0", "--health-probe-bind-address=:9440",
				"--leader-elect=false", "--leader-election-namespace=ops", "--workers=16",
				"--leader-elect-lease-duration=8s", "--leader-elect-renew-deadline=6s", "--leader-elect-retry-period=1s",
				"--read-your-writes=controller-runtime"},
			want: func(s *summary) {
				*s = summary{kubeconfig: "/tmp/kc", metricsAddr: "0", probeAddr: ":9440", namespace: "ops",
					leaderElect: false, leaseDuration: 8 * time.Second, renewDeadline: 6 * time.Second, retryPeriod: time.Second, workers: 16,
					readYourWrites: "controller-runtime", cacheDiet: true}
			},
		},
		{name: "probes disabled", args: []string{"--health-probe-bind-address=0"}, want: func(s *summary) { s.probeAddr = "0" }},
		{name: "ipv6 metrics", args: []string{"--metrics-bind-address=[::1]:8080"}, want: func(s *summary) { s.metricsAddr = "[::1]:8080" }},
		{name: "controller-runtime's guard", args: []string{"--read-your-writes=controller-runtime"},
			want: func(s *summary) { s.readYourWrites = "controller-runtime" }},
		{name: "sharded", args: []string{"--shards=8"}, want: func(s *summary) { s.shards = 8 }},
		{name: "every object cached whole", args: []string{"--cache-diet=false"}, want: func(s *summary) { s.cacheDiet = false }},
		{name: "too many shards", args: []string{"--shards=5000"}, wantErr: []string{"--shards must be between 0 and 1024, got 5000"}},
		{name: "an unknown guard", args: []string{"--read-your-writes=both"},
			wantErr: []string{`--read-your-writes "both": want "freshness" or "controller-runtime"`}},
		{name: "zero workers", args: []string{"--workers=0"}, wantErr: []string{"--workers must be at least 1, got 0"}},
		{name: "negative workers", args: []string{"--workers=-3"}, wantErr: []string{"--workers must be at least 1, got -3"}},
		{name: "workers not a number", args: []string{"--workers=many"}, wantErr: []string{`invalid value "many" for flag -workers`}},
		{name: "address without port", args: []string{"--metrics-bind-address=localhost"}, wantErr: []string{`--metrics-bind-address "localhost"`}},
		{name: "address with empty port", args: []string{"--health-probe-bind-address=localhost:"}, wantErr: []string{`--health-probe-bind-address "localhost:": no port`}},
		{
			name:    "several problems at once",
			args:    []string{"--workers=0", "--health-probe-bind-address=nope", "--leader-election-namespace=Not_A_Namespace"},
			wantErr: []string{"--workers", "--health-probe-bind-address", `--leader-election-namespace "Not_A_Namespace" is not a namespace name`},
		},
		{name: "renew deadline not under lease duration", args: []string{"--leader-elect-lease-duration=10s"},
			wantErr: []string{"--leader-elect-lease-duration (10s) must be more than --leader-elect-renew-deadline (10s)"}},
		{name: "retry period too long for the renew deadline", args: []string{"--leader-elect-retry-period=9s"},
			wantErr: []string{"--leader-elect-renew-deadline (10s) must be more than 1.2 × --leader-elect-retry-period (9s)"}},
		{name: "retry period zero", args: []string{"--leader-elect-retry-period=0"},
			wantErr: []string{"--leader-elect-retry-period must be positive"}},
		{name: "lease duration not whole seconds", args: []string{"--leader-elect-lease-duration=15500ms"},
			wantErr: []string{"whole seconds"}},
		{name: "unknown flag", args: []string{"--leader-elect-namespace=x"}, wantErr: []string{"flag provided but not defined: -leader-elect-namespace"}},
		{name: "positional argument", args: []string{"--workers=2", "run"}, wantErr: []string{`unexpected arguments ["run"]`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseFlags(tt.args, &bytes.Buffer{})
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("parseFlags(%q) = %+v, want an error", tt.args, summarize(got))
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not say %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("parseFlags(%q): %v", tt.args, err)
			}
			want, _ := parseFlags(nil, &bytes.Buffer{})
			ws := summarize(want)
			tt.want(&ws)
			if diff := cmp.Diff(ws, summarize(got), cmp.AllowUnexported(summary{})); diff != "" {
				t.Errorf("parseFlags(%q) (-want +got):\n%s", tt.args, diff)
			}
		})
	}
}

func TestParseFlagsHelpListsEveryFlag(t *testing.T) {
	var out bytes.Buffer
	_, err := parseFlags([]string{"-h"}, &out)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("parseFlags(-h) error = %v, want flag.ErrHelp", err)
	}
	for _, name := range []string{"kubeconfig", "leader-elect", "leader-election-namespace", "workers", "read-your-writes", "shards", "cache-diet",
		"metrics-bind-address", "health-probe-bind-address", "leader-elect-lease-duration", "zap-log-level"} {
		if !strings.Contains(out.String(), "-"+name+" ") && !strings.Contains(out.String(), "-"+name+"\n") {
			t.Errorf("help does not list -%s:\n%s", name, out.String())
		}
	}
	// An error is not followed by the usage: the caller prints it once.
	out.Reset()
	if _, err := parseFlags([]string{"--workers=x"}, &out); err == nil || out.Len() > 0 {
		t.Errorf("bad flag: err=%v, output %q; want an error and no output", err, out.String())
	}
}

func TestDefaultLeaderElectionNamespace(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	withNamespace := write("with-ns", kubeconfig("team-a"))
	withoutNamespace := write("without-ns", kubeconfig(""))
	podNamespace := write("namespace", "at-system\n")
	home := t.TempDir() // no .kube/config

	tests := []struct {
		name          string
		flag          string // --kubeconfig
		env           string // $KUBECONFIG
		inCluster     bool   // KUBERNETES_SERVICE_HOST set
		namespaceFile string
		want          string
		wantErr       string
	}{
		{name: "context namespace", flag: withNamespace, want: "team-a"},
		{name: "context without namespace", flag: withoutNamespace, want: "default"},
		{name: "$KUBECONFIG", env: withNamespace, want: "team-a"},
		{name: "the flag wins over $KUBECONFIG", flag: withoutNamespace, env: withNamespace, want: "default"},
		{name: "in a cluster, the Pod's namespace", inCluster: true, namespaceFile: podNamespace, want: "at-system"},
		{name: "a kubeconfig wins over the cluster", flag: withNamespace, inCluster: true, namespaceFile: podNamespace, want: "team-a"},
		{name: "no kubeconfig, not in a cluster", namespaceFile: podNamespace, wantErr: "reading the kubeconfig"},
		{name: "missing kubeconfig", flag: filepath.Join(dir, "nope"), wantErr: "reading the kubeconfig"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("HOME", home)
			t.Setenv("KUBECONFIG", tt.env)
			host := ""
			if tt.inCluster {
				host = "10.0.0.1"
			}
			t.Setenv("KUBERNETES_SERVICE_HOST", host)
			t.Setenv("KUBERNETES_SERVICE_PORT", "")
			nsFile := tt.namespaceFile
			if nsFile == "" {
				nsFile = filepath.Join(dir, "no-such-file")
			}
			got, err := defaultLeaderElectionNamespace(tt.flag, nsFile)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %q, %v; want an error saying %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func kubeconfig(namespace string) string {
	return `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://127.0.0.1:6443
users:
- name: u
  user:
    token: t
contexts:
- name: ctx
  context:
    cluster: c
    user: u
    namespace: "` + namespace + `"
current-context: ctx
`
}

// TestBinaryLetsTheLinkerDropUnusedMethods proves that the At binary, which
// uses every reconcilekit package but not compare.CmpOptions, calls no
// function that looks methods up by reflection. One such call anywhere in a
// program makes the Go linker keep every exported method of every type it
// links: go-cmp's made the At binary 62 MB instead of 48 MB and its resident
// memory 5 MiB larger. The control program calls compare.CmpOptions and
// must show such a call, or this test could not fail.
func TestBinaryLetsTheLinkerDropUnusedMethods(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to link the binary: %v", err)
	}
	// reflective lists the functions the linker found reachable and marked
	// <ReflectMethod> while linking pkg.
	reflective := func(pkg string) []string {
		t.Helper()
		cmd := exec.Command(goTool, "build", "-ldflags=-dumpdep", "-o", filepath.Join(t.TempDir(), "bin"), pkg)
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var found, other []string
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
		for sc.Scan() {
			from, to, edge := strings.Cut(sc.Text(), " -> ")
			if !edge {
				other = append(other, sc.Text()) // the compiler's or linker's own messages
				continue
			}
			// The linker prints each symbol once, on the right, when it
			// first finds it reachable, with its markers (several run
			// together): "A -> B <UsedInIface><ReflectMethod>".
			for _, side := range []string{from, to} {
				name, markers, _ := strings.Cut(side, " <")
				if strings.Contains(markers, "ReflectMethod>") && !slices.Contains(found, name) {
					found = append(found, name)
				}
			}
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, strings.Join(other, "\n"))
		}
		return found
	}
	if got := reflective("."); len(got) > 0 {
		t.Errorf("the At binary calls functions that look methods up by reflection, so the linker keeps every exported method: %s", strings.Join(got, ", "))
	}
	if got := reflective("./testdata/cmpoptions"); len(got) == 0 {
		t.Error("the control program, which calls compare.CmpOptions, shows no reflective method lookup: the check above cannot fail")
	}
}
