package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/orchrun/orch/internal/lazyre"
)

// Scenario is the sim agent's script (DESIGN §5 yaml format).
type Scenario struct {
	Tasks   map[string][]Reply // by task id (a DOT node id for pipelines)
	Default []Reply            // for tasks Tasks does not name
}

// Reply is what the sim agent does on one invocation.
type Reply struct {
	Output string
	Exit   int               // 0..255
	Files  map[string]string // relative path -> content, written into the workspace
	Sh     string            // run with /bin/sh -c in the workspace before answering; its output is appended
	// CostUSD, when set, is what the reply reports the invocation cost (total_cost_usd), for budgets to act on;
	// otherwise a cost from the size of the text.
	CostUSD float64
}

// Reply returns the reply to the attempt-th invocation (1-based) of a task: the n-th reply, the last one
// repeating once they run out. Tasks the scenario does not name get the default replies. It reports false
// when there is no reply at all.
func (s *Scenario) Reply(taskID string, attempt int) (Reply, bool) {
	replies, ok := s.Tasks[taskID]
	if !ok {
		replies = s.Default
	}
	if len(replies) == 0 {
		return Reply{}, false
	}
	i := min(max(attempt, 1), len(replies)) - 1
	return replies[i], true
}

// LoadScenario reads and checks a scenario file.
func LoadScenario(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	return ParseScenario(path, data)
}

// ParseScenario parses a scenario; name is the file name its errors give, as "scenario NAME:LINE: problem".
// It is strict, because a scenario is a test fixture and a typo that is silently ignored is a test that
// checks something else: unknown keys, wrong types, replies without output, exit codes outside 0..255 and
// file paths that leave the workspace are all errors.
func ParseScenario(name string, data []byte) (s *Scenario, err error) {
	defer func() {
		// yaml.v3 turns its own failures into errors but lets runtime panics through: a corrupt file must
		// still be a usage error, not a crash of the process that loads it.
		if r := recover(); r != nil {
			s, err = nil, scenarioErrorf(name, 1, "cannot parse: %v", r)
		}
	}()
	if line, problem := badCharacter(data); problem != "" {
		return nil, scenarioErrorf(name, line, "%s", problem)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, yamlError(name, data, err)
	}
	p := scenarioParser{name: name}
	return p.document(&doc)
}

type scenarioError struct {
	file string
	line int
	msg  string
}

func (e *scenarioError) Error() string {
	return fmt.Sprintf("scenario %s:%d: %s", e.file, e.line, e.msg)
}

func scenarioErrorf(file string, line int, format string, args ...any) error {
	return &scenarioError{file: file, line: max(line, 1), msg: fmt.Sprintf(format, args...)}
}

var yamlLineRe = lazyre.New(`^yaml: (?:line (\d+): )?(.*)$`)

// yamlError puts yaml.v3's message into the "file:line: problem" form. yaml.v3 gives the line where the
// enclosing block starts (counting from 0) rather than the line of the problem, and no line at all for some
// problems; the first prefix of the file that fails the same way ends on the line that matters.
func yamlError(name string, data []byte, err error) error {
	m := yamlLineRe.FindStringSubmatch(err.Error())
	if m == nil {
		return scenarioErrorf(name, 1, "%s", err)
	}
	problem := m[2]
	if line := firstFailingLine(data, problem); line > 0 {
		return scenarioErrorf(name, line, "%s", problem)
	}
	n, _ := strconv.Atoi(m[1])
	return scenarioErrorf(name, n+1, "%s", problem)
}

// maxBisectWork bounds the quadratic search in firstFailingLine (lines × bytes); a scenario of a hundred lines
// is far below it.
const maxBisectWork = 32 << 20

func firstFailingLine(data []byte, problem string) int {
	lines := strings.SplitAfter(string(data), "\n")
	if len(lines)*len(data) > maxBisectWork {
		return 0
	}
	var prefix strings.Builder
	for i, l := range lines {
		prefix.WriteString(l)
		var n yaml.Node
		err := yaml.Unmarshal([]byte(prefix.String()), &n)
		if err == nil {
			continue
		}
		if m := yamlLineRe.FindStringSubmatch(err.Error()); m != nil && m[2] == problem {
			return i + 1
		}
	}
	return 0
}

// badCharacter finds what yaml.v3 would reject without saying where: invalid UTF-8 and control characters.
func badCharacter(data []byte) (line int, problem string) {
	line = 1
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			return line, fmt.Sprintf("invalid UTF-8 (byte 0x%02x)", data[i])
		case r == '\n':
			line++
		case r == '\t' || r == '\r' || r == 0x85:
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == 0xfffe || r == 0xffff || (r >= 0xd800 && r <= 0xdfff):
			return line, fmt.Sprintf("control character %U is not allowed", r)
		}
		i += size
	}
	return 0, ""
}

type scenarioParser struct {
	name string
}

func (p *scenarioParser) errorf(n *yaml.Node, format string, args ...any) error {
	return scenarioErrorf(p.name, n.Line, format, args...)
}

func (p *scenarioParser) document(doc *yaml.Node) (*Scenario, error) {
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, scenarioErrorf(p.name, 1, "empty scenario: want tasks: and/or default:")
	}
	root := resolve(doc.Content[0])
	if root.Kind != yaml.MappingNode {
		return nil, p.errorf(root, "want a mapping with tasks: and/or default:, got %s", kind(root))
	}
	s := &Scenario{Tasks: map[string][]Reply{}}
	err := p.mapping(root, func(key string, k, v *yaml.Node) error {
		switch key {
		case "tasks":
			return p.tasks(v, s)
		case "default":
			replies, err := p.replies(v, "default")
			s.Default = replies
			return err
		}
		return p.errorf(k, "unknown key %q (want tasks or default)", key)
	})
	if err != nil {
		return nil, err
	}
	if len(s.Tasks) == 0 && len(s.Default) == 0 {
		return nil, p.errorf(root, "no replies: want tasks: and/or default:")
	}
	return s, nil
}

func (p *scenarioParser) tasks(n *yaml.Node, s *Scenario) error {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		return p.errorf(n, "tasks: want a mapping from task id to replies, got %s", kind(n))
	}
	return p.mapping(n, func(id string, _, v *yaml.Node) error {
		replies, err := p.replies(v, fmt.Sprintf("task %q", id))
		s.Tasks[id] = replies
		return err
	})
}

func (p *scenarioParser) replies(n *yaml.Node, what string) ([]Reply, error) {
	n = resolve(n)
	if n.Kind != yaml.SequenceNode {
		return nil, p.errorf(n, "%s: want a list of replies (- output: ...), got %s", what, kind(n))
	}
	if len(n.Content) == 0 {
		return nil, p.errorf(n, "%s: no replies", what)
	}
	replies := make([]Reply, 0, len(n.Content))
	for i, rn := range n.Content {
		r, err := p.reply(rn, fmt.Sprintf("%s reply %d", what, i+1))
		if err != nil {
			return nil, err
		}
		replies = append(replies, r)
	}
	return replies, nil
}

func (p *scenarioParser) reply(n *yaml.Node, what string) (Reply, error) {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		return Reply{}, p.errorf(n, "%s: want a mapping with output:, got %s", what, kind(n))
	}
	var r Reply
	hasOutput := false
	err := p.mapping(n, func(key string, k, v *yaml.Node) error {
		v = resolve(v)
		var err error
		switch key {
		case "output":
			r.Output, err = p.str(v, what+": output")
			hasOutput = r.Output != ""
		case "exit":
			if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" {
				return p.errorf(v, "%s: exit: want an integer, got %s", what, kind(v))
			}
			if v.Decode(&r.Exit) != nil || r.Exit < 0 || r.Exit > 255 {
				return p.errorf(v, "%s: exit: %s is outside 0..255", what, v.Value)
			}
		case "files":
			r.Files, err = p.files(v, what)
		case "sh":
			r.Sh, err = p.str(v, what+": sh")
		case "cost_usd":
			if v.Kind != yaml.ScalarNode || (v.ShortTag() != "!!float" && v.ShortTag() != "!!int") ||
				v.Decode(&r.CostUSD) != nil || r.CostUSD < 0 || r.CostUSD > 1e6 {
				return p.errorf(v, "%s: cost_usd: want a number of dollars from 0 to 1000000, got %s", what, v.Value)
			}
		default:
			err = p.errorf(k, "%s: unknown key %q (want output, exit, files, sh or cost_usd)", what, key)
		}
		return err
	})
	if err != nil {
		return Reply{}, err
	}
	if !hasOutput {
		return Reply{}, p.errorf(n, "%s: no output", what)
	}
	return r, nil
}

func (p *scenarioParser) files(n *yaml.Node, what string) (map[string]string, error) {
	if n.Kind != yaml.MappingNode {
		return nil, p.errorf(n, "%s: files: want a mapping from path to content, got %s", what, kind(n))
	}
	files := map[string]string{}
	err := p.mapping(n, func(path string, k, v *yaml.Node) error {
		if err := checkScenarioPath(path); err != nil {
			return p.errorf(k, "%s: files: %v", what, err)
		}
		v = resolve(v)
		if v.Kind == yaml.ScalarNode && v.ShortTag() == "!!null" {
			files[path] = "" // "empty.txt:" with no value is an empty file
			return nil
		}
		content, err := p.str(v, fmt.Sprintf("%s: files: %s", what, path))
		files[path] = content
		return err
	})
	return files, err
}

// checkScenarioPath keeps the files a scenario writes inside the workspace.
func checkScenarioPath(path string) error {
	switch {
	case path == "":
		return fmt.Errorf("empty file path")
	case !filepath.IsLocal(path) || strings.ContainsRune(path, '\\'):
		return fmt.Errorf("file path %q must be relative and stay inside the workspace", path)
	case filepath.Clean(path) == "." || strings.HasSuffix(path, "/"):
		return fmt.Errorf("file path %q names a directory, not a file", path)
	}
	return nil
}

func (p *scenarioParser) str(n *yaml.Node, what string) (string, error) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		return "", p.errorf(n, "%s: want a string, got %s", what, kind(n))
	}
	return n.Value, nil
}

// mapping calls f for each key of a mapping node, in order, refusing duplicate and non-string keys.
func (p *scenarioParser) mapping(n *yaml.Node, f func(key string, k, v *yaml.Node) error) error {
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return p.errorf(k, "want a plain key, got %s", kind(k))
		}
		if k.ShortTag() == "!!merge" {
			return p.errorf(k, "merge keys (<<) are not supported")
		}
		if seen[k.Value] {
			return p.errorf(k, "duplicate key %q", k.Value)
		}
		seen[k.Value] = true
		if err := f(k.Value, k, v); err != nil {
			return err
		}
	}
	return nil
}

// resolve follows aliases, which the scenario format allows for sharing a reply between tasks.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 100; i++ {
		n = n.Alias
	}
	return n
}

func kind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "nothing"
		case "!!str":
			return fmt.Sprintf("the string %q", n.Value)
		}
		return fmt.Sprintf("%s %s", strings.TrimPrefix(n.ShortTag(), "!!"), n.Value)
	case yaml.AliasNode:
		return "an unresolved alias"
	}
	return "nothing"
}
