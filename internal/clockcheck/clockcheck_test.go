// Package clockcheck holds the test that keeps the library on one clock:
// no library file reads the wall clock through time.Now, time.Since or
// time.Until. Time comes from a k8s.io/utils/clock clock handed over as a
// Clock field or a WithClock option, the real one (clock.RealClock) when
// none is given, so that a test can control every time the library reads.
package clockcheck_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// root is the module's root, relative to this package.
const root = "../.."

// banned are the functions of package time that read the wall clock.
var banned = []string{"Now", "Since", "Until"}

// allowed are the library files that still read the wall clock, each
// while the helper named beside it removes the calls (#34). An entry whose
// file no longer calls any fails the test: delete it then.
var allowed = map[string]string{}

// mustFind are library packages the walk must find, so that a change in
// the layout cannot make the test check nothing.
var mustFind = []string{
	"errors", "requeue", "status", "finalizer", "ownership", "drift", "freshness", "shard",
	"reconcile", "reconcile/reconciletest", "reconcile/reconciletest/testenv",
}

// libraryFiles returns the non-test Go files of the module's library
// packages, relative to root and slash-separated: every package of the
// module except cmd/, examples/, anything under an internal/ or testdata/
// directory, and nested modules.
func libraryFiles(t *testing.T) map[string][]string {
	t.Helper()
	byDir := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			name := d.Name()
			switch {
			case rel == ".":
				return nil
			case strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_"),
				name == "internal", name == "testdata", rel == "cmd", rel == "examples":
				return fs.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return fs.SkipDir // another module
			}
			return nil
		}
		if strings.HasSuffix(rel, ".go") && !strings.HasSuffix(rel, "_test.go") {
			dir := filepath.ToSlash(filepath.Dir(rel))
			byDir[dir] = append(byDir[dir], rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return byDir
}

// wallClockCalls returns, for the file src, the position and name of every
// reference to a banned function of package time ("time.Now" at
// "file.go:12:9"), under whatever name the file imports time: calls and
// method values alike (f := time.Now reads the clock later).
func wallClockCalls(fset *token.FileSet, name string, src any) ([]string, error) {
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var timeNames []string
	for _, imp := range f.Imports {
		if path, _ := strconv.Unquote(imp.Path.Value); path != "time" {
			continue
		}
		switch {
		case imp.Name == nil:
			timeNames = append(timeNames, "time")
		case imp.Name.Name == ".":
			return []string{fset.Position(imp.Pos()).String() + ": package time imported with '.'"}, nil
		case imp.Name.Name != "_":
			timeNames = append(timeNames, imp.Name.Name)
		}
	}
	if len(timeNames) == 0 {
		return nil, nil
	}
	var found []string
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		x, ok := sel.X.(*ast.Ident)
		if ok && slices.Contains(timeNames, x.Name) && slices.Contains(banned, sel.Sel.Name) {
			found = append(found, fset.Position(sel.Pos()).String()+": time."+sel.Sel.Name)
		}
		return true
	})
	return found, nil
}

// TestNoWallClockInLibraryCode fails on a call of time.Now, time.Since or
// time.Until in a non-test file of a library package, except in the files
// allowed lists, and on an entry of allowed that is no longer needed.
func TestNoWallClockInLibraryCode(t *testing.T) {
	byDir := libraryFiles(t)
	for _, dir := range mustFind {
		if len(byDir[dir]) == 0 {
			t.Errorf("no Go file found in %s: the walk of the library packages is broken", dir)
		}
	}
	fset := token.NewFileSet()
	needed := map[string]bool{}
	for _, files := range byDir {
		for _, rel := range files {
			found, err := wallClockCalls(fset, filepath.Join(root, filepath.FromSlash(rel)), nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(found) == 0 {
				continue
			}
			if _, ok := allowed[rel]; ok {
				needed[rel] = true
				continue
			}
			for _, f := range found {
				t.Errorf("%s reads the wall clock: take the time from a k8s.io/utils/clock clock (a Clock field, a WithClock option; clock.RealClock{} when none is given)", f)
			}
		}
	}
	for rel, who := range allowed {
		if !needed[rel] {
			t.Errorf("%s no longer reads the wall clock (%s): delete its entry from allowed", rel, who)
		}
	}
}

// TestWallClockCallsFindsEveryForm: the check finds the banned functions
// under any import name, as calls and as method values, and nothing else.
func TestWallClockCallsFindsEveryForm(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string
	}{
		{"a call", `package p; import "time"; var t = time.Now()`, []string{"time.Now"}},
		{"since and until", `package p; import "time"; func f(t time.Time) (time.Duration, time.Duration) { return time.Since(t), time.Until(t) }`,
			[]string{"time.Since", "time.Until"}},
		{"a method value", `package p; import "time"; var now = time.Now`, []string{"time.Now"}},
		{"a renamed import", `package p; import stdtime "time"; var t = stdtime.Now()`, []string{"time.Now"}},
		{"a dot import", `package p; import . "time"; var t = Now()`, []string{"package time imported with '.'"}},
		{"the clock package's real clock", `package p; import "k8s.io/utils/clock"; var t = clock.RealClock{}.Now()`, nil},
		{"timers and durations", `package p; import "time"; var t = time.NewTimer(time.Second)`, nil},
		{"another package's Now", `package p; import "k8s.io/apimachinery/pkg/apis/meta/v1"; var t = v1.Now()`, nil},
		{"time not imported", `package p; var time struct{ Now func() }; var t = time.Now`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			found, err := wallClockCalls(token.NewFileSet(), "p.go", tt.src)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range found {
				_, what, _ := strings.Cut(f, ": ")
				got = append(got, what)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("found %q, want %q", got, tt.want)
			}
		})
	}
}
