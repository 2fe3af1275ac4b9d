package apicompat

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// OldExamples builds and vets the examples of commit rev (the At operator,
// the embedding guide's steps, the kubebuilder scaffold, each with its
// tests) against the library of the working tree at root, as a user of
// that release upgrading without an edit would: a removed or changed name
// they use fails it, a deprecated one does not. The tree is the working
// tree's files (git ls-files) but for examples/, which is rev's, in a
// directory of its own under os.TempDir(); modules nested under examples/
// (the kubebuilder scaffold) are vetted too.
func (r Runner) OldExamples(ctx context.Context, root, rev string) error {
	old, err := Tree(ctx, root, rev)
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(old, "examples")); os.IsNotExist(err) {
		return nil // no examples in that release
	}
	dst := filepath.Join(os.TempDir(), "reconcilekit-upgrade-"+filepath.Base(old))
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	files, err := git(ctx, root, "ls-files", "-z")
	if err != nil {
		return err
	}
	for _, f := range strings.Split(strings.TrimRight(string(files), "\x00"), "\x00") {
		if f == "" || strings.HasPrefix(f, "examples/") {
			continue
		}
		// A file deleted from the work tree, not yet committed, is gone.
		if err := copyFile(filepath.Join(root, f), filepath.Join(dst, f)); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	if err := filepath.WalkDir(filepath.Join(old, "examples"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(old, p)
		if err != nil {
			return err
		}
		return copyFile(p, filepath.Join(dst, rel))
	}); err != nil {
		return err
	}
	modules := []string{"."}
	_ = filepath.WalkDir(filepath.Join(dst, "examples"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "go.mod" {
			rel, _ := filepath.Rel(dst, filepath.Dir(p))
			modules = append(modules, rel)
		}
		return nil
	})
	for _, m := range modules {
		pattern := "./examples/..."
		if m != "." {
			pattern = "./..."
			// What `go get` of the new version does to a user's go.mod:
			// the requirements the tree raised (a dependency it added or
			// upgraded) are raised in the example's module too.
			if _, err := r.run(ctx, filepath.Join(dst, m), "mod", "tidy"); err != nil {
				return fmt.Errorf("apicompat: the examples of %s do not resolve against the working tree: %w", rev, err)
			}
		}
		if _, err := r.run(ctx, filepath.Join(dst, m), "vet", pattern); err != nil {
			return fmt.Errorf("apicompat: the examples of %s do not build against the working tree: %w", rev, err)
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
