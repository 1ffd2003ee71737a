package web

import (
	"fmt"
	"html/template"
	"strings"
	"time"

	"github.com/orchrun/orch/jobs"
)

// chart.go draws a run's attempts and waits as a small bar chart: one bar per agent attempt (its duration, coloured by
// what the brain made of it) and one per question (how long it waited for a person, or has waited so far). It is an
// SVG with no script or style, escaped text only, so the page can inline it under its Content-Security-Policy.

// bar is one bar of the chart.
type bar struct {
	label string
	d     time.Duration
	fill  string
	title string
}

// Fills by what a bar stands for.
const (
	fillDone    = "#1f7a3a"
	fillFailed  = "#b3261e"
	fillAsked   = "#9a5b00"
	fillOther   = "#5b6475"
	fillWaiting = "#d99a2b"
)

// chartOf is the chart of run's attempts and waits at now, or "" when the run has neither yet.
func chartOf(run *jobs.Run, now time.Time) template.HTML {
	var bars []bar
	for _, t := range run.Tasks {
		for i, a := range t.Attempts {
			fill := fillOther
			switch a.Status {
			case "completed":
				fill = fillDone
			case "failed", "error":
				fill = fillFailed
			case "needs_help", "held":
				fill = fillAsked
			}
			bars = append(bars, bar{label: fmt.Sprintf("%s #%d", t.ID, i+1), d: a.Duration, fill: fill,
				title: fmt.Sprintf("task %s attempt %d: %s, %s", t.ID, i+1, a.Status, a.Duration.Round(100*time.Millisecond))})
		}
	}
	for _, e := range run.Escalations {
		end := now
		state := "still waiting"
		if e.Resolution != nil {
			end, state = e.Resolution.At, strings.TrimSpace("answered by "+e.Resolution.By+" "+jobs.ViaText(e.Resolution.Via))
		}
		d := end.Sub(e.CreatedAt)
		bars = append(bars, bar{label: "wait " + e.ID, d: d, fill: fillWaiting,
			title: fmt.Sprintf("question %s (%s) waited %s, %s", e.ID, e.Trigger, since(d), state)})
	}
	if len(bars) == 0 {
		return ""
	}
	const (
		maxBars = 60 // a longer history shows its latest bars
		rowH    = 18
		labelW  = 110
		plotW   = 420
		valueW  = 80
	)
	if len(bars) > maxBars {
		bars = bars[len(bars)-maxBars:]
	}
	longest := time.Duration(1)
	for _, b := range bars {
		longest = max(longest, b.d)
	}
	w, h := labelW+plotW+valueW, rowH*len(bars)+4
	var sb strings.Builder
	fmt.Fprintf(&sb, `<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="%s" width="%d" height="%d" viewBox="0 0 %d %d">`,
		template.HTMLEscapeString(fmt.Sprintf("Attempts and waits of run %s", run.ID)), w, h, w, h)
	for i, b := range bars {
		y := 2 + i*rowH
		bw := max(1, int(float64(plotW)*float64(b.d)/float64(longest)))
		fmt.Fprintf(&sb, `<g><title>%s</title><text x="0" y="%d" font-size="12" fill="#1d2330">%s</text>`+
			`<rect x="%d" y="%d" width="%d" height="%d" fill="%s"></rect><text x="%d" y="%d" font-size="12" fill="#5b6475">%s</text></g>`,
			template.HTMLEscapeString(b.title), y+13, template.HTMLEscapeString(truncate(b.label, 16)),
			labelW, y+2, bw, rowH-6, b.fill, labelW+bw+6, y+13, template.HTMLEscapeString(shortDur(b.d)))
	}
	sb.WriteString(`</svg>`)
	return template.HTML(sb.String())
}

// shortDur is a duration as a chart's value label: "850ms", "12.3s", "4m", "2h 5m".
func shortDur(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return since(d)
}
