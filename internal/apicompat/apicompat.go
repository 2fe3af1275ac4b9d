// Package apicompat compares the exported API of a module's library
// packages at a release with the working tree, with golang.org/x/exp's
// apidiff, and finds the incompatible changes CHANGELOG.md does not name
// under Unreleased. The command internal/cmd/apicompat runs it in
// `make test`; docs/releasing.md says what "named" means and how to fix a
// failure.
package apicompat

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/reconcilekit/reconcilekit/internal/release"
)

// Apidiff is the apidiff command, pinned. The module proxy (or the module
// cache) supplies it; each comparison builds it once into a temporary
// directory, the build `go run` would make, and runs it from there (one
// `go run` per call cost 0.5 s each, 33 times).
const Apidiff = "golang.org/x/exp/cmd/apidiff@v0.0.0-20261113113407-e3970619a1a4"

// ErrNotInHistory is returned (wrapped) when the release to compare with is
// not a commit of the repository: a shallow clone, or a releases file that
// names a commit that was never pushed.
var ErrNotInHistory = errors.New("apicompat: the release commit is not in this clone's history")

// Change is one change apidiff reports in a library package, or a library
// package added or removed.
type Change struct {
	Package string // the import path
	// Name is what CHANGELOG.md must name: package-qualified,
	// "drift.Ensure", "status.Writer.FieldOwner"; for a whole package, its
	// path in the module, "reconcile/reconciletest".
	Name         string
	Message      string // apidiff's line, "Ensure: removed"; "removed" or "added" for a whole package
	Compatible   bool
	WholePackage bool
}

// String is apidiff's line qualified by the package: "drift.Ensure:
// removed", "package .../shard: added".
func (c Change) String() string {
	if c.WholePackage {
		return "package " + c.Package + ": " + c.Message
	}
	return path.Base(c.Package) + "." + c.Message
}

// Runner runs the go command. The zero Runner runs "go" from PATH with the
// process's environment.
type Runner struct {
	Go  string   // the go command; "go" when empty
	Env []string // added to the process's environment
}

func (r Runner) goCmd() string {
	if r.Go == "" {
		return "go"
	}
	return r.Go
}

func (r Runner) run(ctx context.Context, dir string, args ...string) ([]byte, error) {
	return r.exec(ctx, dir, nil, r.goCmd(), args...)
}

func (r Runner) exec(ctx context.Context, dir string, env []string, goCmd string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, goCmd, args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), r.Env...), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("apicompat: %s %s (in %s): %w\n%s", filepath.Base(goCmd), strings.Join(args, " "), dir, err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// Libraries lists the library packages of the module in dir: every
// package but commands, examples/, cmd/, internal/ and anything under an
// internal directory. It returns the module path and the import paths.
func (r Runner) Libraries(ctx context.Context, dir string) (string, []string, error) {
	out, err := r.run(ctx, dir, "list", "-f", "{{.Module.Path}} {{.ImportPath}} {{.Name}}", "./...")
	if err != nil {
		return "", nil, err
	}
	var mod string
	var pkgs []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 {
			continue
		}
		mod = f[0]
		rel := strings.TrimPrefix(strings.TrimPrefix(f[1], f[0]), "/")
		first, _, _ := strings.Cut(rel, "/")
		if f[2] == "main" || rel == "" || slices.Contains([]string{"cmd", "examples", "internal"}, first) ||
			strings.Contains("/"+rel+"/", "/internal/") {
			continue
		}
		pkgs = append(pkgs, f[1])
	}
	return mod, pkgs, nil
}

// Diff compares the library packages of the module at oldDir with those at
// newDir. A package only in oldDir is reported removed (incompatible); a
// package only in newDir, added.
//
// apidiff writes the export data of each whole module (one package load per
// tree, which costs a second once the build cache holds the packages, where
// a load per package cost half a second each), and compares each library
// package on its own, so that its report names objects relative to it.
func (r Runner) Diff(ctx context.Context, oldDir, newDir string) ([]Change, error) {
	oldMod, oldPkgs, err := r.Libraries(ctx, oldDir)
	if err != nil {
		return nil, err
	}
	newMod, newPkgs, err := r.Libraries(ctx, newDir)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "apicompat-")
	if err != nil {
		return nil, fmt.Errorf("apicompat: %w", err)
	}
	defer os.RemoveAll(tmp)

	var changes []Change
	var both []string
	for _, p := range oldPkgs {
		if slices.Contains(newPkgs, p) {
			both = append(both, p)
		} else {
			rel := strings.TrimPrefix(p, oldMod+"/")
			changes = append(changes, Change{Package: p, Name: rel, Message: "removed", WholePackage: true})
		}
	}
	for _, p := range newPkgs {
		if !slices.Contains(oldPkgs, p) {
			rel := strings.TrimPrefix(p, newMod+"/")
			changes = append(changes, Change{Package: p, Name: rel, Message: "added", Compatible: true, WholePackage: true})
		}
	}

	// apidiff, built once, here.
	bin := filepath.Join(tmp, "bin")
	if _, err := r.exec(ctx, tmp, []string{"GOBIN=" + bin}, r.goCmd(), "install", Apidiff); err != nil {
		return nil, err
	}
	apidiff := filepath.Join(bin, "apidiff")

	// The export data of each module, both at once (two cores).
	sides := []struct{ dir, mod, zip string }{
		{oldDir, oldMod, filepath.Join(tmp, "old.zip")},
		{newDir, newMod, filepath.Join(tmp, "new.zip")},
	}
	errs := make([]error, len(sides))
	var wg sync.WaitGroup
	for i, side := range sides {
		wg.Go(func() {
			_, errs[i] = r.exec(ctx, side.dir, nil, apidiff, "-m", "-w", side.zip, side.mod)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	oldData, err := readModuleExport(sides[0].zip)
	if err != nil {
		return nil, err
	}
	newData, err := readModuleExport(sides[1].zip)
	if err != nil {
		return nil, err
	}

	for _, p := range both {
		files := [2]string{filepath.Join(tmp, "old.x"), filepath.Join(tmp, "new.x")}
		for i, data := range []map[string][]byte{oldData, newData} {
			d, ok := data[p]
			if !ok {
				return nil, fmt.Errorf("apicompat: apidiff wrote no export data for %s", p)
			}
			// apidiff's file of one package: its path on a line, then the data.
			if err := os.WriteFile(files[i], append([]byte(p+"\n"), d...), 0o644); err != nil {
				return nil, fmt.Errorf("apicompat: %w", err)
			}
		}
		out, err := r.exec(ctx, tmp, nil, apidiff, files[0], files[1])
		if err != nil {
			return nil, err
		}
		cs, err := parseReport(p, out)
		if err != nil {
			return nil, err
		}
		changes = append(changes, cs...)
	}
	return changes, nil
}

// readModuleExport reads the file `apidiff -m -w` writes: a zip whose entry
// "module" holds the module path and whose other entries, "<import
// path>.x", the export data of each package.
func readModuleExport(file string) (map[string][]byte, error) {
	z, err := zip.OpenReader(file)
	if err != nil {
		return nil, fmt.Errorf("apicompat: reading apidiff's export data: %w", err)
	}
	defer z.Close()
	out := map[string][]byte{}
	for _, f := range z.File {
		p, ok := strings.CutSuffix(f.Name, ".x")
		if !ok {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			return nil, fmt.Errorf("apicompat: reading apidiff's export data: %w", err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("apicompat: reading apidiff's export data: %w", err)
		}
		out[p] = b
	}
	return out, nil
}

// parseReport reads apidiff's report on package pkg.
func parseReport(pkg string, out []byte) ([]Change, error) {
	var changes []Change
	compatible, seen := false, false
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "Incompatible changes:":
			compatible, seen = false, true
		case line == "Compatible changes:":
			compatible, seen = true, true
		case strings.HasPrefix(line, "- ") && seen:
			msg := strings.TrimPrefix(line, "- ")
			changes = append(changes, Change{Package: pkg, Name: QualifiedName(pkg, msg), Message: msg, Compatible: compatible})
		case strings.TrimSpace(line) == "":
		default:
			return nil, fmt.Errorf("apicompat: unexpected line in apidiff's report on %s: %q", pkg, line)
		}
	}
	return changes, nil
}

var typeArgs = regexp.MustCompile(`\[[^\[\]]*\]`)

// QualifiedName turns the object apidiff names in msg, a change of package
// pkg, into the name a user types: "(*Registry[T]).Run: removed" in
// package .../finalizer is "finalizer.Registry.Run". An object of another
// package (apidiff names it by its path) is qualified by that package.
func QualifiedName(pkg, msg string) string {
	obj, _, _ := strings.Cut(msg, ": ")
	for typeArgs.MatchString(obj) {
		obj = typeArgs.ReplaceAllString(obj, "")
	}
	obj, _, _ = strings.Cut(obj, ", ") // ", method set of *T", ", element type"
	obj = strings.NewReplacer("(", "", ")", "", "*", "").Replace(obj)
	qual := path.Base(pkg)
	switch {
	case strings.HasPrefix(obj, "./"): // a child package of pkg
		obj = strings.TrimPrefix(obj, "./")
		qual, obj = "", path.Base(obj)
	case strings.Contains(obj, "/"): // another package, named by its path
		qual, obj = "", path.Base(obj)
	}
	if qual == "" {
		return obj
	}
	return qual + "." + obj
}

// Named reports whether text names name: it appears whole, not preceded
// by a letter, digit, '_' or '.', nor followed by a letter, digit or '_'
// ("drift.Ensure" is named by "`drift.Ensure(ctx, c, obj)`" but not by
// "drift.EnsureApplied").
func Named(text, name string) bool {
	re := regexp.MustCompile(`(?:^|[^\w.])` + regexp.QuoteMeta(name) + `(?:[^\w]|$)`)
	return re.MatchString(text)
}

// NamingKinds are the subsections of the Unreleased section in which an
// incompatible change must be named.
var NamingKinds = []string{"Changed", "Removed"}

// Unnamed returns the incompatible changes the Unreleased section of
// changelog does not name under [NamingKinds] (see [Named]). A removed
// package is named by its path in the module between backticks
// (`reconcile/reconciletest`) or by its import path.
func Unnamed(changes []Change, changelog *release.Changelog) ([]Change, error) {
	sec, ok := changelog.Section(release.Unreleased)
	if !ok {
		return nil, fmt.Errorf("apicompat: CHANGELOG.md has no \"## [Unreleased]\" section")
	}
	var b strings.Builder
	for _, k := range NamingKinds {
		if s := sec.Subsection(k); s != nil {
			b.WriteString(s.Text)
		}
	}
	text := b.String()
	var out []Change
	for _, c := range changes {
		switch {
		case c.Compatible:
		case c.WholePackage && (strings.Contains(text, "`"+c.Name+"`") || Named(text, c.Package)):
		case !c.WholePackage && Named(text, c.Name):
		default:
			out = append(out, c)
		}
	}
	return out, nil
}
