package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/orchrun/orch/internal/lazyre"
)

// Template runs any CLI from a "cmd:" template such as `aider --yes --message {prompt}`.
type Template struct {
	words     []string
	hasPrompt bool
}

// placeholders are the names a template may use; anything else in braces that looks like one is a typo,
// and a typo of {prompt} would otherwise run the agent with the prompt appended and a literal "{promt}".
var (
	placeholders  = []string{"prompt", "task_id", "run_id", "attempt", "workspace"}
	placeholderRe = lazyre.New(`\{([a-z_]+)\}`)
)

// NewTemplate parses a "cmd:TEMPLATE" agent (the "cmd:" prefix is optional). TEMPLATE is split like a shell
// would split it (single and double quotes, backslash escapes) but no shell ever runs it: the placeholders
// {prompt}, {task_id}, {run_id}, {attempt} and {workspace} are substituted inside the resulting arguments,
// so a prompt is always exactly one argument, whatever it contains. A template without {prompt} gets the
// prompt on its standard input, byte for byte and of any size; {prompt} puts it in an argument, which holds
// at most MaxArgLen bytes and no NUL byte: a prompt that does not fit is refused with ErrInput, never cut.
//
// There is no placeholder naming a file that holds the prompt: the Docker sandbox shares nothing with the agent
// but the workspace, and a file written there would be part of the task's work (and of its commit). A CLI that
// wants a file can be given one by a shell: cmd:sh -c 'cat > "$TMPDIR/prompt" && tool --file "$TMPDIR/prompt"'.
func NewTemplate(tmpl string) (*Template, error) {
	words, err := splitWords(strings.TrimPrefix(tmpl, "cmd:"))
	if err != nil {
		return nil, fmt.Errorf("agent template %q: %w", tmpl, err)
	}
	if len(words) == 0 {
		return nil, fmt.Errorf("agent template %q: no command", tmpl)
	}
	t := &Template{words: words}
	for _, w := range words {
		for _, m := range placeholderRe.FindAllStringSubmatch(w, -1) {
			switch m[1] {
			case "prompt":
				t.hasPrompt = true
			case "task_id", "run_id", "attempt", "workspace":
			default:
				return nil, fmt.Errorf("agent template %q: unknown placeholder %s (known: {%s})", tmpl, m[0], strings.Join(placeholders, "}, {"))
			}
		}
	}
	return t, nil
}

// Name implements Adapter.
func (t *Template) Name() string { return "cmd" }

// Command implements Adapter.
func (t *Template) Command(req Request) (Command, error) {
	if req.Prompt == "" {
		return Command{}, fmt.Errorf("template command: %w", errEmptyPrompt)
	}
	// One pass over each word: a prompt that contains "{task_id}" stays as written.
	r := strings.NewReplacer(
		"{prompt}", req.Prompt,
		"{task_id}", req.TaskID,
		"{run_id}", req.RunID,
		"{attempt}", strconv.Itoa(req.Attempt),
		"{workspace}", req.Workspace,
	)
	args := make([]string, 0, len(t.words))
	for _, w := range t.words {
		args = append(args, r.Replace(w))
	}
	if args[0] == "" {
		return Command{}, errors.New("template command: the program name is empty")
	}
	cmd := Command{Args: args, Env: env(req)}
	if !t.hasPrompt {
		cmd.Stdin = req.Prompt
	}
	inArgs := ""
	if t.hasPrompt {
		inArgs = req.Prompt
	}
	if err := checkCommand(cmd, inArgs); err != nil {
		return Command{}, fmt.Errorf("template command: %w", err)
	}
	return cmd, nil
}

// NewParser implements Adapter.
func (t *Template) NewParser() Parser { return &plainParser{} }

// splitWords splits s into words the way a POSIX shell does, without expanding anything.
func splitWords(s string) ([]string, error) {
	var (
		words  []string
		word   strings.Builder
		inWord bool
	)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if inWord {
				words = append(words, word.String())
				word.Reset()
				inWord = false
			}
		case c == '\\':
			if i+1 == len(s) {
				return nil, errors.New("a backslash ends the template")
			}
			i++
			if s[i] != '\n' { // backslash-newline continues the line
				word.WriteByte(s[i])
				inWord = true
			}
		case c == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, errors.New("unterminated single quote")
			}
			word.WriteString(s[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case c == '"':
			inWord = true
			end, err := doubleQuoted(s, i+1, &word)
			if err != nil {
				return nil, err
			}
			i = end
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, word.String())
	}
	return words, nil
}

// doubleQuoted writes the double-quoted text that starts at s[i] to word, as a shell does (a backslash escapes only
// \, ", $, ` and a newline, which it removes), and returns the index of the closing quote.
func doubleQuoted(s string, i int, word *strings.Builder) (int, error) {
	for ; i < len(s); i++ {
		c := s[i]
		if c == '"' {
			return i, nil
		}
		if c == '\\' && i+1 < len(s) && strings.IndexByte("\\\"$`\n", s[i+1]) >= 0 {
			i++
			if s[i] != '\n' {
				word.WriteByte(s[i])
			}
			continue
		}
		word.WriteByte(c)
	}
	return i, errors.New("unterminated double quote")
}

// plainParser reads a CLI that prints text: the answer is its stdout and success is exit status 0. It also
// understands `codex exec --json` lines, because they are easy to tell apart and the raw events would bury
// the answer.
type plainParser struct {
	text boundedText

	codex      boundedText // codex agent messages
	sessionID  string
	tokens     usage
	errs       errorList
	turnFailed bool
}

// Line implements Parser.
func (p *plainParser) Line(line []byte) {
	line = bytes.TrimRight(line, "\r\n")
	if t := bytes.TrimSpace(line); len(t) > 0 && t[0] == '{' && p.codexLine(t) {
		return
	}
	if len(line) > 0 || p.text.Len() > 0 {
		p.text.WriteString(string(line) + "\n")
	}
}

// codexLine handles one `codex exec --json` event and reports whether it was one.
func (p *plainParser) codexLine(t []byte) bool {
	var ev struct {
		Type     string          `json:"type"`
		ThreadID string          `json:"thread_id"`
		Message  string          `json:"message"`
		Usage    json.RawMessage `json:"usage"`
		Error    struct {
			Message string `json:"message"`
		} `json:"error"`
		Item struct {
			Type    string `json:"type"`
			Text    string `json:"text"`
			Message string `json:"message"`
		} `json:"item"`
	}
	if json.Unmarshal(t, &ev) != nil {
		return false
	}
	switch ev.Type {
	case "thread.started":
		p.sessionID = ident(ev.ThreadID)
	case "turn.started", "item.started", "item.updated", "item.plan.delta", "request_user_input":
	case "item.completed":
		switch ev.Item.Type {
		case "agent_message":
			if p.codex.Len() > 0 {
				p.codex.WriteString("\n\n")
			}
			p.codex.WriteString(ev.Item.Text)
		case "error":
			p.addErr(ev.Item.Message)
		}
	case "turn.completed":
		u := jsonObject(ev.Usage)
		cached := jsonInt64(u["cached_input_tokens"])
		// codex counts cached tokens inside input_tokens; Result keeps them apart, as Claude does.
		p.tokens.add(usage{
			input:         max(0, jsonInt64(u["input_tokens"])-cached),
			output:        jsonInt64(u["output_tokens"]),
			cacheRead:     cached,
			cacheCreation: jsonInt64(u["cache_write_input_tokens"]),
		})
	case "turn.failed":
		p.turnFailed = true
		p.addErr(ev.Error.Message)
	case "error":
		p.addErr(ev.Message)
	default:
		return false
	}
	return true
}

func (p *plainParser) addErr(e string) {
	if e != "" {
		p.errs.add(e)
	}
}

// Finish implements Parser.
func (p *plainParser) Finish(exitCode int, stderr []byte) Result {
	r := Result{
		Text:                strings.TrimSpace(p.text.String()),
		SessionID:           p.sessionID,
		Success:             exitCode == 0 && !p.turnFailed,
		InputTokens:         p.tokens.input,
		OutputTokens:        p.tokens.output,
		CacheReadTokens:     p.tokens.cacheRead,
		CacheCreationTokens: p.tokens.cacheCreation,
	}
	if p.codex.Len() > 0 {
		r.Text = strings.TrimSpace(p.codex.String())
	}
	errs := p.errs.list()
	if !r.Success {
		r.Limit = p.limit(stderr, timeNow())
		if exitCode != 0 {
			errs = append(errs, fmt.Sprintf("exit status %d", exitCode))
		}
		if s := stderrTail(stderr); s != "" {
			errs = append(errs, "stderr: "+s)
		}
	}
	if len(errs) > 0 {
		r.Errors = clipErrors(errs)
	}
	if !r.Success {
		r.Text = withErrors(r.Text, r.Errors)
	}
	return r
}
