package pipeline

import "strings"

// Verification is how a milestone is checked end to end once its tasks are done: the plan's verification sections
// ("E2E Test Scenario", "Milestone Verification", "E2E tests", "Verification", "Test steps") and the commands in
// their fenced blocks.
type Verification struct {
	Text     string   // the sections as written, headings included
	Commands []string // the contents of their fenced code blocks, in order
	Line     int      // 1-based line of the first section's heading
}

// verificationTitles name the sections that verify a milestone (a subset of the aside sections, which are never
// tasks: examples show tasks, they do not check them).
var verificationTitles = []string{
	"e2e test scenario", "e2e test", "e2e tests", "milestone verification", "verification", "test steps",
}

func isVerification(heading string) bool {
	t := strings.ToLower(unwrapEmphasis(heading))
	for _, a := range verificationTitles {
		if strings.HasPrefix(t, a) && (len(t) == len(a) || !isWordByte(t[len(a)])) {
			return true
		}
	}
	return false
}

// ExtractVerification finds a milestone's verification sections. ok is false when the plan has none: the run then
// has no end-to-end phase. It is deterministic: what a plan says is what is run.
func ExtractVerification(content string) (v Verification, ok bool) {
	lines := scanMarkdown(content)
	var texts []string
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if l.hidden || l.level == 0 || !isVerification(l.heading) {
			continue
		}
		end := i + 1
		for end < len(lines) && (lines[end].hidden || lines[end].level == 0 || lines[end].level > l.level) {
			end++
		}
		if v.Line == 0 {
			v.Line = i + 1
		}
		section := lines[i:end]
		texts = append(texts, strings.TrimRight(l.text+"\n"+body(section[1:]), "\n"))
		v.Commands = append(v.Commands, fencedBlocks(section)...)
		i = end - 1
	}
	if len(texts) == 0 {
		return Verification{}, false
	}
	v.Text = strings.Join(texts, "\n\n")
	return v, true
}

// fencedBlocks returns the contents of the fenced code blocks among lines.
func fencedBlocks(lines []mdLine) []string {
	var blocks []string
	var cur []string
	inside := false
	for _, l := range lines {
		if !l.hidden {
			continue
		}
		if _, _, opens := opensFence(l.text); opens && !inside {
			inside, cur = true, nil
			continue
		}
		if inside && isFenceClose(l.text) {
			inside = false
			if b := strings.TrimSpace(strings.Join(cur, "\n")); b != "" {
				blocks = append(blocks, b)
			}
			continue
		}
		if inside {
			cur = append(cur, l.text)
		}
	}
	return blocks
}

// isFenceClose reports whether a line is only a fence (``` or ~~~, three or more).
func isFenceClose(line string) bool {
	t := strings.TrimSpace(line)
	return len(t) >= 3 && (strings.Trim(t, "`") == "" || strings.Trim(t, "~") == "")
}
