package requeue_test

import (
	"sync"

	"github.com/go-logr/logr"
)

// logEntry is one recorded log call.
type logEntry struct {
	Error bool
	Level int
	Msg   string
}

// recorder is a logr sink that records every call at every verbosity, so a
// test can check what was logged at which level.
type recorder struct {
	mu      sync.Mutex
	entries []logEntry
}

func (r *recorder) logger() logr.Logger { return logr.New(&recSink{r: r}) }

// errorsWith returns the messages logged at error level that equal msg ("" for all).
func (r *recorder) errorsWith(msg string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.entries {
		if e.Error && (msg == "" || e.Msg == msg) {
			out = append(out, e.Msg)
		}
	}
	return out
}

func (r *recorder) all() []logEntry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]logEntry(nil), r.entries...)
}

type recSink struct{ r *recorder }

func (s *recSink) Init(logr.RuntimeInfo)                {}
func (s *recSink) Enabled(int) bool                     { return true }
func (s *recSink) WithValues(...any) logr.LogSink       { return s }
func (s *recSink) WithName(string) logr.LogSink         { return s }
func (s *recSink) Info(level int, msg string, _ ...any) { s.add(logEntry{Level: level, Msg: msg}) }
func (s *recSink) Error(_ error, msg string, _ ...any)  { s.add(logEntry{Error: true, Msg: msg}) }
func (s *recSink) add(e logEntry) {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	s.r.entries = append(s.r.entries, e)
}
