package doccheck_test

import (
	"fmt"
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

	"github.com/google/go-cmp/cmp"
)

// module is the module's import path.
const module = "github.com/reconcilekit/reconcilekit"

// oldSpellings are the deprecated names a source names on purpose, to say
// what replaced them, each with the reason. An entry no source needs any
// more fails the test: delete it then.
// v1.0.0 has no deprecated name, so none is allowed.
var oldSpellings = map[string]map[string]string{}

// liveText is the documentation of d as text does, without the comments of
// deprecated declarations: those may name other deprecated names, what
// replaces them aside.
func liveText(d *doc.Package) string {
	var b strings.Builder
	add := func(comment string) {
		if !deprecated(comment) {
			b.WriteString(comment)
		}
	}
	add(d.Doc)
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			add(v.Doc)
		}
	}
	values(d.Consts)
	values(d.Vars)
	for _, f := range d.Funcs {
		add(f.Doc)
	}
	for _, typ := range d.Types {
		add(typ.Doc)
		values(typ.Consts)
		values(typ.Vars)
		for _, f := range typ.Funcs {
			add(f.Doc)
		}
		for _, f := range typ.Methods {
			add(f.Doc)
		}
		if deprecated(typ.Doc) {
			continue
		}
		ast.Inspect(typ.Decl, func(node ast.Node) bool {
			if f, ok := node.(*ast.Field); ok && f.Doc != nil {
				add(f.Doc.Text())
			}
			return true
		})
	}
	return b.String()
}

// checkDeprecated returns the deprecated names the text txt of source src
// uses: a qualified reference (drift.Ensure) to a name whose doc comment
// says "Deprecated:", and in a package's own documentation a doc link
// ([Ensure]) to one. homonym says whether another package of the same
// name has the name (errors.Is is the standard library's). allowed are the
// names src may use, by the key it reports; used records those it did.
func checkDeprecated(src, txt string, apis map[string]names, homonym func(pkg, name, member string) bool, allowed map[string]string, used map[string]bool) []string {
	var problems []string
	report := func(key, what string) {
		if _, ok := allowed[key]; ok {
			used[key] = true
			return
		}
		problems = append(problems, fmt.Sprintf("%s %s, which is Deprecated: name what replaces it (or, for a sentence about the old spelling, allow it in oldSpellings)", src, what))
	}
	seen := map[string]bool{}
	for _, m := range reference.FindAllStringSubmatch(txt, -1) {
		pkg, name, member := m[1], m[2], m[3]
		r := ref{pkg, name, member}
		if seen[r.String()] {
			continue
		}
		seen[r.String()] = true
		dep := apis[pkg].deprecated[r.key()]
		if !dep && member != "" && apis[pkg].deprecated[name] && isType(apis[pkg], name) {
			dep = true // a member of a deprecated type
		}
		if dep && !homonym(pkg, name, member) {
			report(r.String(), "names "+r.String())
		}
	}
	if own, ok := strings.CutPrefix(src, "go doc "); ok {
		for _, m := range docLink.FindAllStringSubmatch(txt, -1) {
			key := m[1]
			if m[2] != "" {
				key += "." + m[2]
			}
			if seen[key] {
				continue
			}
			seen[key] = true
			if apis[own].deprecated[key] {
				report(key, "links to ["+key+"]")
			}
		}
	}
	return problems
}

// exampleUses returns, for the Example functions of a test file, every use
// of a name of ours: a qualified name (drift.Ensure, finalizer.Add) and a
// field named in a composite literal of one of our types
// (reconcile.Loop[T]{Client: c} uses reconcile.Loop.Client), as
// "pkg.Name" or "pkg.Type.Member", with its position.
func exampleUses(fset *token.FileSet, name string, src any) ([][2]string, error) {
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	ours := map[string]string{} // import name -> our package's name
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		rel, ok := strings.CutPrefix(path, module+"/")
		if !ok {
			continue
		}
		pkg := ""
		for n, dir := range libraries {
			if dir == rel {
				pkg = n
			}
		}
		if pkg == "" {
			continue
		}
		local := pkg
		if imp.Name != nil {
			local = imp.Name.Name
		}
		ours[local] = pkg
	}
	var uses [][2]string
	qualified := func(e ast.Expr) (pkg, name string, ok bool) {
		for {
			switch x := e.(type) {
			case *ast.IndexExpr:
				e = x.X
				continue
			case *ast.IndexListExpr:
				e = x.X
				continue
			case *ast.StarExpr:
				e = x.X
				continue
			}
			break
		}
		sel, isSel := e.(*ast.SelectorExpr)
		if !isSel {
			return "", "", false
		}
		id, isID := sel.X.(*ast.Ident)
		if !isID || ours[id.Name] == "" {
			return "", "", false
		}
		return ours[id.Name], sel.Sel.Name, true
	}
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Example") || fn.Body == nil {
			continue
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.SelectorExpr:
				if pkg, name, ok := qualified(x); ok {
					uses = append(uses, [2]string{fset.Position(x.Pos()).String(), pkg + "." + name})
				}
			case *ast.CompositeLit:
				pkg, typ, ok := qualified(x.Type)
				if !ok {
					return true
				}
				for _, el := range x.Elts {
					if kv, ok := el.(*ast.KeyValueExpr); ok {
						if key, ok := kv.Key.(*ast.Ident); ok {
							uses = append(uses, [2]string{fset.Position(key.Pos()).String(), pkg + "." + typ + "." + key.Name})
						}
					}
				}
			}
			return true
		})
	}
	return uses, nil
}

// TestDocsUseNoDeprecatedName fails when README.md, docs/*.md, an example's
// README, a library package's documentation (but the comments of its
// deprecated names) or a runnable Example of a library package uses a name
// marked Deprecated, except the sentences oldSpellings allows, and on an
// entry of oldSpellings no source needs.
func TestDocsUseNoDeprecatedName(t *testing.T) {
	apis := map[string]names{}
	live := map[string]string{}
	for name, dir := range libraries {
		n, d := load(t, filepath.Join(root, dir))
		apis[name] = n
		live[name] = liveText(d)
	}
	others := map[string][]names{}
	for name, refs := range homonyms {
		for _, r := range refs {
			others[name] = append(others[name], homonymNames(t, r))
		}
	}
	homonym := func(pkg, name, member string) bool {
		return slices.ContainsFunc(others[pkg], func(n names) bool { return n.has(name, member) })
	}
	sources := docSources(t, live)
	used := map[string]map[string]bool{}
	for _, src := range sortedKeys(sources) {
		used[src] = map[string]bool{}
		for _, p := range checkDeprecated(src, sources[src], apis, homonym, oldSpellings[src], used[src]) {
			t.Error(p)
		}
	}

	fset := token.NewFileSet()
	examples := 0
	for _, name := range sortedKeys(libraries) {
		files, err := filepath.Glob(filepath.Join(root, libraries[name], "*_test.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			uses, err := exampleUses(fset, f, nil)
			if err != nil {
				t.Fatal(err)
			}
			examples += len(uses)
			for _, u := range uses {
				pkg, key, _ := strings.Cut(u[1], ".")
				if apis[pkg].deprecated[key] {
					t.Errorf("%s: an Example uses %s, which is Deprecated: use what replaces it", strings.TrimPrefix(u[0], root+"/"), u[1])
				}
			}
		}
	}
	if examples < 100 {
		t.Errorf("the Examples of the library use %d names of ours: the reading of Examples is broken", examples)
	}

	for src, allowed := range oldSpellings {
		for key, why := range allowed {
			if !used[src][key] {
				t.Errorf("%s no longer names %s (%s): delete it from oldSpellings", src, key, why)
			}
		}
	}
}

// samplePackages writes a package of each name with the source given, in
// a directory of its own, and loads it as the checks load ours.
func samplePackages(t *testing.T, srcs map[string]string) map[string]names {
	t.Helper()
	apis := map[string]names{}
	for name, src := range srcs {
		dir := filepath.Join(t.TempDir(), name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".go"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		n, _ := load(t, dir)
		apis[name] = n
	}
	return apis
}

// TestTheDeprecatedCheckFindsWhatItLooksFor proves the check is not blind:
// in a sample text and a sample Example, the deprecated names of sample
// packages (v1.0.0's own have none) are found, the allowed one and the
// names that replace them are not.
func TestTheDeprecatedCheckFindsWhatItLooksFor(t *testing.T) {
	apis := samplePackages(t, map[string]string{
		"drift": `package drift

// Writer writes.
type Writer struct{}

// Ensure ensures.
func (w *Writer) Ensure() {}

// NewWriter returns a Writer.
func NewWriter() *Writer { return nil }

// Ensure is Writer.Ensure.
//
// Deprecated: use NewWriter().Ensure.
func Ensure() {}

// WithFieldOwner names the field owner.
//
// Deprecated: pass it to NewWriter.
func WithFieldOwner(string) {}
`,
		"finalizer": `package finalizer

// Registry registers.
type Registry struct{}

// Finalize finalizes.
func (r *Registry) Finalize() {}

// Run is Finalize.
//
// Deprecated: use Finalize.
func (r *Registry) Run() {}

// Add adds.
//
// Deprecated: use a Writer.
func Add() {}
`,
		"reconcile": `package reconcile

// Loop loops.
type Loop struct {
	// Client is the client.
	//
	// Deprecated: pass it to New.
	Client any
}
`,
		"errors": `package errors

// Is is the standard library's.
//
// Deprecated: a sample homonym.
func Is() {}
`,
	})
	if !apis["drift"].deprecated["Ensure"] || !apis["reconcile"].deprecated["Loop.Client"] || apis["drift"].deprecated["Writer.Ensure"] {
		t.Fatalf("drift.Ensure, reconcile.Loop.Client deprecated, drift.Writer.Ensure not: the loader is broken (%v)", apis["drift"].deprecated)
	}
	noHomonym := func(pkg, name, member string) bool { return pkg == "errors" && name == "Is" }
	txt := "Call drift.Ensure or drift.NewWriter(c, o).Ensure; drift.WithFieldOwner was the old way; errors.Is and " +
		"finalizer.Add; in the package doc, [Registry.Run] and [Registry.Finalize]."
	used := map[string]bool{}
	got := checkDeprecated("go doc finalizer", txt, apis, noHomonym, map[string]string{"drift.WithFieldOwner": "a sample"}, used)
	for i, p := range got {
		got[i], _, _ = strings.Cut(p, ", which is Deprecated")
	}
	want := []string{
		"go doc finalizer names drift.Ensure",
		"go doc finalizer names finalizer.Add",
		"go doc finalizer links to [Registry.Run]",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("deprecated names in a sample (-want +got):\n%s", diff)
	}
	if !used["drift.WithFieldOwner"] {
		t.Errorf("the allowed drift.WithFieldOwner was not recorded as used: %v", used)
	}

	example := `package reconcile_test

import (
	"github.com/reconcilekit/reconcilekit/drift"
	rk "github.com/reconcilekit/reconcilekit/reconcile"
	"other/drift2"
)

func ExampleLoop() {
	_, _ = drift.Ensure(ctx, c, obj, drift.Owner(site))
	loop := &rk.Loop[*Website]{Client: c, Events: rk.Events{}}
	_ = drift2.Ensure
}

func helper() { _ = drift.Diff }
`
	uses, err := exampleUses(token.NewFileSet(), "x_test.go", example)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, u := range uses {
		names = append(names, u[1])
	}
	slices.Sort(names)
	if want := []string{"drift.Ensure", "drift.Owner", "reconcile.Events", "reconcile.Loop", "reconcile.Loop.Client", "reconcile.Loop.Events"}; !slices.Equal(names, want) {
		t.Errorf("an Example uses %v, want %v", names, want)
	}
}
