package main

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/go-logr/logr"
)

// quietStop is a log sink that keeps the demo's shutdown quiet: once stopping
// is set, an error that is only a canceled context (an event the recorder
// was still writing when the manager stopped, a watch cut short) is dropped.
// Every other line, before and after, goes through unchanged.
type quietStop struct {
	logr.LogSink
	stopping *atomic.Bool
}

// Error drops a canceled context's error once the demo is stopping.
func (q quietStop) Error(err error, msg string, keysAndValues ...any) {
	if q.stopping.Load() && errors.Is(err, context.Canceled) {
		return
	}
	q.LogSink.Error(err, msg, keysAndValues...)
}

// WithValues keeps the filter on the derived logger.
func (q quietStop) WithValues(keysAndValues ...any) logr.LogSink {
	return quietStop{LogSink: q.LogSink.WithValues(keysAndValues...), stopping: q.stopping}
}

// WithName keeps the filter on the derived logger.
func (q quietStop) WithName(name string) logr.LogSink {
	return quietStop{LogSink: q.LogSink.WithName(name), stopping: q.stopping}
}
