package apicheck_test

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// managedFieldsHome is the one package that decodes metadata.managedFields
// and decides which entries are whose (issue 47: four copies had drifted
// apart).
const managedFieldsHome = "internal/managedfields"

// managedFieldsAllowed are the uses the check would flag that are not a
// second decoder or a second rule of whose entries, each with its reason,
// by "file: what" as managedFieldsUses reports it. An entry the code no
// longer needs fails the test: delete it then.
var managedFieldsAllowed = map[string]string{
	"diet/managedfields.go: GetRawBytes":                 "topKeys, diet's fast path, scans the top-level keys of the raw bytes and decodes nothing; what it cannot tell apart goes to managedfields.Decode",
	`diet/managedfields.go: e.Manager == PartialManager`: "diet's own marker entry (diet.PartialManager), never a field owner's",
	`diet/fields.go: e.Manager == PartialManager`:        "diet's own marker entry (diet.PartialManager), never a field owner's",
	`diet/fields.go: m["manager"] == PartialManager`:     "diet's own marker entry (diet.PartialManager), never a field owner's",
	`compare/owned.go: s.Manager == e.Manager`:           "the memo of compiled entries checks a hit entry by entry; no owner in it",
}

// managedFieldsFiles returns the non-test Go files of the module outside
// internal/managedfields, relative to root and slash-separated: the library,
// cmd/ and internal/; not examples/ (the users' side: public API only),
// testdata/ or nested modules.
func managedFieldsFiles(t *testing.T) []string {
	t.Helper()
	return goFiles(t, func(rel, _ string) bool { return rel == "examples" || rel == managedFieldsHome })
}

// managedFieldsUses returns, for the Go file src, each place that decodes
// managedFields or decides whose an entry is, as "what" (the forms below,
// a comparison as its source text), with its position:
//
//   - a call or method value of FromJSON, ToJSON, GetRawBytes or
//     GetRawString (structured-merge-diff's decoding and encoding of a
//     fieldpath.Set, the raw bytes of a FieldsV1), a read of FieldsV1.Raw,
//     an index ["fieldsV1"] of unstructured content, fieldpath.NewSet;
//   - the proxy of a rule of whose entries: a comparison (==, !=, a switch
//     on it, slices.Contains or slices.Index of it) of an entry's manager,
//     a .Manager (or .manager) field or an index ["manager"].
func managedFieldsUses(fset *token.FileSet, name string, src any) ([]string, error) {
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var found []string
	report := func(n ast.Node, what string) {
		found = append(found, fset.Position(n.Pos()).String()+": "+what)
	}
	source := func(n ast.Node) string {
		var b bytes.Buffer
		if err := printer.Fprint(&b, token.NewFileSet(), n); err != nil {
			return "?"
		}
		return b.String()
	}
	isManager := func(e ast.Expr) bool {
		switch e := ast.Unparen(e).(type) {
		case *ast.SelectorExpr:
			return strings.EqualFold(e.Sel.Name, "manager")
		case *ast.IndexExpr:
			lit, ok := e.Index.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return false
			}
			s, _ := strconv.Unquote(lit.Value)
			return s == "manager"
		}
		return false
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			switch n.Sel.Name {
			case "FromJSON", "ToJSON", "GetRawBytes", "GetRawString":
				report(n, n.Sel.Name)
			case "Raw":
				if x, ok := n.X.(*ast.SelectorExpr); ok && x.Sel.Name == "FieldsV1" {
					report(n, "FieldsV1.Raw")
				}
			case "NewSet":
				if x, ok := n.X.(*ast.Ident); ok && x.Name == "fieldpath" {
					report(n, "fieldpath.NewSet")
				}
			}
		case *ast.IndexExpr:
			if lit, ok := n.Index.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, _ := strconv.Unquote(lit.Value); s == "fieldsV1" {
					report(n, `["fieldsV1"]`)
				}
			}
		case *ast.BinaryExpr:
			if (n.Op == token.EQL || n.Op == token.NEQ) && (isManager(n.X) || isManager(n.Y)) {
				report(n, source(n))
			}
		case *ast.SwitchStmt:
			if n.Tag != nil && isManager(n.Tag) {
				report(n, "switch "+source(n.Tag))
			}
		case *ast.CallExpr:
			sel, ok := n.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "Contains" && sel.Sel.Name != "Index" {
				break
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "slices" && slices.ContainsFunc(n.Args, isManager) {
				report(n, source(n))
			}
		}
		return true
	})
	return found, nil
}

// TestOneManagedFieldsDecoder fails on a decoder of managedFields, or a
// rule of whose entries they are, outside internal/managedfields, except
// the uses managedFieldsAllowed lists; and on an entry of it no longer
// needed.
func TestOneManagedFieldsDecoder(t *testing.T) {
	files := managedFieldsFiles(t)
	for _, want := range []string{"compare/owned.go", "diet/managedfields.go", "drift/takeover.go", "drift/adopt.go"} {
		if !slices.Contains(files, want) {
			t.Errorf("%s is not among the files checked: the walk is broken", want)
		}
	}
	fset := token.NewFileSet()
	needed := map[string]bool{}
	for _, rel := range files {
		found, err := managedFieldsUses(fset, filepath.Join(root, filepath.FromSlash(rel)), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range found {
			_, what, _ := strings.Cut(f, ": ")
			if _, ok := managedFieldsAllowed[rel+": "+what]; ok {
				needed[rel+": "+what] = true
				continue
			}
			t.Errorf("%s: managedFields are decoded, and whose an entry is decided, in %s alone: use its Decode and Query", f, managedFieldsHome)
		}
	}
	for use, why := range managedFieldsAllowed {
		if !needed[use] {
			t.Errorf("%s is no longer found (%s): delete its entry from managedFieldsAllowed", use, why)
		}
	}
}

// TestManagedFieldsUsesFindsEveryForm: the check finds each form of a
// decoder and of a rule of whose entries, and nothing else.
func TestManagedFieldsUsesFindsEveryForm(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string
	}{
		{"a decode", `package p; func f(s *fieldpath.Set, r io.Reader) error { return s.FromJSON(r) }`, []string{"FromJSON"}},
		{"an encode", `package p; func f(s *fieldpath.Set) ([]byte, error) { return s.ToJSON() }`, []string{"ToJSON"}},
		{"the raw bytes", `package p; func f(e *metav1.ManagedFieldsEntry) []byte { return e.FieldsV1.GetRawBytes() }`, []string{"GetRawBytes"}},
		{"the raw string", `package p; func f(e *metav1.ManagedFieldsEntry) string { return e.FieldsV1.GetRawString() }`, []string{"GetRawString"}},
		{"a read of Raw", `package p; func f(e *metav1.ManagedFieldsEntry) []byte { return e.FieldsV1.Raw }`, []string{"FieldsV1.Raw"}},
		{"unstructured fields", `package p; func f(m map[string]any) any { return m["fieldsV1"] }`, []string{`["fieldsV1"]`}},
		{"a set built of paths", `package p; var s = fieldpath.NewSet()`, []string{"fieldpath.NewSet"}},
		{"a manager compared with an owner", `package p; func f(e metav1.ManagedFieldsEntry, owner string) bool { return e.Manager == owner }`, []string{"e.Manager == owner"}},
		{"a field of a copy's own entry type", `package p; func (q *query) ours(e *entry) bool { return e.manager == q.owner }`, []string{"e.manager == q.owner"}},
		{"a manager of content", `package p; func f(m map[string]any) bool { return m["manager"] != "x" }`, []string{`m["manager"] != "x"`}},
		{"a switch on a manager", `package p; func f(e metav1.ManagedFieldsEntry) { switch e.Manager { case "a": } }`, []string{"switch e.Manager"}},
		{"a manager in a list", `package p; func f(e metav1.ManagedFieldsEntry, l []string) bool { return slices.Contains(l, e.Manager) }`, []string{"slices.Contains(l, e.Manager)"}},
		{"the one decoder's use", `package p; func f(e *managedfields.Entry) { managedfields.Decode(e) }`, nil},
		{"a manager set, not compared", `package p; func f(e *metav1.ManagedFieldsEntry) { e.Manager = intern(e.Manager) }`, nil},
		{"another Raw", `package p; func f(o metav1.ListOptions) any { return o.Raw }`, nil},
		{"another NewSet", `package p; var s = sets.NewSet()`, nil},
		{"another index", `package p; func f(m map[string]any) any { return m["managers"] }`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			found, err := managedFieldsUses(token.NewFileSet(), "p.go", tt.src)
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
