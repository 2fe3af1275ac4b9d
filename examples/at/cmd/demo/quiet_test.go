package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
)

// TestQuietStopDropsOnlyCanceledErrorsOnceStopping proves the demo's
// shutdown filter: before the demo stops every error is logged; once it
// stops, an error that wraps context.Canceled (the event recorder's
// "Unable to write event" as the manager stops) is dropped, also through
// derived loggers, and every other error and info line still is logged.
func TestQuietStopDropsOnlyCanceledErrorsOnceStopping(t *testing.T) {
	var lines []string
	var stopping atomic.Bool
	base := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{})
	log := logr.New(quietStop{LogSink: base.GetSink(), stopping: &stopping}).WithName("events").WithValues("k", "v")
	canceled := fmt.Errorf("write event: %w", context.Canceled)

	log.Error(canceled, "before")
	stopping.Store(true)
	log.Error(canceled, "dropped")
	log.Error(errors.New("boom"), "after")
	log.Info("info")
	if len(lines) != 3 {
		t.Fatalf("logged %d lines, want 3 (before, after, info): %q", len(lines), lines)
	}
	for i, want := range []string{`"before"`, `"after"`, `"info"`} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("line %d = %s, want %s in it", i, lines[i], want)
		}
	}
}

func contains(s, sub string) bool {
	return len(sub) == 0 || (len(s) >= len(sub) && (s[:len(sub)] == sub || contains(s[1:], sub)))
}
