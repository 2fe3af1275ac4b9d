package apicheck_test

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// noValidate are the long-lived types without a Validate method, each with
// the reason it needs none. An entry whose type has one, or is no longer
// long-lived, fails the test: delete it then.
var noValidate = map[string]string{
	"reconciletest.FaultInjector": "a test helper with no exported field: NewFaultInjector returns the error of an option that cannot work (ErrInvalidFaultOption)",
}

// longLived says why a type of a package is long-lived, or "": a
// constructor New or New<X> returns it, it has an exported field of type
// clock.Clock or clock.PassiveClock (k8s.io/utils/clock), or a method
// Start(context.Context) error (a manager Runnable). Such a value is
// configured once and used for the life of the process: a field set wrong
// must be reported by Validate() error, not found out later (docs/api.md,
// "Optional settings").
func longLived(typ *doc.Type, clockNames []string) string {
	for _, f := range typ.Funcs {
		if strings.HasPrefix(f.Name, "New") {
			return "built by " + f.Name
		}
	}
	spec, ok := typeSpec(typ)
	if !ok {
		return ""
	}
	if st, ok := spec.Type.(*ast.StructType); ok {
		for _, field := range st.Fields.List {
			sel, ok := field.Type.(*ast.SelectorExpr)
			if !ok {
				continue
			}
			x, ok := sel.X.(*ast.Ident)
			if !ok || !slices.Contains(clockNames, x.Name) || (sel.Sel.Name != "Clock" && sel.Sel.Name != "PassiveClock") {
				continue
			}
			for _, id := range field.Names {
				if id.IsExported() {
					return "has a field " + id.Name + " of type clock." + sel.Sel.Name
				}
			}
		}
	}
	for _, m := range typ.Methods {
		if m.Name == "Start" && signature(m.Decl.Type) == "(context.Context) error" {
			return "has Start(context.Context) error"
		}
	}
	return ""
}

// typeSpec is the declaration of a type.
func typeSpec(typ *doc.Type) (*ast.TypeSpec, bool) {
	for _, s := range typ.Decl.Specs {
		if ts, ok := s.(*ast.TypeSpec); ok && ts.Name.Name == typ.Name {
			return ts, true
		}
	}
	return nil, false
}

// hasValidate reports whether the type has the method Validate() error.
func hasValidate(typ *doc.Type) bool {
	return slices.ContainsFunc(typ.Methods, func(m *doc.Func) bool {
		return m.Name == "Validate" && signature(m.Decl.Type) == "() error"
	})
}

// signature is a function type's parameters and results, types only:
// "(context.Context) error".
func signature(ft *ast.FuncType) string {
	list := func(fl *ast.FieldList) []string {
		var out []string
		if fl == nil {
			return nil
		}
		for _, f := range fl.List {
			n := max(len(f.Names), 1)
			for range n {
				out = append(out, exprString(f.Type))
			}
		}
		return out
	}
	s := "(" + strings.Join(list(ft.Params), ", ") + ")"
	if r := list(ft.Results); len(r) == 1 {
		s += " " + r[0]
	} else if len(r) > 1 {
		s += " (" + strings.Join(r, ", ") + ")"
	}
	return s
}

func exprString(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		return exprString(x.X) + "." + x.Sel.Name
	case *ast.StarExpr:
		return "*" + exprString(x.X)
	}
	return "?"
}

// packageTypes parses the non-test files of a package directory (or the
// sources given, by file name) and returns its types as go doc sees them,
// and the names its files import k8s.io/utils/clock under.
func packageTypes(t *testing.T, dir string, sources map[string]string) ([]*doc.Type, []string) {
	t.Helper()
	fset := token.NewFileSet()
	var files []*ast.File
	if sources == nil {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		sources = map[string]string{}
		for _, e := range entries {
			if name := e.Name(); strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") {
				b, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil {
					t.Fatal(err)
				}
				sources[name] = string(b)
			}
		}
	}
	var clockNames []string
	var pkgName string
	for _, name := range slices.Sorted(mapsKeys(sources)) {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), sources[name], parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		if f.Name.Name == "main" {
			continue
		}
		pkgName = f.Name.Name
		files = append(files, f)
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == "k8s.io/utils/clock" {
				n := "clock"
				if imp.Name != nil {
					n = imp.Name.Name
				}
				if !slices.Contains(clockNames, n) {
					clockNames = append(clockNames, n)
				}
			}
		}
	}
	d, err := doc.NewFromFiles(fset, files, module+"/"+pkgName)
	if err != nil {
		t.Fatal(err)
	}
	return d.Types, clockNames
}

func mapsKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// withoutValidate returns the long-lived types of a package that have no
// Validate() error, as "pkg.Type" with why they are long-lived.
func withoutValidate(pkg string, types []*doc.Type, clockNames []string) map[string]string {
	out := map[string]string{}
	for _, typ := range types {
		if !ast.IsExported(typ.Name) || deprecatedDoc(typ.Doc) {
			continue
		}
		if why := longLived(typ, clockNames); why != "" && !hasValidate(typ) {
			out[pkg+"."+typ.Name] = why
		}
	}
	return out
}

func deprecatedDoc(comment string) bool {
	return strings.HasPrefix(comment, "Deprecated: ") || strings.Contains(comment, "\n\nDeprecated: ")
}

// TestLongLivedValuesValidate fails when a long-lived type of a library
// package (see longLived) has no Validate() error, except those noValidate
// allows, and on an entry of noValidate no longer needed.
func TestLongLivedValuesValidate(t *testing.T) {
	missing := map[string]string{}
	checked := 0
	for _, dir := range libraries {
		types, clockNames := packageTypes(t, filepath.Join(root, dir), nil)
		checked += len(types)
		for k, v := range withoutValidate(filepath.Base(dir), types, clockNames) {
			missing[k] = v
		}
	}
	if checked < 50 {
		t.Fatalf("the library packages declare %d types: the walk is broken", checked)
	}
	for _, name := range slices.Sorted(mapsKeys(missing)) {
		if _, ok := noValidate[name]; ok {
			continue
		}
		t.Errorf("%s %s but has no Validate() error: give it one that reports a field set wrong (or, with a reason, an entry in noValidate)", name, missing[name])
	}
	for name, why := range noValidate {
		if _, ok := missing[name]; !ok {
			t.Errorf("%s now has Validate() error or is no longer long-lived (%s): delete it from noValidate", name, why)
		}
	}
}

// TestTheValidateCheckFindsWhatItLooksFor proves the check is not blind:
// in a sample package, each way of being long-lived without Validate is
// found, and a type with Validate, a plain value and a deprecated type are
// not.
func TestTheValidateCheckFindsWhatItLooksFor(t *testing.T) {
	src := `package p

import (
	"context"
	kclock "k8s.io/utils/clock"
)

// Built is built by a constructor.
type Built struct{}

// NewBuilt builds one.
func NewBuilt() *Built { return nil }

// Timed has a clock.
type Timed struct{ Clock kclock.PassiveClock }

// Runnable runs.
type Runnable struct{}

// Start runs it.
func (*Runnable) Start(context.Context) error { return nil }

// Checked is long-lived and checked.
type Checked struct{ Clock kclock.Clock }

// Validate reports a field set wrong.
func (*Checked) Validate() error { return nil }

// Plain is a value.
type Plain struct{ N int }

// Old is long-lived and deprecated.
//
// Deprecated: use Checked.
type Old struct{ Clock kclock.Clock }

// WrongValidate has a Validate of another signature.
type WrongValidate struct{}

// NewWrongValidate builds one.
func NewWrongValidate() WrongValidate { return WrongValidate{} }

// Validate returns nothing.
func (WrongValidate) Validate() {}
`
	types, clockNames := packageTypes(t, "p", map[string]string{"p.go": src})
	got := withoutValidate("p", types, clockNames)
	want := map[string]string{
		"p.Built":         "built by NewBuilt",
		"p.Timed":         "has a field Clock of type clock.PassiveClock",
		"p.Runnable":      "has Start(context.Context) error",
		"p.WrongValidate": "built by NewWrongValidate",
	}
	if len(got) != len(want) {
		t.Errorf("found %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: found %q, want %q", k, got[k], v)
		}
	}
}
