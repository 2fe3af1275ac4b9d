// Command envtest-assets obtains the kube-apiserver, etcd and kubectl binaries
// that controller-runtime's envtest runs, from nothing but the Go module
// proxy, and prints the directory that holds them: the value for
// KUBEBUILDER_ASSETS.
//
//	export KUBEBUILDER_ASSETS=$(go run github.com/reconcilekit/reconcilekit/cmd/envtest-assets@latest)
//	go test ./...
//
// Inside a module that requires reconcilekit, drop the @latest to use the
// version in its go.mod. The first run builds the binaries and takes time:
// about 10 minutes on 2 cores for kube-apiserver, about 1.5 minutes for etcd,
// and a few minutes more for kubectl. Later runs print the cached directory
// at once.
//
// setup-envtest downloads prebuilt binaries from a bucket that many CI
// systems cannot reach; the Go module proxy is reachable almost everywhere.
// k8s.io/kubernetes cannot be "go install"ed, because its go.mod replaces its
// staging modules with ./staging/... directories that the module zip does not
// make usable. So for each binary this command writes a small wrapper module
// that requires the upstream module and turns every local-path replace of a
// required module into a replace by the published version, then runs
// "go build" in it with CGO_ENABLED=0.
//
// The wrapper modules live in the cache directory, never in your go.mod: no
// package of k8s.io/kubernetes or of etcd's server is compiled into
// reconcilekit or into your tests.
//
// Behaviour:
//
//   - If KUBEBUILDER_ASSETS is set and holds kube-apiserver and etcd (from
//     setup-envtest, say), it is printed and nothing is built.
//   - Otherwise binaries are cached under
//     <user cache dir>/reconcilekit/envtest/k8s-<version>_etcd-<version>
//     (override with -dir or RECONCILEKIT_ENVTEST_DIR) and reused when
//     present; only a missing binary is built.
//   - Versions are pinned: -kube and -etcd, or RECONCILEKIT_KUBE_VERSION and
//     RECONCILEKIT_ETCD_VERSION; the defaults are the versions reconcilekit
//     is tested with.
//   - Every module is resolved before anything is built, so an unknown
//     version or an unreachable proxy fails in seconds with one error line
//     and a non-zero exit status.
//   - A binary is built to a temporary name and renamed into place only when
//     the build succeeded, so a half-built binary is never used.
//   - Progress goes to stderr; the asset directory is the only line on stdout.
//
// Usage:
//
//	envtest-assets [-kube v1.37.1] [-etcd v3.6.16] [-dir DIR] [-controller-manager] [-kwok v0.8.0]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/reconcilekit/reconcilekit/internal/envtestassets"
)

func main() {
	log := func(format string, args ...any) { fmt.Fprintf(os.Stderr, "envtest-assets: "+format+"\n", args...) }
	defKube, defEtcd := envtestassets.Versions()
	kube := flag.String("kube", defKube, "k8s.io/kubernetes version to build kube-apiserver from (env RECONCILEKIT_KUBE_VERSION)")
	etcd := flag.String("etcd", defEtcd, "go.etcd.io/etcd/server/v3 version to build etcd from (env RECONCILEKIT_ETCD_VERSION)")
	dir := flag.String("dir", "", "asset directory (default: RECONCILEKIT_ENVTEST_DIR, else a per-version directory in the user cache)")
	kcm := flag.Bool("controller-manager", false, "also build kube-controller-manager (real workload controllers and garbage collection in tests)")
	kwok := flag.String("kwok", "", "also build kwok at this version (e.g. v0.8.0), the Pod lifecycle simulator of the At demo and of testenv.Options.Kwok")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	if existing := os.Getenv("KUBEBUILDER_ASSETS"); existing != "" {
		need := []string{"kube-apiserver", "etcd"}
		if *kcm {
			need = append(need, "kube-controller-manager")
		}
		if *kwok != "" {
			need = append(need, "kwok")
		}
		if envtestassets.Complete(existing, need...) {
			log("using KUBEBUILDER_ASSETS=%s; nothing to build", existing)
			fmt.Println(existing)
			return
		}
		log("KUBEBUILDER_ASSETS=%s lacks one of %v; building our own", existing, need)
	}

	out, err := run(ctx, *kube, *etcd, *dir, *kcm, *kwok, log)
	if err != nil {
		log("error: %v", err)
		os.Exit(1)
	}
	fmt.Println(out)
}

var (
	kubeVersionRE = regexp.MustCompile(`^v1\.(\d+)\.(\d+)$`)
	etcdVersionRE = regexp.MustCompile(`^v3\.\d+\.\d+$`)
	semverRE      = regexp.MustCompile(`^v\d+\.\d+\.\d+$`)
)

func run(ctx context.Context, kube, etcd, dir string, kcm bool, kwok string, log func(string, ...any)) (string, error) {
	m := kubeVersionRE.FindStringSubmatch(kube)
	if m == nil {
		return "", fmt.Errorf("kube version %q is not of the form v1.MINOR.PATCH", kube)
	}
	if !etcdVersionRE.MatchString(etcd) {
		return "", fmt.Errorf("etcd version %q is not of the form v3.MINOR.PATCH", etcd)
	}
	if kwok != "" && !semverRE.MatchString(kwok) {
		return "", fmt.Errorf("kwok version %q is not of the form vMAJOR.MINOR.PATCH", kwok)
	}
	stagingVersion := "v0." + m[1] + "." + m[2]

	cache := dir
	if cache == "" {
		d, err := envtestassets.Dir(kube, etcd)
		if err != nil {
			return "", fmt.Errorf("no user cache directory (set -dir or RECONCILEKIT_ENVTEST_DIR): %w", err)
		}
		cache = d
	}

	kubeMod := module{path: "k8s.io/kubernetes", version: kube, localVersion: stagingVersion}
	ldflags := kubeLDFlags(kube, m[1])
	targets := []target{
		{name: "etcd", mod: module{path: "go.etcd.io/etcd/server/v3", version: etcd}, pkg: "go.etcd.io/etcd/server/v3",
			ldflags: "-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=reconcilekit",
			hint:    "about 1.5 minutes on 2 cores"},
		{name: "kube-apiserver", mod: kubeMod, pkg: "k8s.io/kubernetes/cmd/kube-apiserver", ldflags: ldflags,
			hint: "a cold build takes about 10 minutes on 2 cores"},
		// envtest's standard asset set includes kubectl; the At example's
		// tests use it as a real client (kubectl wait).
		{name: "kubectl", mod: kubeMod, pkg: "k8s.io/kubernetes/cmd/kubectl", ldflags: ldflags,
			hint: "a few minutes after kube-apiserver"},
	}
	if kcm {
		targets = append(targets, target{name: "kube-controller-manager", mod: kubeMod,
			pkg: "k8s.io/kubernetes/cmd/kube-controller-manager", ldflags: ldflags})
	}
	if kwok != "" {
		targets = append(targets, target{name: "kwok", mod: module{path: "sigs.k8s.io/kwok", version: kwok},
			pkg: "sigs.k8s.io/kwok/cmd/kwok", ldflags: "-s -w",
			hint: "about 2 minutes on 2 cores"})
	}
	var missing, cached []target
	for _, t := range targets {
		if envtestassets.Complete(cache, t.name) {
			cached = append(cached, t)
			continue
		}
		missing = append(missing, t)
	}
	// Resolve every module first, so a bad version or an unreachable proxy
	// fails in seconds, with its error as the only line, before minutes of
	// building something else.
	for _, t := range missing {
		if _, err := downloadGoMod(ctx, t.mod); err != nil {
			return "", err
		}
	}
	for _, t := range cached {
		log("%s: cached at %s", t.name, filepath.Join(cache, t.name))
	}
	if len(missing) > 0 {
		if err := os.MkdirAll(cache, 0o755); err != nil {
			return "", fmt.Errorf("asset directory: %w", err)
		}
	}
	for _, t := range missing {
		if err := build(ctx, cache, t, log); err != nil {
			return "", err
		}
	}
	return cache, nil
}

func kubeLDFlags(version, minor string) string {
	pkg := "k8s.io/component-base/version"
	flags := []string{"-s", "-w",
		"-X", pkg + ".gitVersion=" + version,
		"-X", pkg + ".gitMajor=1",
		"-X", pkg + ".gitMinor=" + minor,
		"-X", pkg + ".gitTreeState=clean",
		"-X", pkg + ".buildDate=1970-01-01T00:00:00Z",
	}
	return strings.Join(flags, " ")
}

type module struct {
	path    string
	version string
	// localVersion is the version used for required modules that the
	// upstream go.mod lists at v0.0.0 and replaces with a local directory
	// (kubernetes' staging modules). Empty means: use the required version.
	localVersion string
}

type target struct {
	name    string
	mod     module
	pkg     string
	ldflags string
	hint    string
}

// goEnv is the environment for every go command this program runs: the
// wrapper modules are never part of a workspace, and cgo is off so the
// binaries are static.
func goEnv() []string {
	return append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0", "GOFLAGS=-mod=mod -buildvcs=false")
}

func build(ctx context.Context, cache string, t target, log func(string, ...any)) error {
	started := time.Now()
	log("%s: fetching %s@%s from the module proxy", t.name, t.mod.path, t.mod.version)
	gomod, err := downloadGoMod(ctx, t.mod)
	if err != nil {
		return err
	}
	parsed, err := parseGoMod(gomod)
	if err != nil {
		return fmt.Errorf("%s@%s: reading its go.mod: %w", t.mod.path, t.mod.version, err)
	}
	wrapper := wrapperGoMod(t.mod, parsed)

	wdir := filepath.Join(cache, "src", strings.ReplaceAll(t.mod.path, "/", "_")+"@"+t.mod.version)
	if err := os.MkdirAll(wdir, 0o755); err != nil {
		return fmt.Errorf("%s: wrapper module: %w", t.name, err)
	}
	if err := os.WriteFile(filepath.Join(wdir, "go.mod"), []byte(wrapper), 0o644); err != nil {
		return fmt.Errorf("%s: wrapper module: %w", t.name, err)
	}

	tmp := filepath.Join(cache, "."+t.name+".partial")
	_ = os.Remove(tmp)
	defer os.Remove(tmp)

	msg := fmt.Sprintf("%s: building %s", t.name, t.pkg)
	if t.hint != "" {
		msg += " (" + t.hint + ")"
	}
	log("%s", msg)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", t.ldflags, "-o", tmp, t.pkg)
	cmd.Dir = wdir
	cmd.Env = goEnv()
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output

	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(30 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				log("%s: still building (%s elapsed)", t.name, time.Since(started).Round(time.Second))
			}
		}
	}()
	err = cmd.Run()
	close(done)
	if err != nil {
		return fmt.Errorf("%s: go build %s failed: %s", t.name, t.pkg, firstLines(output.String(), 5))
	}
	if err := os.Rename(tmp, filepath.Join(cache, t.name)); err != nil {
		return fmt.Errorf("%s: %w", t.name, err)
	}
	log("%s: built in %s", t.name, time.Since(started).Round(time.Second))
	return nil
}

// downloadGoMod asks the module proxy (through "go mod download") for the
// go.mod of m and returns its path in the module cache.
func downloadGoMod(ctx context.Context, m module) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", m.path+"@"+m.version)
	cmd.Env = goEnv()
	cmd.Dir = os.TempDir()
	out, runErr := cmd.Output()
	var info struct {
		GoMod string
		Error string
	}
	if err := json.Unmarshal(out, &info); err != nil || info.Error != "" || runErr != nil {
		reason := info.Error
		if reason == "" && runErr != nil {
			reason = runErr.Error()
			var ee *exec.ExitError
			if errors.As(runErr, &ee) && len(ee.Stderr) > 0 {
				reason = firstLines(string(ee.Stderr), 1)
			}
		}
		return "", fmt.Errorf("cannot download %s@%s (unknown version, or the module proxy %s is unreachable): %s",
			m.path, m.version, goProxy(), strings.Join(strings.Fields(reason), " "))
	}
	return info.GoMod, nil
}

// goModFile is the subset of "go mod edit -json" output this program reads.
type goModFile struct {
	Go      string
	Require []struct {
		Path    string
		Version string
	}
	Replace []struct {
		Old struct{ Path, Version string }
		New struct{ Path, Version string }
	}
}

func parseGoMod(path string) (*goModFile, error) {
	cmd := exec.Command("go", "mod", "edit", "-json", path)
	cmd.Env = goEnv()
	out, err := cmd.Output()
	if err != nil {
		return nil, err
	}
	var f goModFile
	if err := json.Unmarshal(out, &f); err != nil {
		return nil, err
	}
	return &f, nil
}

// wrapperGoMod returns the go.mod of a module that requires m and, for every
// module that m's own go.mod both requires and replaces with a local
// directory, replaces it with its published version instead: the required
// version, or m.localVersion when the requirement is the placeholder v0.0.0.
// Replaced-but-not-required modules (kubernetes' sample-controller, etcd's
// FORBIDDEN_DEPENDENCY guards) are left out. Replaces by version are kept.
func wrapperGoMod(m module, f *goModFile) string {
	required := map[string]string{}
	for _, r := range f.Require {
		required[r.Path] = r.Version
	}
	replaces := map[string]string{}
	for _, r := range f.Replace {
		reqVersion, ok := required[r.Old.Path]
		if !ok {
			continue
		}
		switch {
		case strings.HasPrefix(r.New.Path, "./") || strings.HasPrefix(r.New.Path, "../"):
			v := reqVersion
			if v == "v0.0.0" && m.localVersion != "" {
				v = m.localVersion
			}
			replaces[r.Old.Path] = r.Old.Path + " " + v
		case r.New.Version != "":
			replaces[r.Old.Path] = r.New.Path + " " + r.New.Version
		}
	}
	keys := make([]string, 0, len(replaces))
	for k := range replaces {
		keys = append(keys, k)
	}
	sort.Strings(keys)

	var b strings.Builder
	fmt.Fprintf(&b, "// Generated by reconcilekit's envtest-assets. Do not edit.\nmodule reconcilekit.local/envtest-wrapper\n\n")
	if f.Go != "" {
		fmt.Fprintf(&b, "go %s\n\n", f.Go)
	}
	fmt.Fprintf(&b, "require %s %s\n", m.path, m.version)
	if len(keys) > 0 {
		b.WriteString("\nreplace (\n")
		for _, k := range keys {
			fmt.Fprintf(&b, "\t%s => %s\n", k, replaces[k])
		}
		b.WriteString(")\n")
	}
	return b.String()
}

func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = append(lines[:n], fmt.Sprintf("... (%d more lines)", len(lines)-n))
	}
	return strings.Join(lines, " | ")
}

func goProxy() string {
	out, err := exec.Command("go", "env", "GOPROXY").Output()
	if err != nil || len(bytes.TrimSpace(out)) == 0 {
		return "(GOPROXY unknown)"
	}
	return string(bytes.TrimSpace(out))
}
