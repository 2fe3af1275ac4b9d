package apicheck_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// update rewrites the table of docs/weight.md with the measured numbers:
// go test ./internal/apicheck -run TestDependencyWeight -update.
var update = flag.Bool("update", false, "rewrite the table of docs/weight.md with the measured dependency counts")

// baseline is the package every library package builds on: what it needs
// is already paid for by anyone who writes a controller-runtime reconciler.
const baseline = "sigs.k8s.io/controller-runtime/pkg/reconcile"

// weightDoc is the page holding the committed table.
const weightDoc = "docs/weight.md"

// weight is one package's measure: non-standard-library packages in its
// build (itself excluded), and how many of them controller-runtime's
// pkg/reconcile does not already need.
type weight struct {
	deps, beyond int
	extra        []string // the packages beyond the baseline
}

// measure computes the weight of every library package, and of the
// baseline.
func measure(t *testing.T) map[string]weight {
	t.Helper()
	args := []string{baseline}
	for _, l := range libraries {
		args = append(args, "./"+l)
	}
	std := map[string]bool{}
	for _, line := range goList(t, append([]string{"-deps", "-f", "{{.ImportPath}} {{.Standard}}"}, args...)...) {
		path, isStd, _ := strings.Cut(line, " ")
		std[path] = isStd == "true"
	}
	deps := map[string][]string{}
	for _, line := range goList(t, append([]string{"-f", "{{.ImportPath}}{{range .Deps}} {{.}}{{end}}"}, args...)...) {
		fields := strings.Fields(line)
		for _, d := range fields[1:] {
			if !std[d] {
				deps[fields[0]] = append(deps[fields[0]], d)
			}
		}
	}
	base := map[string]bool{baseline: true}
	for _, d := range deps[baseline] {
		base[d] = true
	}
	out := map[string]weight{}
	for _, l := range libraries {
		w := weight{deps: len(deps[module+"/"+l])}
		for _, d := range deps[module+"/"+l] {
			if !base[d] {
				w.extra = append(w.extra, d)
			}
		}
		w.beyond = len(w.extra)
		out[l] = w
	}
	out[baseline] = weight{deps: len(deps[baseline])}
	return out
}

// weightRow is a row of the table: | `package` | deps | beyond |.
var weightRow = regexp.MustCompile("^\\| `([a-z/]+)` \\| (\\d+) \\| (\\d+) \\|")

// committed reads the table of docs/weight.md.
func committed(t *testing.T, doc string) map[string]weight {
	t.Helper()
	table := map[string]weight{}
	for line := range strings.Lines(doc) {
		m := weightRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		deps, _ := strconv.Atoi(m[2])
		beyond, _ := strconv.Atoi(m[3])
		if _, dup := table[m[1]]; dup {
			t.Errorf("%s names %s twice", weightDoc, m[1])
		}
		table[m[1]] = weight{deps: deps, beyond: beyond}
	}
	return table
}

// TestDependencyWeight measures every library package's dependencies
// (`go list -deps`, standard library and the package itself excluded, for
// linux/amd64) and fails when one has more than the table of docs/weight.md
// allows, in all or beyond what controller-runtime's pkg/reconcile already
// needs, or when the table and the list of library packages disagree.
func TestDependencyWeight(t *testing.T) {
	got := measure(t)
	doc := readDoc(t, weightDoc)
	if *update {
		rewriteWeights(t, doc, got)
		return
	}
	table := committed(t, doc)
	for _, l := range libraries {
		want, ok := table[l]
		have := got[l]
		switch {
		case !ok:
			t.Errorf("%s has no row for %s (measured %d, %d beyond %s): add one", weightDoc, l, have.deps, have.beyond, baseline)
		case have.deps > want.deps || have.beyond > want.beyond:
			t.Errorf("%s grew: %d dependencies (table: %d), %d beyond %s (table: %d); beyond it: %s\n"+
				"If the growth is justified, say why in the commit and update the table (see %s).",
				l, have.deps, want.deps, have.beyond, baseline, want.beyond, strings.Join(have.extra, ", "), weightDoc)
		case have.deps < want.deps || have.beyond < want.beyond:
			t.Logf("%s shrank to %d dependencies (table: %d), %d beyond %s (table: %d): lower the table with -update to keep the gain",
				l, have.deps, want.deps, have.beyond, baseline, want.beyond)
		}
		delete(table, l)
	}
	for name := range table {
		t.Errorf("%s has a row for %s, which is not a library package", weightDoc, name)
	}
}

// rewriteWeights replaces the rows of the table in docs/weight.md with the
// measured numbers, keeping every other line.
func rewriteWeights(t *testing.T, doc string, got map[string]weight) {
	t.Helper()
	var b strings.Builder
	wrote := false
	for line := range strings.Lines(doc) {
		if !weightRow.MatchString(line) {
			b.WriteString(line)
			continue
		}
		if wrote {
			continue
		}
		wrote = true
		for _, l := range libraries {
			fmt.Fprintf(&b, "| `%s` | %d | %d |\n", l, got[l].deps, got[l].beyond)
		}
	}
	if !wrote {
		t.Fatalf("%s has no table rows to rewrite", weightDoc)
	}
	if err := os.WriteFile(filepath.Join(root, weightDoc), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("rewrote the table of %s (%s: %d)", weightDoc, baseline, got[baseline].deps)
}

// TestErrorsAndRequeueNeedNothingBeyondReconcile proves the two packages
// at the bottom of the import table need no package that
// controller-runtime's pkg/reconcile does not already need, besides each
// other: importing them into a reconciler costs nothing it does not
// already pay (in particular, not controller-runtime's root package, its
// manager and its webhook server).
func TestErrorsAndRequeueNeedNothingBeyondReconcile(t *testing.T) {
	got := measure(t)
	for _, l := range []string{"errors", "requeue"} {
		extra := slices.DeleteFunc(slices.Clone(got[l].extra), func(d string) bool {
			// internal/live imports only the standard library: the
			// registry of requeue's gauge of what its Policies hold.
			return d == module+"/errors" || d == module+"/requeue" || d == module+"/internal/live"
		})
		if len(extra) > 0 {
			t.Errorf("%s needs %s, beyond %s", l, strings.Join(extra, ", "), baseline)
		}
	}
}
