// Package outage cuts a client off its API server for a while, as an
// outage of the API server looks from the client's side: while the
// Switch is off, every request fails as a refused connection does, and
// every response being read (a watch) ends. Informers then lose their
// watches and retry with backoff; once the Switch is on again they watch
// or list again, and learn what changed meanwhile (deletions included)
// only from that.
//
// It is test plumbing for the repository's own tests: cheaper than
// stopping a kube-apiserver (internal/restart), and it cuts one client,
// not every test sharing the server.
package outage

import (
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"syscall"

	"k8s.io/client-go/rest"
)

// Switch is on (requests pass) until [Switch.Cut]. The zero value is on.
type Switch struct {
	mu     sync.Mutex
	down   bool
	open   map[*body]struct{}
	failed int
}

// Config returns a copy of cfg whose requests go through s.
func (s *Switch) Config(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Wrap(s.Wrap)
	return c
}

// Wrap returns rt with its requests going through s.
func (s *Switch) Wrap(rt http.RoundTripper) http.RoundTripper {
	return &transport{s: s, next: rt}
}

// Cut turns s off: requests fail from now on, and responses being read
// end with an error.
func (s *Switch) Cut() {
	s.mu.Lock()
	s.down = true
	open := s.open
	s.open = nil
	s.mu.Unlock()
	for b := range open {
		b.cut()
	}
}

// Restore turns s on again.
func (s *Switch) Restore() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = false
}

// Failed returns how many requests failed because s was off.
func (s *Switch) Failed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}

// refused is the error of a request while s is off: what dialing a
// stopped server returns.
func refused(req *http.Request) error {
	return &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
}

type transport struct {
	s    *Switch
	next http.RoundTripper
}

// RoundTrip fails while the switch is off, and otherwise sends the request
// and keeps its response's body so that a cut can end it.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.s.mu.Lock()
	if t.s.down {
		t.s.failed++
		t.s.mu.Unlock()
		return nil, refused(req)
	}
	t.s.mu.Unlock()
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	b := &body{ReadCloser: resp.Body, s: t.s}
	t.s.mu.Lock()
	if t.s.down {
		t.s.mu.Unlock()
		resp.Body.Close()
		return nil, refused(req)
	}
	if t.s.open == nil {
		t.s.open = map[*body]struct{}{}
	}
	t.s.open[b] = struct{}{}
	t.s.mu.Unlock()
	resp.Body = b
	return resp, nil
}

// WrappedRoundTripper returns the transport it wraps, for client-go.
func (t *transport) WrappedRoundTripper() http.RoundTripper { return t.next }

// body is a response body a cut ends.
type body struct {
	io.ReadCloser
	s *Switch

	mu     sync.Mutex
	cutOff bool
}

func (b *body) cut() {
	b.mu.Lock()
	b.cutOff = true
	b.mu.Unlock()
	_ = b.ReadCloser.Close()
}

// Read reads the response, or fails once the switch was cut.
func (b *body) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.mu.Lock()
	cut := b.cutOff
	b.mu.Unlock()
	if cut {
		return n, io.ErrUnexpectedEOF
	}
	return n, err
}

// Close closes the body and forgets it.
func (b *body) Close() error {
	b.s.mu.Lock()
	delete(b.s.open, b)
	b.s.mu.Unlock()
	return b.ReadCloser.Close()
}
