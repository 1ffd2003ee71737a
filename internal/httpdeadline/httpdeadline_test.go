package httpdeadline

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orchrun/orch/internal/httpdeadline/deadlinetest"
)

// guard bounds a call that must end on its own deadline: it is no assertion of speed, only a stop to a hang.
func guard(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestClientNamesASilentPeer(t *testing.T) {
	addr := deadlinetest.Silent(t)
	req, _ := http.NewRequestWithContext(guard(t), http.MethodPost, "http://"+addr+"/api/x", strings.NewReader("{}"))
	_, err := Client(200 * time.Millisecond).Do(req)
	if err == nil || !strings.Contains(err.Error(), addr) {
		t.Fatalf("error %v, want one naming %s", err, addr)
	}
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("error %v is no timeout", err)
	}
}

func TestStreamClientNamesASilentPeer(t *testing.T) {
	addr := deadlinetest.Silent(t)
	req, _ := http.NewRequestWithContext(guard(t), http.MethodGet, "http://"+addr+"/events", nil)
	_, err := StreamClient(200 * time.Millisecond).Do(req)
	if !errors.Is(err, ErrIdle) || !strings.Contains(err.Error(), addr) {
		t.Fatalf("error %v, want ErrIdle naming %s", err, addr)
	}
}

// A stream whose header came and whose body then falls silent fails on the read that waits.
func TestStreamClientSilenceAfterTheHeader(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	release := make(chan struct{})
	defer close(release)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		http.ReadRequest(bufio.NewReader(c))
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
		<-release
	}()
	req, _ := http.NewRequestWithContext(guard(t), http.MethodGet, "http://"+ln.Addr().String()+"/events", nil)
	resp, err := StreamClient(200 * time.Millisecond).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if string(got) != "hello" || !errors.Is(err, ErrIdle) || !strings.Contains(err.Error(), ln.Addr().String()) {
		t.Fatalf("read %q, %v; want hello then ErrIdle naming the peer", got, err)
	}
}

// fakeTimer counts the restarts of a watch's timer; it fires only when the test says.
type fakeTimer struct {
	mu     sync.Mutex
	resets int
	f      func()
}

func (f *fakeTimer) Reset(time.Duration) bool { f.mu.Lock(); f.resets++; f.mu.Unlock(); return true }
func (f *fakeTimer) Stop() bool               { return true }

// Every read that brings data restarts the idle timer, so a stream that keeps talking is never cut, however long it
// lasts; and the timer firing cancels the read in progress.
func TestStreamClientRestartsOnData(t *testing.T) {
	next := make(chan string)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		for s := range next {
			io.WriteString(w, s)
			w.(http.Flusher).Flush()
		}
		<-r.Context().Done()
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()

	ft := &fakeTimer{}
	tr := &idleTransport{next: Transport(0), idle: time.Minute, afterFunc: func(_ time.Duration, f func()) timer { ft.f = f; return ft }}
	req, _ := http.NewRequestWithContext(guard(t), http.MethodGet, "http://"+ln.Addr().String()+"/events", nil)
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 64)
	for i, s := range []string{"one", "two", "three"} {
		next <- s
		n, err := resp.Body.Read(buf)
		if err != nil || string(buf[:n]) != s {
			t.Fatalf("read %q, %v; want %q", buf[:n], err, s)
		}
		ft.mu.Lock()
		resets := ft.resets
		ft.mu.Unlock()
		if resets != i+2 { // one when the header came, one per read with data
			t.Fatalf("after %d reads the timer was restarted %d times, want %d", i+1, resets, i+2)
		}
	}
	close(next)
	ft.f() // the peer is now silent for the whole bound
	if _, err := resp.Body.Read(buf); !errors.Is(err, ErrIdle) {
		t.Fatalf("a read after the bound passed: %v, want ErrIdle", err)
	}
}

func TestDefaultsAreWithinAMinute(t *testing.T) {
	c := Client(0)
	tr := c.Transport.(*http.Transport)
	for name, d := range map[string]time.Duration{"total": c.Timeout, "header": tr.ResponseHeaderTimeout, "tls": tr.TLSHandshakeTimeout} {
		if d <= 0 || d > time.Minute {
			t.Errorf("Client(0): %s bound %v, want within a minute", name, d)
		}
	}
	s := StreamClient(0).Transport.(*idleTransport)
	if s.idle <= 0 || s.idle > time.Minute || s.next.(*http.Transport).ResponseHeaderTimeout > time.Minute {
		t.Errorf("StreamClient(0): idle %v", s.idle)
	}
}
