package blocks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/orchrun/orch/jobs"
)

// homeCase is a full Home: a notice, questions of each kind, and runs in each state.
func homeCase() Home {
	gate := needsHelp()
	gate.ID, gate.Trigger, gate.Name = "e4", jobs.TriggerGate, "review"
	qs := []Question{
		{parkedRun(attemptCap()), attemptCap()},
		{parkedRun(needsHelp()), needsHelp()},
		{parkedRun(security()), security()},
		{parkedRun(gate), gate},
	}
	return Home{
		Viewer: "U0123ABCD", Health: "Redis answers · 2 steps queued for workers · 4 runs waiting for a human",
		Notice:    "Already answered: escalation e1 of run r-7f3kq2m9xa was answered by U0999 (chose B) at 09:30:00",
		CanAnswer: true, Questions: qs, More: 3,
		Runs:  []*jobs.Run{testRun(), endedRun(jobs.RunCompleted, ""), endedRun(jobs.RunFailed, "task 1.2 failed")},
		Links: map[string]string{runID: "https://orch-test.slack.com/archives/C0456EFGH/p1700000000000100"},
		Pages: map[string]string{runID: testPage},
		Now:   t0.Add(10 * time.Minute),
	}
}

// checkHome fails when a Home view breaks one of Slack's limits: at most 100 blocks, distinct block ids, and each
// block within the limits a message's blocks keep (action ids need only differ within their block).
func checkHome(t *testing.T, v slack.HomeTabViewRequest) {
	t.Helper()
	blocks := v.Blocks.BlockSet
	if v.Type != slack.VTHomeTab || len(blocks) == 0 || len(blocks) > maxHomeBlocks {
		t.Errorf("a %q view of %d blocks (Slack takes 1 to %d)", v.Type, len(blocks), maxHomeBlocks)
	}
	ids := map[string]bool{}
	for i, b := range blocks {
		if id := b.ID(); id != "" {
			if ids[id] {
				t.Errorf("block %d: block_id %q repeats", i, id)
			}
			ids[id] = true
		}
		if sec, ok := b.(*slack.SectionBlock); ok && sec.Text != nil {
			// Links to threads are orch's own markup; their labels are checked as any text.
			c, text := *sec, *sec.Text
			text.Text = threadLinkSpan.ReplaceAllString(text.Text, "$1")
			c.Text = &text
			b = &c
		}
		if b.BlockType() != slack.MBTDivider {
			checkMessage(t, Message{Text: "home", Blocks: []slack.Block{b}})
		}
	}
}

// threadLinkSpan is a link to a thread as threadLink writes it, with its label.
var threadLinkSpan = regexp.MustCompile(`<https://[a-z0-9.-]+/archives/[A-Z0-9]+/p[0-9]+\|([^<>|]*)>`)

// The Home as people see it is pinned (go test ./bot/blocks -run TestHomeGolden -update rewrites it).
func TestHomeGolden(t *testing.T) {
	v := HomeView(homeCase())
	checkHome(t, v)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join("testdata", "golden", "home.json")
	if *update {
		if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (go test ./bot/blocks -run TestHomeGolden -update writes it)", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("%s differs from what is rendered now (-update accepts it):\n%s", file, firstDiff(string(want), buf.String()))
	}
}

// However many questions, options and runs, and however long their texts, the Home stays within Slack's limits and
// counts what it leaves out.
func TestHomeViewLimits(t *testing.T) {
	h := homeCase()
	h.Questions = nil
	for i := range MaxHomeQuestions {
		e := manyOptions(80)
		e.ID = fmt.Sprintf("e%d", i+1)
		e.Question = longQuestion().Question
		r := parkedRun(e)
		r.PlanTitle = strings.Repeat("A very long plan title | with <markup> & more ", 20)
		h.Questions = append(h.Questions, Question{r, e})
	}
	h.More = 250
	h.Notice = strings.Repeat("<!channel> a very long notice ", 300)
	h.Runs = nil
	for range MaxHomeRuns {
		r := endedRun(jobs.RunFailed, strings.Repeat("a reason that goes on ", 200))
		r.PlanTitle = strings.Repeat("title ", 100)
		h.Runs = append(h.Runs, r)
	}
	v := HomeView(h)
	checkHome(t, v)
	text := jsonText(t, v.Blocks.BlockSet)
	if !strings.Contains(text, "… and 250 more questions") {
		t.Errorf("the questions left out are not counted:\n%s", text)
	}
	if n := strings.Count(text, "cache miss for key"); n == 0 || n > MaxHomeQuestions*maxHomeQuestion/40 {
		t.Errorf("the long questions are shown %d times over: not bounded", n)
	}
	for i := range MaxHomeQuestions {
		found := false
		for _, b := range v.Blocks.BlockSet {
			if a, ok := b.(*slack.ActionBlock); ok && a.BlockID == fmt.Sprintf("orch_home_%d_controls", i+1) {
				found = true
			}
		}
		if !found {
			t.Errorf("question %d has no Abort/Answer… row", i+1)
		}
	}
}

// jsonText is every "text" of v as JSON, one per line: what a Home shows, wherever in its blocks.
func jsonText(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var tree any
	json.Unmarshal(data, &tree)
	var b strings.Builder
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if s, ok := v["text"].(string); ok {
				b.WriteString(s + "\n")
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(tree)
	return b.String()
}
