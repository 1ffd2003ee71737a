package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// maxLine is the longest line the sandbox hands a parser (sandbox.MaxLine).
const maxLine = 4 << 20

// What a parser may hold after one of the streams below: its texts (three of 1.5 MiB at most), errors and maps fill
// a few megabytes; the calls it remembers (maxCallBytes) or a value it gathers over lines (maxPending) add theirs.
// Each stream makes a parser without these bounds hold twice as much or more.
const (
	holdsLittle = 4 << 20
	holdsCalls  = maxCallBytes + holdsLittle
	holdsValue  = maxPending + holdsLittle
)

// A parser holds a bounded amount of memory whatever the agent prints: every stream here is lines an agent can print
// (each within the sandbox's line bound), over and over.
func TestParsersHoldBoundedMemory(t *testing.T) {
	kb := strings.Repeat("x", 1000)
	long := strings.Repeat("e", maxErrorLen)
	input := strings.Repeat("i", 100_000)
	id := strings.Repeat("m", 250) // long, for an id: it is the map that must stay bounded, not the ids in it
	big := strings.Repeat("b", 3<<20)
	tests := []struct {
		name   string
		parser func() Parser
		lines  int
		line   func(i int) string
		limit  int64
	}{
		{"claude: an error message per line", claude, 2500, func(i int) string {
			return fmt.Sprintf(`{"type":"assistant","error":"rate_limit %d %s","message":{"content":[{"type":"text","text":"t"}]}}`, i, long)
		}, holdsLittle},
		{"claude: a retry storm of distinct errors", claude, 1500, func(i int) string {
			return fmt.Sprintf(`{"type":"system","subtype":"api_retry","error_status":500,"error":"e%d %s","attempt":1}`, i, long)
		}, holdsLittle},
		{"claude: a result line of 30,000 errors", claude, 1, func(i int) string {
			var b strings.Builder
			b.WriteString(`{"type":"result","subtype":"error_during_execution","is_error":true,"errors":[`)
			for j := range 30_000 {
				if j > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `"%d-%d %s"`, i, j, kb[:100])
			}
			b.WriteString("]}")
			return b.String()
		}, holdsLittle},
		{"claude: a message id per line", claude, 30_000, func(i int) string {
			return fmt.Sprintf(`{"type":"assistant","message":{"id":"%s%d","usage":{"input_tokens":1,"output_tokens":2},"content":[]}}`, id, i)
		}, holdsLittle},
		{"claude: tool calls with 100 KB inputs", claude, 170, func(i int) string {
			return fmt.Sprintf(`{"type":"assistant","message":{"content":[{"type":"tool_use","id":"toolu_%d","name":"Write","input":{"content":"%s"}}]}}`, i, input)
		}, holdsCalls},
		{"claude: a pretty-printed value that never closes", claude, 25_000, func(i int) string {
			if i == 0 {
				return "{"
			}
			return fmt.Sprintf(`  "k%d": "%s",`, i, kb)
		}, holdsValue},
		{"claude: identifiers of megabytes", claude, 4, func(i int) string {
			return [...]string{
				`{"type":"system","subtype":"init","session_id":"s","model":"` + big + `"}`,
				`{"type":"system","subtype":"init","claude_code_version":"` + big + `"}`,
				`{"type":"assistant","message":{"model":"` + big + `","content":[]}}`,
				`{"type":"user","session_id":"` + big + `","message":{"content":[]}}`,
			}[i]
		}, holdsLittle},
		{"codex: an error event per line", plain, 10_000, func(i int) string {
			return fmt.Sprintf(`{"type":"error","message":"e%d %s"}`, i, kb)
		}, holdsLittle},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.parser()
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for i := range tt.lines {
				line := tt.line(i)
				if len(line) > maxLine {
					t.Fatalf("line %d is %d bytes: the sandbox hands over at most %d", i, len(line), maxLine)
				}
				p.Line([]byte(line))
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
			r := p.Finish(1, nil)
			runtime.KeepAlive(p)
			if held > tt.limit {
				t.Errorf("the parser holds %d MiB after the stream, want at most %d", held>>20, tt.limit>>20)
			}
			if len(r.Errors) > maxErrorsKept+10 || len(r.Text) > maxKeptText+(maxErrorsKept+10)*(maxErrorLen+8) {
				t.Errorf("%d errors, %d bytes of text", len(r.Errors), len(r.Text))
			}
		})
	}
}

func claude() Parser { return newClaudeParser() }
func plain() Parser  { return &plainParser{} }

// The errors kept say how many more there were.
func TestParserCountsErrorsNotKept(t *testing.T) {
	p := newClaudeParser()
	for i := range maxErrorsKept + 10 {
		p.Line(fmt.Appendf(nil, `{"type":"assistant","error":"error %d","message":{"content":[]}}`, i))
	}
	p.Line([]byte(`{"type":"assistant","error":"error 0","message":{"content":[]}}`)) // kept already
	r := p.Finish(0, nil)
	if r.Errors[0] != "error 0" || r.Errors[maxErrorsKept-1] != fmt.Sprint("error ", maxErrorsKept-1) ||
		r.Errors[maxErrorsKept] != "10 more error reports not kept" {
		t.Errorf("errors: %q", r.Errors)
	}
}

// Usage summed past the messages kept by id is still counted once per message.
func TestParserFoldsUsageOfManyMessages(t *testing.T) {
	p := newClaudeParser()
	const n = 2*maxMessagesKept + 7
	for i := range n {
		for range 2 { // the CLI repeats a message's usage on each of its content lines
			p.Line(fmt.Appendf(nil, `{"type":"assistant","message":{"id":"msg_%d","usage":{"input_tokens":1,"output_tokens":2},"content":[]}}`, i))
		}
	}
	r := p.Finish(0, nil)
	if r.NumTurns != n || r.InputTokens != n || r.OutputTokens != 2*n || len(p.msgUsage) > maxMessagesKept {
		t.Errorf("turns %d, tokens %d in %d out, %d kept by id; want %d turns", r.NumTurns, r.InputTokens,
			r.OutputTokens, len(p.msgUsage), n)
	}
}

// The calls refused are the latest ones, with their inputs, however many came before; and they are bounded too.
func TestParserRemembersTheLatestCalls(t *testing.T) {
	call := func(i int, input string) []byte {
		return fmt.Appendf(nil, `{"type":"assistant","message":{"content":[{"type":"tool_use","id":"toolu_%d","name":"Bash","input":{"command":"echo %d %s"}}]}}`, i, i, input)
	}
	refusal := func(i int) []byte {
		return fmt.Appendf(nil, `{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"toolu_%d","is_error":true,"content":"%s"}]}}`, i, ApprovalMarker)
	}
	for name, tt := range map[string]struct {
		calls int
		input string
	}{
		"more calls than kept":       {2 * maxCallsKept, "x"},
		"more input bytes than kept": {5, strings.Repeat("i", maxCallBytes/4)},
	} {
		t.Run(name, func(t *testing.T) {
			p := newClaudeParser()
			for i := range tt.calls {
				p.Line(call(i, tt.input))
			}
			last := tt.calls - 1
			p.Line(refusal(last))
			r := p.Finish(0, nil)
			if len(r.Denied) != 1 || r.Denied[0].Tool != "Bash" || !strings.Contains(string(r.Denied[0].Input), fmt.Sprint("echo ", last)) {
				t.Fatalf("denied: %d calls, first %.60v", len(r.Denied), r.Denied)
			}
			if p.callBytes > maxCallBytes || len(p.calls) > maxCallsKept || len(p.calls) != len(p.callOrder) {
				t.Errorf("%d calls of %d bytes remembered", len(p.calls), p.callBytes)
			}
		})
	}

	many := newClaudeParser()
	for i := range 10 * maxDeniedKept {
		many.Line(refusal(i))
	}
	if r := many.Finish(0, nil); len(r.Denied) != maxDeniedKept {
		t.Errorf("%d refused calls reported, want %d", len(r.Denied), maxDeniedKept)
	}
}

// A line the sandbox cut (at most its first maxLine bytes, the JSON unfinished) is read as the parsers read any line
// they do not understand: kept as text and counted, never fatal; the lines after it are read as before.
func TestParsersReadCutLines(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "claude", "02_stream_claude-2.1.63.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	whole := newClaudeParser()
	feed(t, whole, bytes.NewReader(data))
	want := whole.Finish(0, nil)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	for i, line := range lines {
		for _, at := range []int{1, 2, len(line) / 3, len(line) / 2, len(line) - 1} {
			t.Run(strconv.Itoa(i)+"/"+strconv.Itoa(at), func(t *testing.T) {
				p := newClaudeParser()
				for j, l := range lines {
					if j == i {
						l = l[:at]
					}
					p.Line([]byte(l))
				}
				r := p.Finish(0, nil)
				if r.Unknown < 1 {
					t.Errorf("the cut line was not counted: %+v", r)
				}
				if i == len(lines)-1 {
					if r.Success || !strings.Contains(strings.Join(r.Errors, "\n"), "no result line") {
						t.Errorf("a cut result line read as a result: success %v, errors %q", r.Success, r.Errors)
					}
				} else if !r.Success || r.Text != want.Text || r.SessionID != want.SessionID {
					t.Errorf("after a cut line: success %v, session %q, text %.60q", r.Success, r.SessionID, r.Text)
				}

				alone := newClaudeParser()
				alone.Line([]byte(line[:at]))
				if r := alone.Finish(0, nil); r.Unknown != 1 || !strings.Contains(r.Text, strings.TrimSpace(line[:at])) {
					t.Errorf("the cut line alone: %d unknown, text %.60q", r.Unknown, r.Text)
				}
			})
		}
	}

	t.Run("plain", func(t *testing.T) {
		line := `{"type":"item.completed","item":{"id":"item_3","type":"agent_message","text":"Yep"}}`
		for at := 1; at < len(line); at += 7 {
			p := &plainParser{}
			p.Line([]byte(line[:at]))
			p.Line([]byte("after"))
			if r := p.Finish(0, nil); r.Text != line[:at]+"\nafter" || !r.Success {
				t.Errorf("cut at %d: %+v", at, r)
			}
		}
	})
}

// A text of megabytes written at once costs what boundedText keeps, not its length: the tail's array is not grown to
// hold the whole of it first.
func TestBoundedTextHoldsNoMoreThanItKeeps(t *testing.T) {
	var b boundedText
	b.WriteString("head ")
	b.WriteString(strings.Repeat("a", 4<<20) + "end")
	if c := cap(b.head) + cap(b.tail); c > maxKeptText+4096 {
		t.Fatalf("holds %d bytes of arrays, keeps at most %d", c, maxKeptText)
	}
	s := b.String()
	if !strings.HasPrefix(s, "head a") || !strings.HasSuffix(s, "aend") || len(s) > maxKeptText+200 {
		t.Fatalf("kept %d bytes: %.40q…%q", len(s), s, s[len(s)-10:])
	}
}

// A content block of a shape the CLI might one day send costs only itself: the blocks around it keep their texts.
func TestContentTextsSkipsBlocksOfOtherShapes(t *testing.T) {
	got := contentTexts(json.RawMessage(`["a string", {"type":"text","text":"one"}, 7, {"type":"text","text":{"rich":true}},` +
		`{"type":["text"],"text":"typed oddly"}, null, {"type":"text","text":"two"}]`))
	if strings.Join(got, "|") != "one|two" {
		t.Fatalf("texts %q", got)
	}
}
