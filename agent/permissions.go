package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/orchrun/orch/internal/lazyre"
)

// Decision is what orch's permission policy does with one tool call.
type Decision string

const (
	Allow Decision = "allow" // the call runs
	Ask   Decision = "ask"   // a person decides: the run parks on an approval
	Deny  Decision = "deny"  // the call is refused and the agent is told why
)

// Policy is what an agent may do, as rules in Claude Code's permission-rule syntax ("Bash(git push:*)",
// "Edit(src/**)", "WebFetch(domain:example.com)"): a call a deny rule names is refused, one an ask rule names waits
// for a person, one an allow rule names runs, and any other call gets Default. File changes outside the workspace
// (an edit, or rm/mv of a path) ask unless an allow rule names them: Claude Code's rules cannot say "outside".
type Policy struct {
	Default Decision `json:"default" yaml:"default"`
	Allow   []string `json:"allow,omitempty" yaml:"allow"`
	Ask     []string `json:"ask,omitempty" yaml:"ask"`
	Deny    []string `json:"deny,omitempty" yaml:"deny"`
	// Name says where the policy comes from, for people ("docker defaults", "orch.yaml").
	Name string `json:"name,omitempty" yaml:"-"`
}

// DockerPolicy is the default in the Docker sandbox: the container is the boundary, so everything runs except what
// reaches past it or is hard to undo — pushing, publishing, deploying, credentials.
func DockerPolicy() Policy {
	return Policy{Name: "docker defaults", Default: Allow, Ask: slices.Clone(outwardRules)}
}

// LocalPolicy is the default in the local sandbox, where the agent runs as the user on their machine: edits inside
// the workspace and ordinary build, test and read-only commands run; everything else asks.
func LocalPolicy() Policy {
	return Policy{Name: "local defaults", Default: Ask, Allow: slices.Clone(localAllowRules), Ask: slices.Clone(outwardRules)}
}

// outwardRules are actions with effects outside the sandbox or hard to undo.
var outwardRules = []string{
	// Pushing and merging.
	"Bash(git push:*)", "Bash(gh pr merge:*)", "Bash(gh release:*)", "Bash(gh repo delete:*)", "Bash(gh api:*)",
	// Publishing packages and images.
	"Bash(npm publish:*)", "Bash(yarn publish:*)", "Bash(pnpm publish:*)", "Bash(cargo publish:*)",
	"Bash(twine upload:*)", "Bash(gem push:*)", "Bash(docker push:*)", "Bash(mvn deploy:*)",
	// Deploying and cloud control planes.
	"Bash(kubectl:*)", "Bash(helm:*)", "Bash(terraform apply:*)", "Bash(terraform destroy:*)", "Bash(aws:*)",
	"Bash(gcloud:*)", "Bash(az:*)", "Bash(fly deploy:*)", "Bash(vercel:*)", "Bash(heroku:*)",
	// Credentials.
	"Read(~/.ssh/**)", "Read(~/.aws/**)", "Read(~/.config/gh/**)", "Read(~/.netrc)", "Read(~/.git-credentials)",
	"Read(~/.docker/config.json)", "Read(~/.kube/**)", "Bash(printenv:*)", "Bash(env)", "Bash(ssh:*)", "Bash(scp:*)",
}

// localAllowRules are what the local sandbox runs without asking: edits in the workspace, reading, and ordinary
// build, test and inspection commands. (Claude Code reads files without asking anyway.)
var localAllowRules = []string{
	"Edit(./**)", "Read(./**)",
	"Bash(go build:*)", "Bash(go test:*)", "Bash(go vet:*)", "Bash(go run:*)", "Bash(go mod tidy)", "Bash(gofmt:*)",
	"Bash(npm test:*)", "Bash(npm run test:*)", "Bash(npm run build:*)", "Bash(npm run lint:*)", "Bash(npm ci)",
	"Bash(npm install)", "Bash(npx tsc:*)", "Bash(yarn test:*)", "Bash(pnpm test:*)",
	"Bash(pytest:*)", "Bash(python -m pytest:*)", "Bash(python3 -m pytest:*)",
	"Bash(cargo build:*)", "Bash(cargo test:*)", "Bash(cargo check:*)", "Bash(cargo clippy:*)", "Bash(cargo fmt:*)",
	"Bash(mvn test:*)", "Bash(gradle test:*)", "Bash(./gradlew test:*)",
	"Bash(make)", "Bash(make build)", "Bash(make test)", "Bash(make check)", "Bash(make lint)",
	"Bash(git status:*)", "Bash(git diff:*)", "Bash(git log:*)", "Bash(git show:*)", "Bash(git add:*)",
	"Bash(git commit:*)", "Bash(git branch)", "Bash(git rev-parse:*)",
	"Bash(ls:*)", "Bash(pwd)", "Bash(cat:*)", "Bash(head:*)", "Bash(tail:*)", "Bash(wc:*)", "Bash(grep:*)",
	"Bash(rg:*)", "Bash(echo:*)", "Bash(mkdir:*)", "Bash(touch:*)", "Bash(diff:*)", "Bash(sort:*)", "Bash(which:*)",
}

// DefaultPolicy is the default for a sandbox kind ("docker" or "local").
func DefaultPolicy(sandboxKind string) Policy {
	if sandboxKind == "docker" {
		return DockerPolicy()
	}
	return LocalPolicy()
}

// Validate checks every rule's syntax and the default.
func (p Policy) Validate() error {
	switch p.Default {
	case Allow, Ask, Deny:
	default:
		return fmt.Errorf("permissions: default %q: want allow, ask or deny", p.Default)
	}
	for _, list := range []struct {
		name  string
		rules []string
	}{{"allow", p.Allow}, {"ask", p.Ask}, {"deny", p.Deny}} {
		for _, s := range list.rules {
			if _, err := ParseRule(s); err != nil {
				return fmt.Errorf("permissions: %s: %w", list.name, err)
			}
		}
	}
	return nil
}

// Extend returns p with more rules added to each list (orch.yaml's rules on top of a sandbox's defaults).
func (p Policy) Extend(more Policy) Policy {
	out := Policy{Name: p.Name, Default: p.Default, Allow: union(p.Allow, more.Allow), Ask: union(p.Ask, more.Ask),
		Deny: union(p.Deny, more.Deny)}
	if more.Default != "" {
		out.Default = more.Default
	}
	return out
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// Summary says in one line which policy is in force, for `orch health` and a run's first line.
func (p Policy) Summary() string {
	name := p.Name
	if name == "" {
		name = "custom"
	}
	s := fmt.Sprintf("%s: %s by default", name, p.Default)
	var parts []string
	for _, l := range []struct {
		what  string
		rules []string
	}{{"allow", p.Allow}, {"ask", p.Ask}, {"deny", p.Deny}} {
		if len(l.rules) > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", len(l.rules), l.what))
		}
	}
	if len(parts) > 0 {
		s += " (" + strings.Join(parts, ", ") + " rules)"
	}
	return s
}

// Rule is one permission rule: a tool name, and optionally a specifier in parentheses.
type Rule struct {
	Tool    string
	Spec    string
	HasSpec bool
}

var ruleTool = lazyre.New(`^[A-Za-z][A-Za-z0-9_-]*$`)

// errRuleSyntax is wrapped by every error ParseRule returns.
var errRuleSyntax = errors.New("not a permission rule")

// ParseRule parses "Tool" or "Tool(specifier)".
func ParseRule(s string) (Rule, error) {
	t := strings.TrimSpace(s)
	open := strings.IndexByte(t, '(')
	if open < 0 {
		if !ruleTool.MatchString(t) {
			return Rule{}, fmt.Errorf("%w: %q (want Tool or Tool(specifier), e.g. Bash(git push:*))", errRuleSyntax, s)
		}
		return Rule{Tool: t}, nil
	}
	if !strings.HasSuffix(t, ")") {
		return Rule{}, fmt.Errorf("%w: %q has no closing parenthesis", errRuleSyntax, s)
	}
	r := Rule{Tool: t[:open], Spec: t[open+1 : len(t)-1], HasSpec: true}
	if !ruleTool.MatchString(r.Tool) {
		return Rule{}, fmt.Errorf("%w: %q: %q is not a tool name", errRuleSyntax, s, r.Tool)
	}
	if strings.TrimSpace(r.Spec) == "" {
		return Rule{}, fmt.Errorf("%w: %q has an empty specifier (write %s to name every use of the tool)", errRuleSyntax, s, r.Tool)
	}
	if r.Spec == "*" {
		r.Spec, r.HasSpec = "", false // Bash(*) is Bash
	}
	return r, nil
}

func (r Rule) String() string {
	if !r.HasSpec {
		return r.Tool
	}
	return r.Tool + "(" + r.Spec + ")"
}

// Call is one tool call as the agent made it.
type Call struct {
	Tool  string          `json:"tool_name"`
	Input json.RawMessage `json:"tool_input"`
	ID    string          `json:"tool_use_id,omitempty"`
}

// Where a call runs: paths in rules and inputs are resolved against these.
type place struct {
	cwd, root, home string
}

// editTools are what an Edit rule covers; readTools what a Read rule covers (Claude Code's grouping).
var (
	editTools = []string{"Edit", "Write", "MultiEdit", "NotebookEdit"}
	readTools = []string{"Read", "Glob", "Grep", "LS"}
)

// matches reports whether rule r names call c: its tool, then its specifier (a rule without one names every call of
// its tool; an MCP rule has none).
func (r Rule) matches(c Call, in map[string]any, pl place) bool {
	if !r.names(c.Tool) {
		return false
	}
	if !r.HasSpec || strings.HasPrefix(r.Tool, "mcp__") {
		return true
	}
	return r.specMatches(c, in, pl)
}

// names reports whether r's tool covers tool: Edit and Read cover their groups, an MCP rule its server's tools (or
// one of them), Agent and Task each other.
func (r Rule) names(tool string) bool {
	switch {
	case r.Tool == "Edit":
		return tool == r.Tool || slices.Contains(editTools, tool)
	case r.Tool == "Read":
		return tool == r.Tool || slices.Contains(readTools, tool)
	case strings.HasPrefix(r.Tool, "mcp__"):
		// mcp__server names every tool of the server, mcp__server__tool one of them.
		return tool == r.Tool || strings.HasPrefix(tool, r.Tool+"__") ||
			(strings.HasSuffix(r.Tool, "__*") && strings.HasPrefix(tool, strings.TrimSuffix(r.Tool, "*")))
	case r.Tool == "Agent" || r.Tool == "Task":
		return tool == "Agent" || tool == "Task"
	}
	return tool == r.Tool
}

// specMatches reports whether r's specifier matches call c of a tool r names.
func (r Rule) specMatches(c Call, in map[string]any, pl place) bool {
	switch r.Tool {
	case "Bash":
		cmd, _ := in["command"].(string)
		return bashMatches(r.Spec, strings.TrimSpace(cmd))
	case "Edit", "Read":
		p := callPath(c.Tool, in, pl)
		return p != "" && pathMatches(r.Spec, p, pl)
	case "WebFetch":
		domain, ok := strings.CutPrefix(r.Spec, "domain:")
		raw, _ := in["url"].(string)
		u, err := url.Parse(raw)
		return ok && err == nil && strings.EqualFold(u.Hostname(), domain)
	case "Agent", "Task":
		sub, _ := in["subagent_type"].(string)
		return sub == r.Spec
	}
	return globMatch(r.Spec, inputString(in))
}

// inputString is the one string input of a tool that has one, for rules on tools orch does not know.
func inputString(in map[string]any) string {
	for _, k := range []string{"command", "url", "query", "pattern", "skill", "file_path", "path"} {
		if s, ok := in[k].(string); ok {
			return s
		}
	}
	return ""
}

// bashMatches applies one Bash specifier to one command: "P:*" is a prefix at a word boundary, "*" matches anything
// (after a space: a word boundary, which also matches nothing), no wildcard is the exact command.
func bashMatches(spec, cmd string) bool {
	if prefix, ok := strings.CutSuffix(spec, ":*"); ok {
		return cmd == prefix || strings.HasPrefix(cmd, prefix+" ")
	}
	if !strings.Contains(spec, "*") {
		return cmd == spec
	}
	if trimmed, ok := strings.CutSuffix(spec, " *"); ok && !strings.Contains(trimmed, "*") && cmd == trimmed {
		return true
	}
	return globMatch(spec, cmd)
}

// globMatch matches s against a pattern whose only wildcard is *, matching any run of characters.
func globMatch(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == s
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for i, part := range parts[1:] {
		if i == len(parts)-2 {
			return strings.HasSuffix(s, part)
		}
		at := strings.Index(s, part)
		if at < 0 {
			return false
		}
		s = s[at+len(part):]
	}
	return true
}

// callPath is the absolute path a file tool acts on, "" when it names none.
func callPath(tool string, in map[string]any, pl place) string {
	var p string
	for _, k := range []string{"file_path", "notebook_path", "path"} {
		if s, ok := in[k].(string); ok && s != "" {
			p = s
			break
		}
	}
	if p == "" {
		if tool == "Glob" || tool == "Grep" || tool == "LS" {
			return pl.cwd
		}
		return ""
	}
	return absolute(p, pl)
}

func absolute(p string, pl place) string {
	switch {
	case p == "~" || strings.HasPrefix(p, "~/"):
		p = filepath.Join(pl.home, p[1:])
	case !filepath.IsAbs(p):
		p = filepath.Join(pl.cwd, p)
	}
	return filepath.Clean(p)
}

// pathMatches applies a gitignore-style path specifier: "//p" is absolute, "~/p" under the home directory, "/p"
// under the project root, anything else under the working directory; a pattern with no slash matches a name at
// any depth.
func pathMatches(spec, p string, pl place) bool {
	var base, pat string
	switch {
	case strings.HasPrefix(spec, "//"):
		base, pat = "/", spec[2:]
	case strings.HasPrefix(spec, "~/"):
		base, pat = pl.home, spec[2:]
	case strings.HasPrefix(spec, "/"):
		base, pat = pl.root, spec[1:]
	default:
		base, pat = pl.cwd, strings.TrimPrefix(spec, "./")
	}
	rel, err := filepath.Rel(base, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return false
	}
	rel = filepath.ToSlash(rel)
	if !strings.Contains(strings.TrimSuffix(pat, "/"), "/") {
		pat = "**/" + pat // gitignore: a bare name matches at any depth
	}
	return pathGlob(pat).MatchString(rel)
}

// pathGlob compiles a gitignore-style pattern: ** crosses directories, * and ? do not; a trailing /** or a
// directory name also matches what is inside.
func pathGlob(pat string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(pat); i++ {
		switch {
		case strings.HasPrefix(pat[i:], "**/"):
			b.WriteString("(?:.*/)?")
			i += 2
		case strings.HasPrefix(pat[i:], "**"):
			b.WriteString(".*")
			i++
		case pat[i] == '*':
			b.WriteString("[^/]*")
		case pat[i] == '?':
			b.WriteString("[^/]")
		default:
			b.WriteString(regexp.QuoteMeta(pat[i : i+1]))
		}
	}
	b.WriteString("(?:/.*)?$")
	re, err := regexp.Compile(b.String())
	if err != nil {
		return regexp.MustCompile(`^\b$`) // matches nothing
	}
	return re
}

// Verdict is the policy's decision about one call, with the rule that made it.
type Verdict struct {
	Decision Decision
	Rule     string // the rule that decided, "" for the default or the outside-the-workspace check
	Reason   string // why, for people and for the agent
	// Default is set when no rule and no check decided: the policy's default did.
	Default bool
}

// Decide applies the policy to call c made in cwd (the workspace root is root), with the rules people allowed for
// this run (approved) counting as allow rules that also overrule ask rules — never deny rules.
func (p Policy) Decide(c Call, approved []string, cwd, root, home string) Verdict {
	in := map[string]any{}
	_ = json.Unmarshal(c.Input, &in)
	pl := place{cwd: cwd, root: root, home: home}
	if pl.root == "" {
		pl.root = cwd
	}
	subs := []string{""}
	if c.Tool == "Bash" {
		cmd, _ := in["command"].(string)
		subs = subcommands(cmd)
	}
	// Each part of a compound command is judged on its own, as Claude Code does: one denied part denies the whole,
	// one part that asks asks, and the whole runs only when every part may.
	one := func(sub string) Verdict {
		call, inp := c, in
		if c.Tool == "Bash" {
			inp = map[string]any{"command": sub}
		}
		if r := firstMatch(p.Deny, call, inp, pl); r != "" {
			return Verdict{Decision: Deny, Rule: r, Reason: "orch's permission policy denies " + r}
		}
		approvedBy := firstMatch(approved, call, inp, pl)
		if r := firstMatch(p.Ask, call, inp, pl); r != "" && approvedBy == "" {
			return Verdict{Decision: Ask, Rule: r, Reason: "orch's permission policy asks a person before " + r}
		}
		if approvedBy != "" {
			return Verdict{Decision: Allow, Rule: approvedBy, Reason: "allowed for this run: " + approvedBy}
		}
		if r := firstMatch(p.Allow, call, inp, pl); r != "" {
			return Verdict{Decision: Allow, Rule: r, Reason: "orch's permission policy allows " + r}
		}
		if where := outside(call.Tool, inp, pl); where != "" {
			return Verdict{Decision: Ask, Reason: "it changes " + where + ", outside the workspace"}
		}
		return Verdict{Decision: p.Default, Reason: "orch's permission policy: " + string(p.Default) + " by default", Default: true}
	}
	worst := Verdict{Decision: Allow}
	for i, sub := range subs {
		v := one(sub)
		if i == 0 || rank(v.Decision) > rank(worst.Decision) {
			worst = v
		}
	}
	return worst
}

func rank(d Decision) int {
	switch d {
	case Deny:
		return 2
	case Ask:
		return 1
	}
	return 0
}

func firstMatch(rules []string, c Call, in map[string]any, pl place) string {
	for _, s := range rules {
		r, err := ParseRule(s)
		if err == nil && r.matches(c, in, pl) {
			return r.String()
		}
	}
	return ""
}

// outside names the path a call changes outside the workspace (and outside /tmp), "" when it changes none: an edit
// of such a file, or rm, rmdir, unlink, shred or mv of such a path.
func outside(tool string, in map[string]any, pl place) string {
	var paths []string
	switch {
	case slices.Contains(editTools, tool):
		if p := callPath(tool, in, pl); p != "" {
			paths = append(paths, p)
		}
	case tool == "Bash":
		cmd, _ := in["command"].(string)
		words := shellWords(cmd)
		for len(words) > 0 && strings.Contains(words[0], "=") {
			words = words[1:] // FOO=bar rm …
		}
		if len(words) > 1 && (words[0] == "sudo" || words[0] == "command") {
			words = words[1:]
		}
		if len(words) == 0 || !slices.Contains([]string{"rm", "rmdir", "unlink", "shred", "mv"}, path.Base(words[0])) {
			return ""
		}
		for _, w := range words[1:] {
			if !strings.HasPrefix(w, "-") {
				paths = append(paths, absolute(w, pl))
			}
		}
	}
	for _, p := range paths {
		if !within(pl.root, p) && !within(pl.cwd, p) && !within("/tmp", p) {
			return p
		}
	}
	return ""
}

func within(dir, p string) bool {
	if dir == "" {
		return false
	}
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// subcommands splits a shell command at &&, ||, ;, |, & and newlines outside quotes.
func subcommands(cmd string) []string {
	var out []string
	var cur strings.Builder
	var quote byte
	flush := func() {
		if s := strings.TrimSpace(cur.String()); s != "" {
			out = append(out, s)
		}
		cur.Reset()
	}
	for i := 0; i < len(cmd); i++ {
		ch := cmd[i]
		switch {
		case quote != 0:
			if ch == quote {
				quote = 0
			} else if ch == '\\' && quote == '"' && i+1 < len(cmd) {
				cur.WriteByte(ch)
				i++
				ch = cmd[i]
			}
		case ch == '\'' || ch == '"':
			quote = ch
		case ch == '\\' && i+1 < len(cmd):
			cur.WriteByte(ch)
			i++
			ch = cmd[i]
		case ch == ';' || ch == '\n' || ch == '|' || ch == '&':
			flush()
			if i+1 < len(cmd) && (cmd[i+1] == ch) && ch != ';' && ch != '\n' {
				i++
			}
			continue
		}
		cur.WriteByte(ch)
	}
	flush()
	if len(out) == 0 {
		out = []string{strings.TrimSpace(cmd)}
	}
	return out
}

// shellWords splits one simple command into words, honouring quotes and backslashes.
func shellWords(cmd string) []string {
	var words []string
	var cur strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(cmd); i++ {
		ch := cmd[i]
		switch {
		case quote != 0:
			if ch == quote {
				quote = 0
			} else {
				cur.WriteByte(ch)
			}
		case ch == '\'' || ch == '"':
			quote, in = ch, true
		case ch == '\\' && i+1 < len(cmd):
			i++
			cur.WriteByte(cmd[i])
			in = true
		case ch == ' ' || ch == '\t':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(ch)
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words
}

// RuleFor is the rule "Allow for this run" adds for call c: the ask rule that stopped it when one did, else a rule
// as narrow as the call's kind allows — the command and its subcommand, the file's directory, the domain.
func RuleFor(c Call, v Verdict) string {
	if v.Rule != "" && v.Decision == Ask {
		return v.Rule
	}
	in := map[string]any{}
	_ = json.Unmarshal(c.Input, &in)
	switch {
	case c.Tool == "Bash":
		cmd, _ := in["command"].(string)
		subs := subcommands(cmd)
		words := shellWords(subs[0])
		if len(words) == 0 {
			return "Bash"
		}
		prefix := words[0]
		if len(words) > 1 && subcommandWord.MatchString(words[1]) {
			prefix += " " + words[1]
		}
		return "Bash(" + prefix + ":*)"
	case slices.Contains(editTools, c.Tool):
		if p, _ := in["file_path"].(string); p != "" && filepath.IsAbs(p) {
			return "Edit(/" + filepath.ToSlash(filepath.Dir(p)) + "/**)"
		}
		return "Edit"
	case c.Tool == "WebFetch":
		raw, _ := in["url"].(string)
		if u, err := url.Parse(raw); err == nil && u.Hostname() != "" {
			return "WebFetch(domain:" + u.Hostname() + ")"
		}
	}
	return c.Tool
}

var subcommandWord = lazyre.New(`^[a-z][a-z0-9-]*$`)

// DeferVersion is the first Claude Code that can pause a tool call for later (the PreToolUse decision "defer").
const DeferVersion = "2.1.89"

// SupportsDefer reports whether Claude Code of this version ("2.1.89", "2.1.89 (Claude Code)") can pause a call;
// true for a version it cannot read, which a current CLI would not print.
func SupportsDefer(version string) bool {
	return !versionBelow(version, DeferVersion)
}

// QuestionsHiddenVersion is the first Claude Code that leaves AskUserQuestion out of plain `-p` runs: it offers the
// tool only to a session with a permission-prompt surface (anthropics/claude-code#77994; 2.1.186 is the last to list
// it). With those, Claude asks its questions in its final text instead, and orch reads them there.
const QuestionsHiddenVersion = "2.1.187"

// OffersQuestions reports whether Claude Code of this version offers AskUserQuestion in orch's `-p` runs.
func OffersQuestions(version string) bool {
	return versionBelow(version, QuestionsHiddenVersion)
}

// versionBelow reports whether dotted version v is below w; false when v is not a version.
func versionBelow(v, w string) bool {
	parse := func(s string) ([3]int, bool) {
		var out [3]int
		s = strings.TrimSpace(s)
		if i := strings.IndexAny(s, " -+"); i >= 0 {
			s = s[:i]
		}
		parts := strings.Split(s, ".")
		if len(parts) != 3 {
			return out, false
		}
		for i, p := range parts {
			n := 0
			for _, ch := range p {
				if ch < '0' || ch > '9' {
					return out, false
				}
				n = n*10 + int(ch-'0')
			}
			if p == "" {
				return out, false
			}
			out[i] = n
		}
		return out, true
	}
	a, ok1 := parse(v)
	b, ok2 := parse(w)
	if !ok1 || !ok2 {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}
