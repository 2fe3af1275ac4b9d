package apicheck_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// unmanagedWrites are the library files that send a write without naming
// its field manager in the call, with the reason each may. An entry whose
// file no longer does fails the test: delete it then.
var unmanagedWrites = map[string]string{
	"reconcile/reconciletest/testenv/controllers.go": "test plumbing: kwok's Node, the binder's Binding and a Pod's status, written as the kubelet and the scheduler would, not as an operator",
	"reconcile/reconciletest/testenv/testenv.go":     "test plumbing: the namespace of a test, created by the admin client",
	"shard/member.go": "the Lease writes go through m.Leases, which Start wraps so that every write carries the Member's field owner (fieldManaged); resourcelock's lock.Update writes through the same client",
	"shard/fence.go":  "renewals passes a range's resourcelock.Interface calls on (an interface without options) to the lock of the Member's field-managed Leases client",
	"shard/leader.go": "a Leader passes the resourcelock.Interface calls of the user's election on to the user's lock, whose client names its manager",

	"tracing/wakes.go": "an event handler's Create and Update pass controller-runtime's events on to the handler it wraps: no write",
}

// writeVerbs are the methods that write an object and take a field
// manager: controller-runtime's client (and its status and subresource
// writers), client-go's typed clients, resourcelock's Update.
var writeVerbs = []string{"Create", "Update", "Patch", "Apply"}

// libraryFiles returns the non-test Go files of the module's library
// packages, relative to root and slash-separated: every package of the
// module except cmd/, examples/, anything under an internal/ or testdata/
// directory, and nested modules.
func libraryFiles(t *testing.T) []string {
	t.Helper()
	return goFiles(t, func(rel, name string) bool {
		return name == "internal" || rel == "cmd" || rel == "examples"
	})
}

// goFiles returns the non-test Go files under root, relative to it and
// slash-separated, leaving out hidden and _ directories, testdata/,
// nested modules, and each directory skip reports (given its path relative
// to root and its name).
func goFiles(t *testing.T, skip func(rel, name string) bool) []string {
	t.Helper()
	var files []string
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
				name == "testdata", skip(rel, name):
				return fs.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return fs.SkipDir // another module
			}
			return nil
		}
		if strings.HasSuffix(rel, ".go") && !strings.HasSuffix(rel, "_test.go") {
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// unmanagedCalls returns the position and method of every write call in a
// file that names no field manager: a call of a method of writeVerbs with
// at least two arguments none of which is client.FieldOwner(...) or a
// metav1 options literal with a FieldManager, that does not forward its
// caller's options (a last argument opts...), in a function that assigns
// no FieldManager.
func unmanagedCalls(fset *token.FileSet, name string, src any) ([]string, error) {
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var found []string
	check := func(body *ast.BlockStmt) {
		if body == nil {
			return
		}
		setsFieldManager := false
		ast.Inspect(body, func(n ast.Node) bool {
			if as, ok := n.(*ast.AssignStmt); ok {
				for _, l := range as.Lhs {
					if sel, ok := l.(*ast.SelectorExpr); ok && sel.Sel.Name == "FieldManager" {
						setsFieldManager = true
					}
				}
			}
			return true
		})
		ast.Inspect(body, func(n ast.Node) bool {
			if _, ok := n.(*ast.FuncLit); ok && n != nil {
				// A closure is checked with the function that holds it:
				// its assignments count for both.
				return true
			}
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) < 2 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || !slices.Contains(writeVerbs, sel.Sel.Name) {
				return true
			}
			if call.Ellipsis.IsValid() || setsFieldManager || slices.ContainsFunc(call.Args, namesFieldManager) {
				return true
			}
			found = append(found, fset.Position(call.Pos()).String()+": "+sel.Sel.Name)
			return true
		})
	}
	for _, decl := range f.Decls {
		if fn, ok := decl.(*ast.FuncDecl); ok {
			check(fn.Body)
		}
	}
	return found, nil
}

// namesFieldManager reports whether an argument names the field manager:
// client.FieldOwner(name), or a metav1.CreateOptions (UpdateOptions,
// PatchOptions, ApplyOptions) literal with a FieldManager.
func namesFieldManager(arg ast.Expr) bool {
	if u, ok := arg.(*ast.UnaryExpr); ok {
		arg = u.X
	}
	switch x := arg.(type) {
	case *ast.CallExpr:
		sel, ok := x.Fun.(*ast.SelectorExpr)
		return ok && sel.Sel.Name == "FieldOwner"
	case *ast.CompositeLit:
		for _, el := range x.Elts {
			if kv, ok := el.(*ast.KeyValueExpr); ok {
				if id, ok := kv.Key.(*ast.Ident); ok && id.Name == "FieldManager" {
					return true
				}
			}
		}
	}
	return false
}

// TestEveryWriteNamesItsFieldManager fails on a write of a library file
// that names no field manager (see unmanagedCalls), except in the files
// unmanagedWrites allows, and on an entry of unmanagedWrites no longer
// needed: every write the library sends goes out under the field manager
// the operator names (README.md, "One field owner"). Deletes carry none.
func TestEveryWriteNamesItsFieldManager(t *testing.T) {
	files := libraryFiles(t)
	if !slices.Contains(files, "drift/writer.go") || !slices.Contains(files, "status/writer.go") {
		t.Fatalf("the walk found %d library files, not drift/writer.go and status/writer.go: it is broken", len(files))
	}
	fset := token.NewFileSet()
	needed := map[string]bool{}
	for _, rel := range files {
		found, err := unmanagedCalls(fset, filepath.Join(root, filepath.FromSlash(rel)), nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(found) == 0 {
			continue
		}
		if _, ok := unmanagedWrites[rel]; ok {
			needed[rel] = true
			continue
		}
		for _, f := range found {
			t.Errorf("%s sends a write without a field manager: pass client.FieldOwner(fieldOwner), or forward the caller's options (opts...)", strings.TrimPrefix(f, root+"/"))
		}
	}
	for rel, why := range unmanagedWrites {
		if !needed[rel] {
			t.Errorf("%s no longer sends a write without a field manager (%s): delete its entry from unmanagedWrites", rel, why)
		}
	}
}

// TestUnmanagedCallsFindsEveryForm: the check finds a write that names no
// field manager, and passes one that names it in each accepted way.
func TestUnmanagedCallsFindsEveryForm(t *testing.T) {
	tests := []struct {
		name, body string
		want       []string
	}{
		{"a create", `c.Create(ctx, obj)`, []string{"Create"}},
		{"an update, a patch and an apply", `c.Update(ctx, obj); c.Status().Patch(ctx, obj, p); c.Apply(ctx, ac)`, []string{"Update", "Patch", "Apply"}},
		{"a write in a closure", `f := func() error { return c.Patch(ctx, obj, p) }; _ = f`, []string{"Patch"}},
		{"client.FieldOwner", `c.Patch(ctx, obj, p, client.FieldOwner(w.owner))`, nil},
		{"forwarded options", `c.Update(ctx, obj, opts...)`, nil},
		{"metav1 options", `leases.Update(ctx, lease, metav1.UpdateOptions{FieldManager: m.owner})`, nil},
		{"metav1 options by pointer", `leases.Create(ctx, lease, &metav1.CreateOptions{FieldManager: m.owner})`, nil},
		{"a function that sets FieldManager", `o := metav1.UpdateOptions{}; o.FieldManager = m.owner; leases.Update(ctx, lease, o)`, nil},
		{"one argument", `q.Update(x)`, nil},
		{"a delete", `c.Delete(ctx, obj)`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "package p\nfunc f() {\n" + tt.body + "\n}\n"
			found, err := unmanagedCalls(token.NewFileSet(), "p.go", src)
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
