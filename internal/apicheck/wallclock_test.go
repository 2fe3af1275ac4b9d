package apicheck_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// wallClockCalls are the calls of the time package that read the wall
// clock behind the caller's back: time comes from a k8s.io/utils/clock
// clock (a Clock field or a WithClock option; nil means the real clock).
var wallClockCalls = map[string]bool{"Now": true, "Since": true, "Until": true}

// wallClockKnown are the calls that were there when this test was written
// (#34), by file, at most: each is being moved to a clock by the package's
// owner. Lower a count, or drop the file, when they go; never raise one.
var wallClockKnown = map[string]int{
	"drift/hotloop.go":                        1,
	"freshness/client.go":                     2,
	"freshness/tracker.go":                    1,
	"shard/member.go":                         5,
	"reconcile/reconciletest/testenv/wait.go": 2,
}

// TestNoWallClockInLibraryCode proves no non-test file of a library package
// calls time.Now, time.Since or time.Until, beyond the calls listed in
// wallClockKnown: a new one fails.
func TestNoWallClockInLibraryCode(t *testing.T) {
	found := map[string][]string{}
	for _, lib := range libraries {
		fset := token.NewFileSet()
		pkgs, err := parser.ParseDir(fset, filepath.Join(root, lib), func(fi os.FileInfo) bool {
			return !strings.HasSuffix(fi.Name(), "_test.go")
		}, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, pkg := range pkgs {
			for path, f := range pkg.Files {
				timeName := importName(f, "time")
				if timeName == "" {
					continue
				}
				rel, _ := filepath.Rel(root, path)
				rel = filepath.ToSlash(rel)
				ast.Inspect(f, func(n ast.Node) bool {
					sel, ok := n.(*ast.SelectorExpr)
					if !ok || !wallClockCalls[sel.Sel.Name] {
						return true
					}
					if id, ok := sel.X.(*ast.Ident); ok && id.Name == timeName {
						found[rel] = append(found[rel], fset.Position(sel.Pos()).String()+": time."+sel.Sel.Name)
					}
					return true
				})
			}
		}
	}
	for file, calls := range found {
		if len(calls) > wallClockKnown[file] {
			t.Errorf("%s reads the wall clock %d times (allowed: %d); take the time from a clock.PassiveClock (a Clock field or a WithClock option, nil meaning clock.RealClock{}):\n\t%s",
				file, len(calls), wallClockKnown[file], strings.Join(calls, "\n\t"))
		}
	}
	for file, n := range wallClockKnown {
		if len(found[file]) < n {
			t.Logf("%s reads the wall clock %d times, fewer than the %d allowed: lower wallClockKnown", file, len(found[file]), n)
		}
	}
}

// importName returns the name under which f imports path ("" when it does
// not).
func importName(f *ast.File, path string) string {
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == path {
			if imp.Name != nil {
				return imp.Name.Name
			}
			return filepath.Base(path)
		}
	}
	return ""
}
