// Package doccheck holds the test that keeps the documentation in step with
// the code: every exported name that the package documentation (what `go doc
// -all` shows), README.md or docs/*.md names must exist, and no name that
// CHANGELOG.md lists as removed or renamed may be used any more. CHANGELOG.md
// itself is checked too (changelog_test.go): the names its current sections
// (Unreleased and the latest release) give must be what they say, and its
// versions those of the releases file. Every figure the documentation
// quotes from make bench is BENCHMARKS.md's (figures_test.go).
package doccheck_test

import (
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// root is the module's root, relative to this package.
const root = "../.."

// libraries are the packages users import, by the name they type. Their
// documentation is checked, and references to them are checked everywhere.
var libraries = map[string]string{
	"errors":        "errors",
	"requeue":       "requeue",
	"status":        "status",
	"suspend":       "suspend",
	"request":       "request",
	"finalizer":     "finalizer",
	"ownership":     "ownership",
	"compare":       "compare",
	"diet":          "diet",
	"drift":         "drift",
	"freshness":     "freshness",
	"health":        "health",
	"track":         "track",
	"applyset":      "applyset",
	"recorder":      "recorder",
	"tracing":       "tracing",
	"shard":         "shard",
	"ranges":        "shard/ranges",
	"follow":        "shard/follow",
	"reconcile":     "reconcile",
	"reconciletest": "reconcile/reconciletest",
	"testenv":       "reconcile/reconciletest/testenv",
}

// homonyms are the other packages the documentation names with the same
// identifier as one of ours: a reference valid in either is valid.
var homonyms = map[string][]string{
	"errors":    {"std:errors"},
	"reconcile": {"mod:sigs.k8s.io/controller-runtime/pkg/reconcile"},
	"status":    {"mod:sigs.k8s.io/cli-utils/pkg/kstatus/status"},
	"recorder":  {"mod:sigs.k8s.io/controller-runtime/pkg/recorder"},
}

// names is the exported API of one package: top-level names, and for each
// type its methods and fields; deprecated holds the names ("Name" or
// "Type.Member") whose doc comment has a "Deprecated:" paragraph.
type names struct {
	top        map[string]bool
	members    map[string]map[string]bool
	deprecated map[string]bool
}

func (n names) has(name, member string) bool {
	if !n.top[name] {
		return false
	}
	return member == "" || n.members[name][member]
}

// load parses the non-test Go files of dir and returns its exported names
// and its documentation, as go doc -all shows it.
func load(t *testing.T, dir string) (names, *doc.Package) {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, parser.ParseComments)
	if err != nil {
		t.Fatalf("parsing %s: %v", dir, err)
	}
	n := names{top: map[string]bool{}, members: map[string]map[string]bool{}, deprecated: map[string]bool{}}
	var files []*ast.File
	var path string
	for name, p := range pkgs {
		if strings.HasSuffix(name, "_test") || name == "main" {
			continue
		}
		path = name
		for _, f := range p.Files {
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		t.Fatalf("no package in %s", dir)
	}
	d, err := doc.NewFromFiles(fset, files, path)
	if err != nil {
		t.Fatalf("reading the documentation of %s: %v", dir, err)
	}
	addValues := func(vs []*doc.Value) {
		for _, v := range vs {
			for _, name := range v.Names {
				n.top[name] = true
				if deprecated(v.Doc) {
					n.deprecated[name] = true
				}
			}
			ast.Inspect(v.Decl, func(node ast.Node) bool { // one comment per name of a group
				if s, ok := node.(*ast.ValueSpec); ok && s.Doc != nil && deprecated(s.Doc.Text()) {
					for _, id := range s.Names {
						n.deprecated[id.Name] = true
					}
				}
				return true
			})
		}
	}
	addValues(d.Consts)
	addValues(d.Vars)
	addFuncs := func(prefix string, fs []*doc.Func, into map[string]bool) {
		for _, f := range fs {
			into[f.Name] = true
			if deprecated(f.Doc) {
				n.deprecated[prefix+f.Name] = true
			}
		}
	}
	addFuncs("", d.Funcs, n.top)
	for _, typ := range d.Types {
		n.top[typ.Name] = true
		if deprecated(typ.Doc) {
			n.deprecated[typ.Name] = true
		}
		m := map[string]bool{}
		addFuncs(typ.Name+".", typ.Methods, m)
		addFuncs("", typ.Funcs, n.top)
		addValues(typ.Consts)
		addValues(typ.Vars)
		ast.Inspect(typ.Decl, func(node ast.Node) bool {
			switch x := node.(type) {
			case *ast.StructType:
				for _, f := range x.Fields.List {
					for _, id := range f.Names {
						m[id.Name] = true
						if f.Doc != nil && deprecated(f.Doc.Text()) {
							n.deprecated[typ.Name+"."+id.Name] = true
						}
					}
					if len(f.Names) == 0 { // embedded: its name is its type's
						m[embeddedName(f.Type)] = true
					}
				}
				return false
			case *ast.InterfaceType:
				for _, f := range x.Methods.List {
					for _, id := range f.Names {
						m[id.Name] = true
						if f.Doc != nil && deprecated(f.Doc.Text()) {
							n.deprecated[typ.Name+"."+id.Name] = true
						}
					}
				}
				return false
			}
			return true
		})
		n.members[typ.Name] = m
	}
	return n, d
}

// deprecated reports whether a doc comment has a paragraph starting
// "Deprecated: ", the form go doc and gopls recognise.
func deprecated(comment string) bool {
	return strings.HasPrefix(comment, "Deprecated: ") || strings.Contains(comment, "\n\nDeprecated: ")
}

func embeddedName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return embeddedName(x.X)
	case *ast.SelectorExpr:
		return x.Sel.Name
	case *ast.Ident:
		return x.Name
	case *ast.IndexExpr:
		return embeddedName(x.X)
	}
	return ""
}

// text is the documentation of d as go doc -all shows it: the package
// comment and the comment of every exported declaration.
func text(d *doc.Package) string {
	var b strings.Builder
	b.WriteString(d.Doc)
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			b.WriteString(v.Doc)
		}
	}
	values(d.Consts)
	values(d.Vars)
	for _, f := range d.Funcs {
		b.WriteString(f.Doc)
	}
	for _, typ := range d.Types {
		b.WriteString(typ.Doc)
		values(typ.Consts)
		values(typ.Vars)
		for _, f := range typ.Funcs {
			b.WriteString(f.Doc)
		}
		for _, f := range typ.Methods {
			b.WriteString(f.Doc)
		}
		ast.Inspect(typ.Decl, func(node ast.Node) bool {
			if f, ok := node.(*ast.Field); ok && f.Doc != nil {
				b.WriteString(f.Doc.Text())
			}
			return true
		})
	}
	return b.String()
}

// homonymNames loads the exported names of a same-named package outside the
// module: the standard library's or a module dependency's.
func homonymNames(t *testing.T, ref string) names {
	t.Helper()
	kind, path, _ := strings.Cut(ref, ":")
	var dir string
	switch kind {
	case "std":
		out, err := exec.Command("go", "env", "GOROOT").Output()
		if err != nil {
			t.Fatalf("go env GOROOT: %v", err)
		}
		dir = filepath.Join(strings.TrimSpace(string(out)), "src", path)
	case "mod":
		out, err := exec.Command("go", "list", "-f", "{{.Dir}}", path).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", path, err)
		}
		dir = strings.TrimSpace(string(out))
	}
	n, _ := load(t, dir)
	return n
}

// reference matches a qualified name of one of our packages in prose or
// code: "drift.Ensure", "requeue.Policy.DecideWith", "[status.Writer]".
var reference = regexp.MustCompile(`\b(` + strings.Join(sortedKeys(libraries), "|") + `)\.([A-Z]\w*)(?:\.([A-Z]\w*))?`)

// docLink matches an unqualified doc link in a Go comment: "[Ensure]",
// "[Policy.Decide]".
var docLink = regexp.MustCompile(`\[([A-Z]\w*)(?:\.([A-Z]\w*))?\]`)

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// loadLibraries loads every library package: its names, its documentation,
// and a function that says whether a qualified name exists in it or in a
// homonym of it.
func loadLibraries(t *testing.T) (apis map[string]names, docs map[string]string, exists func(pkg, name, member string) bool) {
	t.Helper()
	apis = map[string]names{}
	docs = map[string]string{}
	for name, dir := range libraries {
		n, d := load(t, filepath.Join(root, dir))
		apis[name] = n
		docs[name] = text(d)
	}
	others := map[string][]names{}
	for name, refs := range homonyms {
		for _, ref := range refs {
			others[name] = append(others[name], homonymNames(t, ref))
		}
	}
	exists = func(pkg, name, member string) bool {
		if apis[pkg].has(name, member) {
			return true
		}
		for _, o := range others[pkg] {
			if o.has(name, member) {
				return true
			}
		}
		return false
	}
	return apis, docs, exists
}

// TestDocsNameOnlyWhatExists fails when the documentation of a library
// package, README.md, docs/*.md or an example's README names an exported
// name that does not exist (a qualified reference such as drift.Ensure, or
// a doc link such as [Policy.Decide] in the package's own comments), or a
// name CHANGELOG.md lists as removed or renamed.
func TestDocsNameOnlyWhatExists(t *testing.T) {
	apis, docs, exists := loadLibraries(t)
	gone, _ := changelogNames(t, apis)
	sources := docSources(t, docs)
	for _, src := range sortedKeys(sources) {
		for _, p := range checkSource(src, sources[src], apis, exists, gone) {
			t.Error(p)
		}
	}
}

// docSources returns the texts the checks read, by source: each library's
// documentation ("go doc drift", from docs), README.md, docs/*.md and each
// example's README.md.
func docSources(t *testing.T, docs map[string]string) map[string]string {
	t.Helper()
	sources := map[string]string{}
	for name, txt := range docs {
		sources["go doc "+name] = txt
	}
	mds, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	readmes, err := filepath.Glob(filepath.Join(root, "examples", "*", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range append(append([]string{filepath.Join(root, "README.md")}, mds...), readmes...) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, p)
		sources[filepath.ToSlash(rel)] = string(b)
	}
	return sources
}

// checkSource returns what is wrong with the names the text txt of source
// src (a file, or "go doc pkg" for a package's documentation) gives: a
// qualified reference that exists nowhere, a doc link of a package's own
// documentation to no name of it, a name CHANGELOG.md lists as gone.
func checkSource(src, txt string, apis map[string]names, exists func(pkg, name, member string) bool, gone map[string][]string) []string {
	var problems []string
	for _, m := range reference.FindAllStringSubmatch(txt, -1) {
		pkg, name, member := m[1], m[2], m[3]
		if exists(pkg, name, member) {
			continue
		}
		if member != "" && apis[pkg].top[name] && !isType(apis[pkg], name) {
			continue // a member of a function's result or a value's type
		}
		problems = append(problems, fmt.Sprintf("%s names %s, which does not exist", src, m[0]))
	}
	if own, ok := strings.CutPrefix(src, "go doc "); ok {
		for _, m := range docLink.FindAllStringSubmatch(txt, -1) {
			if len(m[1]) == 1 {
				continue // a type parameter: Loop[T]
			}
			if !apis[own].has(m[1], m[2]) {
				problems = append(problems, fmt.Sprintf("%s links to [%s], which does not exist in package %s", src, strings.Trim(m[0], "[]"), own))
			}
		}
		for _, old := range gone[own] {
			// A one-word name ("Conflict", "Result") is also an English
			// word: only a doc link to it counts. A compound name
			// ("MaxAttempts") counts wherever it appears, but one that is
			// still a member of a type of the package (drift.EnsureMutate,
			// gone, was drift.Writer.EnsureMutate's forwarder): then only
			// a doc link to it counts too.
			// Not after a '.': "retry.DefaultRetry" is another package's.
			// What every pattern below must find in txt: without it, none
			// matches (a plain search first, the expressions only then).
			word := old
			pattern := `(?:^|[^.\w])` + regexp.QuoteMeta(old) + `\b`
			if _, member, ok := strings.Cut(old, "."); ok && compound(member) {
				word = member
				pattern = `(?:^|[^.\w])(?:\w+\.)?` + regexp.QuoteMeta(member) + `\b` // "Writer.MaxAttempts" or "MaxAttempts"
			} else if !compound(old) || memberOfAType(apis[own], old) {
				pattern = `\[` + regexp.QuoteMeta(old) + `\]`
			}
			if strings.Contains(txt, word) && regexp.MustCompile(pattern).MatchString(txt) {
				problems = append(problems, fmt.Sprintf("%s still names %s, which CHANGELOG.md lists as removed or renamed", src, old))
			}
		}
	}
	for _, pkg := range sortedKeys(gone) {
		for _, old := range gone[pkg] {
			if !strings.Contains(txt, pkg+"."+old) {
				continue // what the expression below needs in txt
			}
			name, member, _ := strings.Cut(old, ".")
			if exists(pkg, name, member) {
				continue // a homonym's: "errors.Is" is the standard library's too
			}
			if regexp.MustCompile(`\b` + regexp.QuoteMeta(pkg+"."+old) + `\b`).MatchString(txt) {
				problems = append(problems, fmt.Sprintf("%s still names %s.%s, which CHANGELOG.md lists as removed or renamed", src, pkg, old))
			}
		}
	}
	return problems
}

// compound reports whether name is more than one capitalised word:
// "MaxAttempts", "Writer.MaxAttempts", not "Conflict".
func compound(name string) bool {
	return strings.ContainsAny(name[1:], "ABCDEFGHIJKLMNOPQRSTUVWXYZ.")
}

// memberOfAType reports whether name is a method or field of a type of the
// package.
func memberOfAType(n names, name string) bool {
	for _, m := range n.members {
		if m[name] {
			return true
		}
	}
	return false
}

// isType reports whether name is a type of the package (a member of a type
// must exist; a member of a function's result cannot be checked here).
func isType(n names, name string) bool {
	_, ok := n.members[name]
	return ok
}

// TestTheCheckFindsWhatItLooksFor proves the check is not blind: a made-up
// reference and a removed name are found in a sample text.
func TestTheCheckFindsWhatItLooksFor(t *testing.T) {
	n, _ := load(t, filepath.Join(root, "drift"))
	if n.has("NewWriter", "") != true || n.has("NoSuchThing", "") {
		t.Fatalf("drift's names are not what they are: NewWriter %v, NoSuchThing %v", n.has("NewWriter", ""), n.has("NoSuchThing", ""))
	}
	sample := "call drift.Ensure, then drift.NoSuchThing, and reconcile.Loop.Validate"
	var found []string
	for _, m := range reference.FindAllStringSubmatch(sample, -1) {
		found = append(found, m[0])
	}
	if want := []string{"drift.Ensure", "drift.NoSuchThing", "reconcile.Loop.Validate"}; fmt.Sprint(found) != fmt.Sprint(want) {
		t.Errorf("references found %v, want %v", found, want)
	}
	apis, _, exists := loadLibraries(t)
	gone, _ := changelogNames(t, apis)
	if !slices.Contains(gone["finalizer"], "Ensure") {
		t.Errorf("CHANGELOG's finalizer.Ensure (renamed Add) is not among the removed names: %v", gone["finalizer"])
	}
	doc := "Call drift.NoSuchThing, then finalizer.Ensure; see [Registry.Finalize] and [Set]."
	got := checkSource("go doc finalizer", doc, apis, exists, gone)
	want := []string{
		"go doc finalizer names drift.NoSuchThing, which does not exist",
		"go doc finalizer names finalizer.Ensure, which does not exist",
		"go doc finalizer links to [Set], which does not exist in package finalizer",
		"go doc finalizer still names Set, which CHANGELOG.md lists as removed or renamed",
		"go doc finalizer still names finalizer.Ensure, which CHANGELOG.md lists as removed or renamed",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems in a sample doc of finalizer (-want +got):\n%s", diff)
	}

	// A gone compound name that is still a method's (drift.EnsureMutate,
	// drift.Writer.EnsureMutate) counts only as a doc link; one that is no
	// member's counts wherever it appears.
	goneDrift := map[string][]string{"drift": {"EnsureMutate", "DetectHotLoops"}}
	for _, tt := range []struct{ doc, want string }{
		{"a Writer's EnsureMutate", ""},
		{"see [EnsureMutate]", "go doc drift still names EnsureMutate"},
		{"or DetectHotLoops", "go doc drift still names DetectHotLoops"},
	} {
		var got []string
		for _, p := range checkSource("go doc drift", tt.doc, apis, exists, goneDrift) {
			if strings.Contains(p, "still names") {
				got = append(got, strings.TrimSuffix(p, ", which CHANGELOG.md lists as removed or renamed"))
			}
		}
		if want := slices.DeleteFunc([]string{tt.want}, func(s string) bool { return s == "" }); !slices.Equal(got, want) {
			t.Errorf("%q: %v, want %v", tt.doc, got, want)
		}
	}
}

func mustLoad(t *testing.T, dir string) names {
	n, _ := load(t, filepath.Join(root, dir))
	return n
}

// TestEnginesAndLoopStaySmall keeps the promise of the split of reconcile
// and of drift: each of compare, drift and reconcile holds one concept, in
// at most 30 exported names (controller-runtime's pkg/reconcile has 9). A
// name marked Deprecated (kept for one minor version after it moved) does
// not count: v1 removes it.
func TestEnginesAndLoopStaySmall(t *testing.T) {
	for _, pkg := range []string{"compare", "drift", "reconcile"} {
		n, d := load(t, filepath.Join(root, libraries[pkg]))
		old := deprecatedNames(d)
		var all, kept []string
		for name := range n.top {
			if old[name] {
				kept = append(kept, name)
				continue
			}
			all = append(all, name)
		}
		slices.Sort(all)
		slices.Sort(kept)
		t.Logf("%s: %d exported names: %v; deprecated: %v", pkg, len(all), all, kept)
		if len(all) > 30 {
			t.Errorf("package %s exports %d names, more than 30: %v", pkg, len(all), all)
		}
	}
}

// deprecatedNames returns the top-level names of d whose documentation
// has a "Deprecated:" paragraph.
func deprecatedNames(d *doc.Package) map[string]bool {
	out := map[string]bool{}
	mark := func(doc string, names ...string) {
		if deprecated(doc) {
			for _, n := range names {
				out[n] = true
			}
		}
	}
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			mark(v.Doc, v.Names...)
		}
	}
	values(d.Consts)
	values(d.Vars)
	for _, f := range d.Funcs {
		mark(f.Doc, f.Name)
	}
	for _, typ := range d.Types {
		mark(typ.Doc, typ.Name)
		values(typ.Consts)
		values(typ.Vars)
		for _, f := range typ.Funcs {
			mark(f.Doc, f.Name)
		}
	}
	return out
}
