package brain

import (
	"strings"
)

// markers.go is the fast path: orch's task prompt asks agents to end with explicit marker lines, and when
// they do no judgement (and no LLM call) is needed.

var (
	// A marker line: the key at the start of a line, optionally in markdown emphasis or a heading/quote.
	// Keys are orch's protocol words in capitals, so prose like "Options: --verbose" is not a block. A
	// mixed-case "Status" counts only as a heading or in bold ("**Status:** ✅ Complete", as agents write
	// summaries), not bare, where it is more likely a tool's output ("Status:  Failed" from kubectl).
	markerLineRe = lazyRE(`^[\s>]*(?:(?:#+\s*)?[*_]{0,2}(STATUS|NEEDS_HUMAN|QUESTION|OPTIONS|RECOMMENDATION|ERROR|SUMMARY)|(?:#+\s*[*_]{0,2}|[*_]{2})((?i)status))[*_]{0,2}\s*:[*_]{0,2}\s*(.*)$`)
	statusWordRe = lazyRE(`^[^A-Za-z]*([A-Za-z][A-Za-z_ -]*)`)
)

// marker is one marker line and the lines that continue it.
type marker struct {
	key   string // upper case
	value string // the rest of the line and its continuation, trimmed
}

// ExplicitMarkers is the fast path usable before an LLM call: it reports an interpretation when the output
// carries an explicit marker ("STATUS: needs_human", "NEEDS_HUMAN:", "STATUS: completed", "STATUS: failed",
// or a structured QUESTION:/OPTIONS:+RECOMMENDATION: block), else ok=false.
//
// Markers count only at the start of a line outside fenced code; GUIDANCE lines (orch's own input echoed
// back) are ignored. When several STATUS lines occur the last one wins, as the agent's final word; a
// completed status next to a question or NEEDS_HUMAN block is needs_help, since asking is the safer reading.
func ExplicitMarkers(output string) (Interpretation, bool) {
	return explicitMarkers(newDoc(output))
}

func explicitMarkers(d *doc) (Interpretation, bool) {
	ms := d.markers()
	if len(ms) == 0 {
		return Interpretation{}, false
	}
	status, byKey, needsHuman := readMarkers(ms)
	structured := byKey["QUESTION"] != "" || (byKey["OPTIONS"] != "" && byKey["RECOMMENDATION"] != "")

	in := Interpretation{Via: viaMarker, Summary: byKey["SUMMARY"], Error: truncate(byKey["ERROR"], maxErrorLen)}
	switch {
	case status == StatusFailed:
		in.Status = StatusFailed
		if in.Error == "" {
			in.Error = extractError(d)
		}
		if in.Error == "" {
			in.Error = "the agent reported STATUS: failed without an error message"
		}
	case status == StatusNeedsHelp || needsHuman || structured:
		markedQuestion(d, &in, byKey)
	case status == StatusCompleted:
		// An ERROR line before a final STATUS: completed was recovered from; the contract's error is for failures.
		in.Status, in.Error = StatusCompleted, ""
	default:
		return Interpretation{}, false
	}
	if in.Summary == "" {
		in.Summary = summarize(d.withoutMarkers())
	}
	return in, true
}

// readMarkers reads a document's markers: the last STATUS that names a status, each other key's first value, and
// whether a NEEDS_HUMAN line is there.
func readMarkers(ms []marker) (status Status, byKey map[string]string, needsHuman bool) {
	byKey = map[string]string{}
	for _, m := range ms {
		switch m.key {
		case "STATUS":
			if s := statusValue(m.value); s != "" {
				status = s
			}
		case "NEEDS_HUMAN":
			needsHuman = true
		}
		if _, seen := byKey[m.key]; !seen || m.key == "STATUS" {
			byKey[m.key] = m.value
		}
	}
	return status, byKey, needsHuman
}

// markedQuestion makes in the question the markers ask: their QUESTION (or NEEDS_HUMAN) and OPTIONS, with what the
// text says where they say nothing, and the recommendation as the label of the option it names ("B" → "In-memory";
// one that names none stays as the agent wrote it).
func markedQuestion(d *doc, in *Interpretation, byKey map[string]string) {
	in.Status = StatusNeedsHelp
	in.Question = byKey["QUESTION"]
	if in.Question == "" {
		in.Question = byKey["NEEDS_HUMAN"]
	}
	var opts []choice
	if o := byKey["OPTIONS"]; o != "" {
		opts = parseOptions(o)
		in.Options = optionLabels(opts)
	}
	q := readQuestion(d, in.Question == "", len(in.Options) == 0)
	if in.Question == "" {
		in.Question = q.question
	}
	if len(in.Options) == 0 {
		in.Options = q.options
	}
	switch rec := byKey["RECOMMENDATION"]; {
	case rec != "":
		in.Recommendation = rec
		if l, ok := resolveRecommendation(rec, in.Options); ok {
			in.Recommendation = l
		}
	case markedOption(opts) != "":
		in.Recommendation = markedOption(opts)
	default:
		in.Recommendation = q.recommendation
	}
	if in.Question == "" {
		in.Question = "The agent asked for a human decision. Please review the output and advise."
	}
	in.Question = truncate(in.Question, 1000)
}

// statusValue maps the words agents use after STATUS: onto the three statuses; "" when it is none of them.
func statusValue(v string) Status {
	m := statusWordRe.FindStringSubmatch(v)
	if m == nil {
		return ""
	}
	w := strings.NewReplacer("-", "_", " ", "_").Replace(strings.ToLower(strings.TrimSpace(m[1])))
	switch {
	case strings.HasPrefix(w, "needs_"), strings.HasPrefix(w, "need_"), strings.HasPrefix(w, "blocked"),
		strings.HasPrefix(w, "waiting"):
		return StatusNeedsHelp
	case strings.HasPrefix(w, "complete"), strings.HasPrefix(w, "done"), strings.HasPrefix(w, "success"),
		strings.HasPrefix(w, "succeeded"), strings.HasPrefix(w, "finished"), w == "passed", w == "ok":
		return StatusCompleted
	case strings.HasPrefix(w, "fail"), strings.HasPrefix(w, "error"), strings.HasPrefix(w, "errored"):
		return StatusFailed
	}
	return ""
}

// markers finds the marker lines outside fenced code and reads each one's value: the rest of its line plus
// the lines after it up to the next marker or blank line. OPTIONS may be spread over blank-separated lines,
// so its block continues across a blank line while the next line still looks like an option.
func (d *doc) markers() []marker {
	var out []marker
	inFence := false
	for i := 0; i < len(d.lines); i++ {
		l := d.lines[i]
		if fenceRe.MatchString(l) {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		m := markerLineRe.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		// "QUESTION: … OPTIONS: A) … B) … RECOMMENDATION: A" may all be on one line: each key after the
		// first starts a marker of its own, and the lines that follow continue the last.
		segs := inlineMarkers(strings.ToUpper(m[1]+m[2]), m[3])
		out = append(out, segs[:len(segs)-1]...)
		last, end := d.continued(segs[len(segs)-1], i+1)
		out = append(out, last)
		i = end - 1
	}
	return out
}

// continued is marker m with the lines from line i on that continue its value, and the line where it ends. A
// marker, a fence or a blank line ends it, but for a blank line before the value starts or between OPTIONS' items;
// STATUS takes no more lines; OPTIONS' lines keep their own lines and indentation.
func (d *doc) continued(m marker, i int) (marker, int) {
	parts := []string{m.value}
	j := i
	for ; j < len(d.lines); j++ {
		next := d.lines[j]
		if markerLineRe.MatchString(next) || fenceRe.MatchString(next) {
			break
		}
		if strings.TrimSpace(next) == "" {
			if m.key == "OPTIONS" && j+1 < len(d.lines) && unitStartRe.MatchString(d.lines[j+1]) && !markerLineRe.MatchString(d.lines[j+1]) {
				continue
			}
			// The value may start on the line after the key.
			if strings.Join(parts, "") == "" {
				continue
			}
			break
		}
		if m.key == "STATUS" {
			break
		}
		if m.key == "OPTIONS" {
			parts = append(parts, next)
		} else {
			parts = append(parts, strings.TrimSpace(next))
		}
	}
	sep := " "
	if m.key == "OPTIONS" {
		sep = "\n"
	}
	return marker{key: m.key, value: strings.TrimSpace(strings.Join(parts, sep))}, j
}

// inlineMarkerRe is a protocol key inside a marker line's value, in capitals as orch's prompt writes them, so
// prose that happens to say "options:" does not split a value.
var inlineMarkerRe = lazyRE(`(?:^|\s)[*_]{0,2}(STATUS|NEEDS_HUMAN|QUESTION|OPTIONS|RECOMMENDATION|ERROR|SUMMARY)[*_]{0,2}:[*_]{0,2}(?:\s|$)`)

// inlineMarkers splits the value of a marker line at the keys written inside it.
func inlineMarkers(key, value string) []marker {
	var out []marker
	for {
		locs := inlineMarkerRe.FindAllStringSubmatchIndex(value, 1)
		if locs == nil {
			return append(out, marker{key: key, value: strings.TrimSpace(value)})
		}
		loc := locs[0]
		out = append(out, marker{key: key, value: strings.TrimSpace(value[:loc[0]])})
		key, value = value[loc[2]:loc[3]], value[loc[1]:]
	}
}

// withoutMarkers is the document minus its marker lines, for a summary in the agent's own words.
func (d *doc) withoutMarkers() *doc {
	var kept []string
	for _, l := range d.lines {
		if m := markerLineRe.FindStringSubmatch(l); m != nil && strings.ToUpper(m[1]+m[2]) == "STATUS" {
			continue
		}
		kept = append(kept, l)
	}
	if strings.TrimSpace(strings.Join(kept, "")) == "" {
		return d
	}
	return newDoc(strings.Join(kept, "\n"))
}
