package apicompat

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/reconcilekit/reconcilekit/internal/release"
)

// Check compares the last release's library packages with the working tree
// of the repository at Root, and the incompatible changes with the
// Unreleased section of Root/CHANGELOG.md.
type Check struct {
	Root   string // the module's root and the repository's work tree
	Runner Runner
}

// Result is what a [Check] found.
type Result struct {
	Release release.Release // the release compared with
	Changes []Change        // every change apidiff reports, compatible or not
	Unnamed []Change        // the incompatible changes CHANGELOG.md does not name under Unreleased; since a [Stable] release, every incompatible change
}

// Stable reports whether rel is v1.0.0 or later. From then on no
// incompatible change may land, named or not: each would need a new major
// version, whose module path ends in /v2. A name that moves keeps working,
// deprecated, through the major version.
func Stable(rel release.Release) bool { return release.Compare(rel.Version, "v1.0.0") >= 0 }

// Run compares the last release in Root's releases file with the working
// tree; since a [Stable] release every incompatible change is in
// [Result.Unnamed], whatever CHANGELOG.md says. It fails with [ErrNotInHistory] when the release's commit is not
// in the repository, and when a tag of the release's version names another
// commit than the releases file.
func (c Check) Run(ctx context.Context) (Result, error) {
	rels, err := release.ReadFile(filepath.Join(c.Root, release.File))
	if err != nil {
		return Result{}, err
	}
	last := rels[len(rels)-1]
	if err := tagAgrees(ctx, c.Root, last); err != nil {
		return Result{}, err
	}
	b, err := os.ReadFile(filepath.Join(c.Root, "CHANGELOG.md"))
	if err != nil {
		return Result{}, fmt.Errorf("apicompat: %w", err)
	}
	log, err := release.ParseChangelog(b)
	if err != nil {
		return Result{}, err
	}
	changes, err := c.Between(ctx, last.Commit, "")
	if err != nil {
		return Result{}, fmt.Errorf("apicompat: comparing with %s: %w", last.Version, err)
	}
	unnamed, err := Unnamed(changes, log)
	if err != nil {
		return Result{}, err
	}
	if Stable(last) {
		unnamed = nil
		for _, ch := range changes {
			if !ch.Compatible {
				unnamed = append(unnamed, ch)
			}
		}
	}
	return Result{Release: last, Changes: changes, Unnamed: unnamed}, nil
}

// Between compares the library packages at commit oldRev with those at
// newRev, or with the working tree when newRev is empty.
func (c Check) Between(ctx context.Context, oldRev, newRev string) ([]Change, error) {
	oldDir, err := Tree(ctx, c.Root, oldRev)
	if err != nil {
		return nil, err
	}
	newDir := c.Root
	if newRev != "" {
		if newDir, err = Tree(ctx, c.Root, newRev); err != nil {
			return nil, err
		}
	}
	return c.Runner.Diff(ctx, oldDir, newDir)
}

// Tree returns a directory holding the tree of commit rev of the repository
// at repo: os.TempDir()/reconcilekit-tree-<hash>, unpacked by [Materialise]
// the first time and reused afterwards. The directory's name stays the same
// from run to run so that the go command's build cache, whose keys include
// a package's directory, compiles the release's packages once, not on
// every run. A commit's tree never changes; the directory is written under
// another name and renamed into place complete, so concurrent runs share it
// safely.
func Tree(ctx context.Context, repo, rev string) (string, error) {
	if _, err := git(ctx, repo, "cat-file", "-e", rev+"^{commit}"); err != nil {
		return "", notInHistory(ctx, repo, rev)
	}
	out, err := git(ctx, repo, "rev-parse", "--verify", rev+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("apicompat: %w", err)
	}
	dir := filepath.Join(os.TempDir(), "reconcilekit-tree-"+strings.TrimSpace(string(out)))
	const complete = ".reconcilekit-tree-complete"
	if _, err := os.Stat(filepath.Join(dir, complete)); err == nil {
		return dir, nil
	}
	tmp, err := os.MkdirTemp(os.TempDir(), "reconcilekit-tree-unpacking-")
	if err != nil {
		return "", fmt.Errorf("apicompat: %w", err)
	}
	defer os.RemoveAll(tmp) // empty once renamed
	if err := Materialise(ctx, repo, rev, tmp); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(tmp, complete), nil, 0o644); err != nil {
		return "", fmt.Errorf("apicompat: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, statErr := os.Stat(filepath.Join(dir, complete)); statErr == nil {
			return dir, nil // another run put it there first
		}
		// A directory left incomplete by a killed run: replace it.
		if err := os.RemoveAll(dir); err != nil {
			return "", fmt.Errorf("apicompat: %w", err)
		}
		if err := os.Rename(tmp, dir); err != nil {
			return "", fmt.Errorf("apicompat: %w", err)
		}
	}
	return dir, nil
}

func git(ctx context.Context, repo string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", repo}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// tagAgrees fails when a tag named after the release exists and names
// another commit.
func tagAgrees(ctx context.Context, repo string, rel release.Release) error {
	out, err := git(ctx, repo, "tag", "--list", rel.Version)
	if err != nil || strings.TrimSpace(string(out)) == "" {
		return nil // no such tag in this clone: the releases file is the record
	}
	out, err = git(ctx, repo, "rev-parse", "--verify", "--quiet", "refs/tags/"+rel.Version+"^{commit}")
	if err != nil {
		return fmt.Errorf("apicompat: reading tag %s: %w", rel.Version, err)
	}
	if got := strings.TrimSpace(string(out)); got != rel.Commit {
		return fmt.Errorf("apicompat: tag %s names commit %s, but %s says %s: one of them is wrong", rel.Version, got, release.File, rel.Commit)
	}
	return nil
}

// Materialise writes the tree of commit rev of the repository at repo into
// dst, without touching the repository (git archive, unpacked here). A rev
// that is not in the repository's history fails with [ErrNotInHistory].
func Materialise(ctx context.Context, repo, rev, dst string) error {
	if _, err := git(ctx, repo, "cat-file", "-e", rev+"^{commit}"); err != nil {
		return notInHistory(ctx, repo, rev)
	}
	cmd := exec.CommandContext(ctx, "git", "-C", repo, "archive", "--format=tar", rev)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("apicompat: git archive: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("apicompat: git archive: %w", err)
	}
	untarErr := untar(pipe, dst)
	_, _ = io.Copy(io.Discard, pipe)
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("apicompat: git archive %s: %w: %s", rev, err, strings.TrimSpace(stderr.String()))
	}
	if untarErr != nil {
		return fmt.Errorf("apicompat: unpacking %s: %w", rev, untarErr)
	}
	return nil
}

func notInHistory(ctx context.Context, repo, rev string) error {
	hint := "fetch it (git fetch origin " + rev + ") or fix " + release.File
	if out, err := git(ctx, repo, "rev-parse", "--is-shallow-repository"); err == nil && strings.TrimSpace(string(out)) == "true" {
		hint = "this clone is shallow: git fetch --unshallow"
	}
	return fmt.Errorf("%w: %s is not a commit of %s; %s", ErrNotInHistory, rev, repo, hint)
}

func untar(r io.Reader, dst string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.FromSlash(h.Name)
		if !filepath.IsLocal(name) {
			return fmt.Errorf("entry %q leaves the tree", h.Name)
		}
		p := filepath.Join(dst, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode)&0o777|0o600)
			if err != nil {
				return err
			}
			if _, err := io.Copy(f, tr); err != nil {
				f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if err := os.Symlink(h.Linkname, p); err != nil {
				return err
			}
		}
	}
}
