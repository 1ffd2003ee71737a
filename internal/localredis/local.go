package localredis

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"strconv"

	"github.com/alicebob/miniredis/v2/server"
)

// local runs commands on the miniredis server in process, with no connection: the replies are collected in memory
// and parsed. It works whether or not the server listens, so the last save after it stopped serving reads the same
// way as every other save, and a large reply never waits on a socket.
type local struct {
	srv  *server.Server
	peer *server.Peer
	out  bytes.Buffer
}

func newLocal(srv *server.Server) *local {
	l := &local{srv: srv}
	l.peer = server.NewPeer(bufio.NewWriter(&l.out))
	l.peer.ClientName = internalClient // not a change to the store (see the pre-hook in startOwner)
	return l
}

// run dispatches the commands in order and returns one reply for each.
func (l *local) run(cmds ...[]string) ([]reply, error) {
	for _, c := range cmds {
		l.srv.Dispatch(l.peer, c)
	}
	l.peer.Flush()
	defer func() { l.out = bytes.Buffer{} }() // a save's replies are the size of the store: do not keep them
	p := parser{data: l.out.Bytes()}
	out := make([]reply, len(cmds))
	for i := range out {
		var err error
		if out[i], err = p.next(); err != nil {
			return nil, fmt.Errorf("reading the reply to %s: %w", cmds[i][0], err)
		}
	}
	return out, nil
}

// reply is a RESP2 reply.
type reply struct {
	kind byte    // '+' status, '-' error, ':' integer, '$' bulk string, '*' array
	str  string  // status, error or bulk string
	n    int64   // integer
	arr  []reply // array
	null bool    // null bulk string or array
}

func (r reply) err() error {
	if r.kind == '-' {
		return errors.New(r.str)
	}
	return nil
}

// strings returns an array of bulk strings.
func (r reply) strings() ([]string, error) {
	if err := r.err(); err != nil {
		return nil, err
	}
	if r.kind != '*' {
		return nil, fmt.Errorf("expected an array, got %q", r.kind)
	}
	out := make([]string, len(r.arr))
	for i, e := range r.arr {
		if e.kind != '$' && e.kind != '+' {
			return nil, fmt.Errorf("expected a string, got %q", e.kind)
		}
		out[i] = e.str
	}
	return out, nil
}

type parser struct {
	data []byte
	pos  int
}

var errShort = errors.New("reply cut short")

func (p *parser) line() (string, error) {
	i := bytes.Index(p.data[p.pos:], []byte("\r\n"))
	if i < 0 {
		return "", errShort
	}
	s := string(p.data[p.pos : p.pos+i])
	p.pos += i + 2
	return s, nil
}

func (p *parser) next() (reply, error) {
	if p.pos >= len(p.data) {
		return reply{}, errShort
	}
	kind := p.data[p.pos]
	p.pos++
	l, err := p.line()
	if err != nil {
		return reply{}, err
	}
	r := reply{kind: kind}
	switch kind {
	case '+', '-':
		r.str = l
	case ':':
		r.n, err = strconv.ParseInt(l, 10, 64)
	case '$':
		var n int
		if n, err = strconv.Atoi(l); err != nil || n < 0 {
			r.null = true
			break
		}
		if p.pos+n+2 > len(p.data) {
			return r, errShort
		}
		r.str = string(p.data[p.pos : p.pos+n])
		p.pos += n + 2
	case '*':
		var n int
		if n, err = strconv.Atoi(l); err != nil || n < 0 {
			r.null = true
			break
		}
		r.arr = make([]reply, n)
		for i := range r.arr {
			if r.arr[i], err = p.next(); err != nil {
				return r, err
			}
		}
	default:
		return r, fmt.Errorf("unexpected reply type %q", kind)
	}
	return r, err
}
