// Package httpdeadline gives orch's HTTP clients their deadlines, so that a peer that accepts a connection and then
// says nothing (a proxy that swallows requests, a server wedged behind its load balancer, a firewall that drops
// packets) is an error that names it within a minute, never a hang.
//
// Each phase of a request has its bound: the connection, the TLS handshake, the wait for the response's header; and
// on top of them a request that is not a stream has a bound on the whole, body included. A stream (server-sent
// events, a long answer read as it comes) has no bound on the whole, since it lasts as long as it has something to
// say: instead it may not fall silent for longer than its idle bound, from the request on.
package httpdeadline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// The bounds orch's clients use unless told otherwise.
const (
	// Connect bounds the TCP connection, DNS included.
	Connect = 10 * time.Second
	// TLSHandshake bounds the TLS handshake once connected.
	TLSHandshake = 10 * time.Second
	// ResponseHeader bounds the wait for the response's header once the request is sent.
	ResponseHeader = 30 * time.Second
	// Request bounds a whole request that is not a stream: every API orch calls answers well within it.
	Request = 30 * time.Second
	// Idle bounds a stream's silence.
	Idle = 30 * time.Second
)

// ErrIdle is wrapped by the error of a stream whose peer stayed silent for longer than its idle bound.
var ErrIdle = errors.New("silent for too long")

// Transport is http.DefaultTransport's behaviour (proxies from the environment, HTTP/2, keep-alive) with the
// connection and TLS handshake bounded, and the wait for a response's header bounded by header (ResponseHeader when
// 0).
func Transport(header time.Duration) *http.Transport {
	if header <= 0 {
		header = ResponseHeader
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = (&net.Dialer{Timeout: Connect, KeepAlive: 30 * time.Second}).DialContext
	t.TLSHandshakeTimeout = TLSHandshake
	t.ResponseHeaderTimeout = header
	return t
}

// Client is a client for requests that are not streams: each is bounded by total (Request when 0), body included,
// besides the bounds of Transport. Its errors are net/http's, which name the request's URL: where the URL is a
// secret, the caller names the peer its own way.
func Client(total time.Duration) *http.Client {
	if total <= 0 {
		total = Request
	}
	return &http.Client{Timeout: total, Transport: Transport(min(total, ResponseHeader))}
}

// StreamClient is a client for streams: no bound on a whole request, but the peer may not stay silent for longer
// than idle (Idle when 0) — before the response's header, nor between two reads of its body. A stream that falls
// silent fails with an error that wraps ErrIdle and names the peer's host.
func StreamClient(idle time.Duration) *http.Client {
	if idle <= 0 {
		idle = Idle
	}
	return &http.Client{Transport: &idleTransport{next: Transport(idle), idle: idle, afterFunc: realAfterFunc}}
}

// idleTransport cancels a request whose peer is silent for longer than idle.
type idleTransport struct {
	next      http.RoundTripper
	idle      time.Duration
	afterFunc func(d time.Duration, f func()) timer // time.AfterFunc; tests drive their own
}

// timer is the part of *time.Timer a watch uses.
type timer interface {
	Reset(d time.Duration) bool
	Stop() bool
}

func realAfterFunc(d time.Duration, f func()) timer { return time.AfterFunc(d, f) }

func (t *idleTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	w := &watch{cancel: cancel, err: fmt.Errorf("%w: nothing from %s for %s", ErrIdle, req.URL.Host, t.idle), idle: t.idle}
	w.timer = t.afterFunc(t.idle, w.fire)
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		w.stop()
		// The transport's own bound on the header is the same silence (Transport(idle)): whichever timer saw it
		// first, the caller learns that the peer said nothing.
		var ne net.Error
		if w.hasFired() || errors.As(err, &ne) && ne.Timeout() && req.Context().Err() == nil {
			return nil, w.err
		}
		return nil, err
	}
	w.kick()
	resp.Body = &watchedBody{rc: resp.Body, w: w}
	return resp, nil
}

// watch is one request's idle timer.
type watch struct {
	mu     sync.Mutex
	timer  timer
	idle   time.Duration
	fired  bool
	done   bool
	cancel context.CancelFunc
	err    error
}

func (w *watch) fire() {
	w.mu.Lock()
	if !w.done {
		w.fired = true
	}
	w.mu.Unlock()
	w.cancel()
}

// kick restarts the timer: the peer said something.
func (w *watch) kick() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done && !w.fired {
		w.timer.Reset(w.idle)
	}
}

// stop ends the watch and releases the request's context.
func (w *watch) stop() {
	w.mu.Lock()
	w.done = true
	w.timer.Stop()
	w.mu.Unlock()
	w.cancel()
}

func (w *watch) hasFired() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.fired
}

// watchedBody restarts the timer on every read that brings data, and turns the cancellation of a silent stream into
// an error that says so.
type watchedBody struct {
	rc io.ReadCloser
	w  *watch
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 {
		b.w.kick()
	}
	if err != nil && err != io.EOF && b.w.hasFired() {
		err = b.w.err
	}
	return n, err
}

func (b *watchedBody) Close() error {
	err := b.rc.Close()
	b.w.stop()
	return err
}
