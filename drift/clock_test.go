package drift_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestNoFileReadsTheWallClock: time comes from the Writer's (or the
// detector's) Clock, never from time.Now, so a test can control it.
func TestNoFileReadsTheWallClock(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	clock := regexp.MustCompile(`\btime\.(Now|Since|Until)\(`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if m := clock.Find(b); m != nil {
			t.Errorf("%s reads the clock: %s", f, m)
		}
	}
}
