package sandbox

import (
	"bytes"
	"fmt"
)

// What orch keeps of a process's stdout has a fixed size, whatever the process prints: an agent in a loop, a binary
// file sent to its stdout or a line that never ends cost orch no more memory than the bounds below. Stdout is read
// twice over, as it comes: line by line for the caller (the agent's parser), and as a whole for Result.Stdout.
const (
	// MaxLine is the longest line handed to the caller; a longer one is handed over cut to its first MaxLine bytes,
	// and the rest of it, up to its newline, is counted, never held. Claude Code's stream-json puts each message on
	// one line, and the lines orch must read whole are the ones the model writes: an assistant message, a tool call's
	// input, and the final result line, which holds the agent's whole answer. A model writes at most its output-token
	// limit per message (64k to 128k tokens: 256 to 512 KiB of English, about 1 MiB as JSON when it is all newlines
	// and quotes to escape), so 4 MiB keeps every such line whole four times over. The lines it cuts are tool
	// results holding a large file or an image (base64; the API takes up to 5 MB per image), where orch only looks
	// for its hook's refusal, which a refusal's own short line carries. The bound is also what keeps orch's memory
	// flat: decoding a line costs the claude parser about five times its length for a moment (encoding/json copies
	// every value it decodes, and the parser decodes fields one by one), so 200 MB of 4 MiB lines peak at about
	// 120 MB of resident memory where 8 MiB lines reached 180 MB (bench: run_rss_200mb_output_mb).
	MaxLine = 4 << 20
	// keptHead and keptTail are how much of the start and of the end of stdout Result.Stdout keeps; the middle of a
	// longer output is counted, not stored. The parser has read every line by the end, so what is kept is for a
	// person or a test to look at: a whole transcript of ordinary size (4 MiB is thousands of stream-json lines, or
	// the whole output of any ordinary CLI), the start and the end of a larger one.
	keptHead = 2 << 20
	keptTail = 2 << 20
)

// output is the stdout of one process: it hands each line (without its newline, cut to MaxLine) to fn as it is
// printed, and keeps the first keptHead and the last keptTail bytes. At most MaxLine+keptHead+keptTail bytes are held,
// whatever the process prints.
type output struct {
	fn    func([]byte)
	total int64  // bytes written
	head  []byte // the first keptHead bytes
	tail  ring   // the last keptTail bytes after head
	line  []byte // the start of the line being printed, when it did not come in one write
	// cutting is set once the line being printed has passed MaxLine: its start went to fn, the rest is counted.
	cutting  bool
	linesCut int
	bytesCut int64
}

func newOutput(fn func([]byte)) *output {
	return &output{fn: fn, tail: ring{size: keptTail}}
}

func (o *output) Write(p []byte) (int, error) {
	o.keep(p)
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		seg := p
		if i >= 0 {
			seg = p[:i]
		}
		switch {
		case o.cutting:
			o.bytesCut += int64(len(seg))
		case len(o.line) == 0 && i >= 0 && len(seg) <= MaxLine:
			o.deliver(seg) // a whole line in one write: handed over where it lies
		default:
			room := MaxLine - len(o.line)
			if len(seg) > room {
				o.line = appendBounded(o.line, seg[:room], MaxLine)
				o.bytesCut += int64(len(seg) - room)
				o.linesCut++
				o.cutting = true
				o.deliver(o.line)
				o.line = o.line[:0]
			} else {
				o.line = appendBounded(o.line, seg, MaxLine)
				if i >= 0 {
					o.deliver(o.line)
					o.line = o.line[:0]
				}
			}
		}
		if i < 0 {
			break
		}
		o.cutting = false // the newline ends the line, cut or not
		p = p[i+1:]
	}
	return n, nil
}

func (o *output) deliver(line []byte) {
	if o.fn != nil {
		o.fn(line)
	}
}

// keep adds p to what Result.Stdout holds.
func (o *output) keep(p []byte) {
	o.total += int64(len(p))
	if room := keptHead - len(o.head); room > 0 {
		k := min(room, len(p))
		o.head = appendBounded(o.head, p[:k], keptHead)
		p = p[k:]
	}
	o.tail.write(p)
}

// flush hands over a last line that had no newline, unless it was cut (its start is already handed over).
func (o *output) flush() {
	if len(o.line) > 0 && !o.cutting {
		o.deliver(o.line)
	}
	o.line = o.line[:0]
	o.cutting = false
}

// notKept is how many bytes Result.Stdout leaves out.
func (o *output) notKept() int64 {
	return o.total - int64(len(o.head)) - int64(o.tail.len())
}

// kept is Result.Stdout: everything printed when it fits, else its start and its end with a line between them that
// says how many bytes were left out.
func (o *output) kept() []byte {
	var marker string
	if n := o.notKept(); n > 0 {
		marker = fmt.Sprintf("\n[… %d bytes of output not kept …]\n", n)
	}
	out := make([]byte, 0, len(o.head)+len(marker)+o.tail.len())
	out = append(out, o.head...)
	out = append(out, marker...)
	return o.tail.appendTo(out)
}

// fill records in res what the process printed and what was kept of it.
func (o *output) fill(res *Result) {
	res.Stdout = o.kept()
	res.StdoutBytes = o.total
	res.StdoutNotKept = o.notKept()
	res.LinesCut = o.linesCut
	res.LineBytesCut = o.bytesCut
}

// appendBounded appends p to b, growing b's array at most to limit bytes: append alone may give it more room than
// the bound.
func appendBounded(b, p []byte, limit int) []byte {
	if need := len(b) + len(p); need > cap(b) {
		nb := make([]byte, len(b), min(max(2*cap(b), need, 4096), max(limit, need)))
		copy(nb, b)
		b = nb
	}
	return append(b, p...)
}

// ring keeps the last size bytes written to it. Its array is made at the first write: most processes print less
// than keptHead, and never need one.
type ring struct {
	size int
	buf  []byte
	next int  // where the next byte goes
	full bool // buf has wrapped: it holds size bytes, the oldest at next
}

func (r *ring) write(p []byte) {
	if len(p) == 0 {
		return
	}
	if r.buf == nil {
		r.buf = make([]byte, r.size)
	}
	if len(p) >= r.size {
		copy(r.buf, p[len(p)-r.size:])
		r.next, r.full = 0, true
		return
	}
	n := copy(r.buf[r.next:], p)
	if n < len(p) {
		copy(r.buf, p[n:])
	}
	end := r.next + len(p)
	if end >= r.size {
		r.full = true
	}
	r.next = end % r.size
}

func (r *ring) len() int {
	if r.full {
		return r.size
	}
	return r.next
}

// appendTo appends what the ring holds, oldest first, to b.
func (r *ring) appendTo(b []byte) []byte {
	if !r.full {
		return append(b, r.buf[:r.next]...)
	}
	return append(append(b, r.buf[r.next:]...), r.buf[:r.next]...)
}
