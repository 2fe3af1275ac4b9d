// Command apicompat is the API-compatibility check of `make test`: it
// compares the exported API of every library package at the last release
// (the last line of .ci/releases) with the working tree, with apidiff, and
// fails when an incompatible change is not named under "## [Unreleased]"
// in CHANGELOG.md's "### Changed" or "### Removed" (docs/releasing.md);
// since v1.0.0, on any incompatible change.
//
//	go run ./internal/cmd/apicompat            # the check
//	go run ./internal/cmd/apicompat -v         # the check, listing every change
//	go run ./internal/cmd/apicompat -old v0.3.0 -new v0.4.0
//	                                           # every change between two releases (or commits), no check
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/reconcilekit/reconcilekit/internal/apicompat"
	"github.com/reconcilekit/reconcilekit/internal/release"
)

func main() {
	root := flag.String("root", ".", "the module's root, a git work tree")
	oldRev := flag.String("old", "", "list the changes since this release (a version of "+release.File+") or commit instead of checking")
	newRev := flag.String("new", "", "with -old: up to this release or commit (default: the working tree)")
	verbose := flag.Bool("v", false, "list every change, compatible ones too")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	code, err := run(ctx, os.Stdout, *root, *oldRev, *newRev, *verbose)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

func run(ctx context.Context, w io.Writer, root, oldRev, newRev string, verbose bool) (int, error) {
	check := apicompat.Check{Root: root}
	if oldRev != "" {
		rels, err := release.ReadFile(filepath.Join(root, release.File))
		if err != nil {
			return 2, err
		}
		changes, err := check.Between(ctx, resolve(rels, oldRev), resolve(rels, newRev))
		if err != nil {
			return 2, err
		}
		list(w, changes)
		return 0, nil
	}
	res, err := check.Run(ctx)
	if err != nil {
		if errors.Is(err, apicompat.ErrNotInHistory) {
			err = fmt.Errorf("%w\nThe API check compares with the last release and cannot run without it (docs/releasing.md).", err)
		}
		return 2, err
	}
	incompatible, compatible := 0, 0
	for _, c := range res.Changes {
		if c.Compatible {
			compatible++
		} else {
			incompatible++
		}
	}
	rel := fmt.Sprintf("%s (%s, %s)", res.Release.Version, res.Release.Commit[:7], res.Release.Date())
	if verbose {
		list(w, res.Changes)
	}
	if len(res.Unnamed) == 0 {
		if apicompat.Stable(res.Release) {
			fmt.Fprintf(w, "apicompat: %s -> working tree: no incompatible change (none may land before a v2); %d compatible\n", rel, compatible)
		} else {
			fmt.Fprintf(w, "apicompat: %s -> working tree: %d incompatible changes, each named under [Unreleased] in CHANGELOG.md; %d compatible\n", rel, incompatible, compatible)
		}
		// What the release's users wrote, as its own examples stand for
		// it, must build without an edit: a moved name keeps an alias.
		if err := check.Runner.OldExamples(ctx, root, res.Release.Commit); err != nil {
			fmt.Fprintln(w, err)
			fmt.Fprintln(w, "A user of the last release must be able to upgrade without an edit beyond what Deprecated notes say: keep the old name working (docs/releasing.md).")
			return 1, nil
		}
		fmt.Fprintf(w, "apicompat: the examples of %s (the At operator, the embedding guide, the kubebuilder scaffold, with their tests) build against the working tree\n", res.Release.Version)
		return 0, nil
	}
	if apicompat.Stable(res.Release) {
		fmt.Fprintf(w, "apicompat: %d incompatible changes since %s; from v1.0.0 on none may land, named or not (each would need a v2, module path .../v2):\n", incompatible, rel)
		for _, c := range res.Unnamed {
			fmt.Fprintf(w, "  %s\n", c)
		}
		fmt.Fprintln(w, "Keep the old name working instead: a // Deprecated: note naming its successor, kept until v2 (docs/releasing.md).")
		return 1, nil
	}
	fmt.Fprintf(w, "apicompat: %d of the %d incompatible changes since %s are not named under \"## [Unreleased]\", \"### %s\" of CHANGELOG.md:\n",
		len(res.Unnamed), incompatible, rel, strings.Join(apicompat.NamingKinds, "\" or \"### "))
	for _, c := range res.Unnamed {
		fmt.Fprintf(w, "  %-60s name `%s` in a row with its migration\n", c, c.Name)
	}
	fmt.Fprintln(w, "docs/releasing.md says how; or keep the old name working (a // Deprecated: alias).")
	return 1, nil
}

// resolve maps a version of the releases file to its commit; any other
// revision is returned as it is.
func resolve(rels []release.Release, rev string) string {
	for _, r := range rels {
		if r.Version == rev {
			return r.Commit
		}
	}
	return rev
}

// list prints changes as apidiff does, incompatible ones first.
func list(w io.Writer, changes []apicompat.Change) {
	for _, compatible := range []bool{false, true} {
		head := "Incompatible changes:"
		if compatible {
			head = "Compatible changes:"
		}
		printed := false
		for _, c := range changes {
			if c.Compatible != compatible {
				continue
			}
			if !printed {
				fmt.Fprintln(w, head)
				printed = true
			}
			fmt.Fprintf(w, "- %s\n", c)
		}
	}
}
