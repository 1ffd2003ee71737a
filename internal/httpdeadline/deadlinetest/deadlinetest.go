// Package deadlinetest is the peer orch's network deadlines are for, for tests: a loopback listener that accepts
// connections and never answers.
package deadlinetest

import (
	"net"
	"sync"
	"testing"
)

// Silent opens a loopback listener that accepts connections, reads nothing and writes nothing, and returns its
// address (127.0.0.1:PORT). The listener and every connection it accepted are closed when the test ends.
func Silent(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	closed := false
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			if closed {
				c.Close()
			} else {
				conns = append(conns, c)
			}
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		closed = true
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}
