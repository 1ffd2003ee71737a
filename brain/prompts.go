package brain

import (
	"embed"
	"fmt"
	"strings"
	"text/template"
	"unicode/utf8"
)

// prompts.go renders the LLM prompts. The texts live in prompts/*.tmpl, starting from the seed's validated
// prompts, so they can be tuned (and diffed) as text without touching Go.

//go:embed prompts/*.tmpl
var promptFiles embed.FS

// promptTemplates is parsed once; templates are immutable and safe for concurrent use.
var promptTemplates = template.Must(template.New("").Funcs(template.FuncMap{
	"inc": func(i int) int { return i + 1 },
}).ParseFS(promptFiles, "prompts/*.tmpl"))

// defaultMaxOutputBytes bounds the agent output put into the interpret prompt: Haiku's context is 200k
// tokens, about 600 KB of text, and the prompt and the reply need room too. Larger outputs keep their head
// and tail (see clipMiddle).
const defaultMaxOutputBytes = 600_000

// omittedMarker stands where clipMiddle cut; the interpret prompt tells the model to look for it.
const omittedMarker = "[... orch omitted the middle of this output: it was too long to send in full ...]"

type tasksData struct{ Plan string }

type interpretData struct {
	Output  string
	Omitted int // bytes left out of the middle; 0 when Output is whole
	Marker  string
}

type correctiveData struct {
	Judgement string // "tasks", "interpret", "decide"
	Problem   string
}

func renderPrompt(name string, data any) (string, error) {
	var b strings.Builder
	if err := promptTemplates.ExecuteTemplate(&b, name, data); err != nil {
		return "", fmt.Errorf("rendering prompt %s: %w", name, err)
	}
	return b.String(), nil
}

// clipMiddle returns s whole when it fits in max bytes; else its head (a third of the budget) and tail (the
// rest), joined by omittedMarker on a line of its own, and how many bytes were left out. The tail gets more
// because an agent's last words (its summary, its question) decide the status. Cuts fall on line breaks near
// the edges when there are any, and never inside a UTF-8 sequence.
func clipMiddle(s string, max int) (string, int) {
	if max <= 0 || len(s) <= max {
		return s, 0
	}
	const lineSlack = 2048 // how far back (or forward) a cut may move to land on a line break
	headEnd := max / 3
	tailStart := len(s) - (max - headEnd)
	if i := strings.LastIndexByte(s[:headEnd], '\n'); i >= 0 && headEnd-i <= lineSlack {
		headEnd = i + 1
	}
	if i := strings.IndexByte(s[tailStart:], '\n'); i >= 0 && i < lineSlack {
		tailStart += i + 1
	}
	for headEnd > 0 && !utf8.RuneStart(s[headEnd]) {
		headEnd--
	}
	for tailStart < len(s) && !utf8.RuneStart(s[tailStart]) {
		tailStart++
	}
	head, tail := s[:headEnd], s[tailStart:]
	var b strings.Builder
	b.Grow(len(head) + len(tail) + len(omittedMarker) + 4)
	b.WriteString(head)
	if !strings.HasSuffix(head, "\n") {
		b.WriteByte('\n')
	}
	b.WriteString("\n" + omittedMarker + "\n\n")
	b.WriteString(tail)
	return b.String(), tailStart - headEnd
}
