package agent

import "strings"

// PromptTask is the part of a plan task that goes into an agent's prompt.
type PromptTask struct {
	ID, Title, Description string
}

// promptFooter asks for the two endings the brain reads best: a summary, or a question in the marker form
// that its offline heuristic recognises. Being fixed text that always follows the description, it also
// keeps GuidanceFromPrompt from mistaking a description that quotes the guidance header for guidance.
const promptFooter = `When you are done, end with a short summary of what you changed and how you checked it.
If you cannot go on without a decision from a human, stop and end your reply with:
QUESTION: <your question>
OPTIONS:
A) <first option>  B) <second option>
RECOMMENDATION: <the option you recommend>`

const guidanceHeader = "\n\n## Guidance for this attempt\n\n" +
	"This guidance was given after earlier attempts at this task. Follow it; where it conflicts with the task above, the guidance wins.\n\n"

// BuildPrompt writes the prompt for one attempt at a task. Guidance, when there is any, comes last, each
// item quoted line by line with "> " and items separated by a blank line, so that GuidanceFromPrompt can read
// it back exactly, whatever it contains.
func BuildPrompt(t PromptTask, guidance []string) string {
	return buildPrompt(t, promptFooter, nil, guidance)
}

func buildPrompt(t PromptTask, footer string, turns []Turn, guidance []string) string {
	var b strings.Builder
	b.WriteString("You are working on one task of a larger plan, in the current directory.\n\n")
	b.WriteString("Task")
	if t.ID != "" {
		b.WriteString(" " + t.ID)
	}
	if t.Title != "" {
		b.WriteString(": " + t.Title)
	}
	b.WriteString("\n\n")
	if d := strings.TrimSpace(t.Description); d != "" {
		b.WriteString(d + "\n\n")
	}
	b.WriteString(footer)
	if len(turns) > 0 {
		b.WriteString(chatHeader)
		items := make([]string, len(turns))
		for i, turn := range turns {
			role := "Agent:"
			if turn.Human {
				role = "Human:"
			}
			items[i] = role + "\n" + quote(turn.Text)
		}
		b.WriteString(strings.Join(items, "\n\n"))
		b.WriteByte('\n')
	}
	if len(guidance) > 0 {
		b.WriteString(guidanceHeader)
		items := make([]string, len(guidance))
		for i, g := range guidance {
			items[i] = quote(g)
		}
		b.WriteString(strings.Join(items, "\n\n"))
		b.WriteByte('\n')
	}
	return b.String()
}

// quote writes s line by line with "> " (a bare ">" for an empty line).
func quote(s string) string {
	lines := strings.Split(s, "\n")
	for i, line := range lines {
		if line == "" {
			lines[i] = ">"
		} else {
			lines[i] = "> " + line
		}
	}
	return strings.Join(lines, "\n")
}

// unquote reverses quote; ok is false when a line is not quoted.
func unquote(lines []string) (string, bool) {
	out := make([]string, len(lines))
	for j, line := range lines {
		switch {
		case line == ">":
		case strings.HasPrefix(line, "> "):
			out[j] = line[2:]
		default:
			return "", false
		}
	}
	return strings.Join(out, "\n"), true
}

// GuidanceFromPrompt returns the guidance BuildPrompt put into prompt, or nil when it has none.
func GuidanceFromPrompt(prompt string) []string {
	i := strings.LastIndex(prompt, guidanceHeader)
	if i < 0 {
		return nil
	}
	rest, ok := strings.CutSuffix(prompt[i+len(guidanceHeader):], "\n")
	if !ok {
		return nil
	}
	var guidance []string
	for _, item := range strings.Split(rest, "\n\n") {
		g, ok := unquote(strings.Split(item, "\n"))
		if !ok {
			return nil // not BuildPrompt's section: the header is quoted from somewhere else
		}
		guidance = append(guidance, g)
	}
	return guidance
}
