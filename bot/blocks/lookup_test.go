package blocks

import (
	"fmt"
	"strings"
	"testing"

	"github.com/orchrun/orch/jobs"
)

// The costs answers stay within Slack's limits whatever the runs hold: hundreds of tasks, long titles and model
// names, markup in them.
func TestCostsMessagesWithinLimits(t *testing.T) {
	long := strings.Repeat("<b>&amp; a long title ", 60)
	r := &jobs.Run{ID: "r-limits0001", PlanTitle: long, Request: long + "\n" + long, Status: jobs.RunFailed}
	for k := range 300 {
		r.Tasks = append(r.Tasks, &jobs.Task{ID: fmt.Sprintf("%d.%d", k/10, k%10), Title: long, Attempts: []*jobs.Attempt{
			{N: 1, InputTokens: 1 << 40, OutputTokens: 1 << 40, CostUSD: 1e9, Model: fmt.Sprintf("%s model %d", long, k)}}})
	}
	m := RunCostsMessage(r)
	checkMessage(t, m)
	if all := allText(m); !strings.Contains(all, "_… and ") || strings.Contains(all, "<b>") {
		t.Errorf("300 tasks not cut to a count, or markup not escaped")
	}
	runs := make([]*jobs.Run, 20) // /orch costs lists 20
	for i := range runs {
		runs[i] = r
	}
	m = ChannelCostsMessage(runs, true)
	checkMessage(t, m)
	if !strings.Contains(allText(m), "*Costs of the 20 latest runs started in this channel*") {
		t.Errorf("a channel with more runs than shown does not say so:\n%s", allText(m))
	}
}
