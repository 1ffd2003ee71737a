package main

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orchrun/orch/brain"
	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/pipeline"
)

// brainChoice is the brain a command uses, resolved once from --brain, env and what this machine has.
type brainChoice struct {
	name  string // heuristic, claude or anthropic
	model string
	note  string // what to tell the person about the choice
}

// chooseBrain resolves --brain. auto takes the Messages API when ANTHROPIC_API_KEY is set, else the claude CLI when
// it is on PATH, else the heuristic. An LLM brain that was asked for but cannot work here is said so, clearly, and
// the heuristic brain is used instead: a run must not fail, or judge silently worse, for a missing tool.
func (a *app) chooseBrain(cmd *cobra.Command) (brainChoice, error) {
	name := a.set.str(cmd, "brain", "ORCH_BRAIN", a.set.file.Brain, "auto")
	c := brainChoice{model: a.set.str(cmd, "brain-model", "ORCH_BRAIN_MODEL", a.set.file.BrainModel, "")}
	key := a.env("ANTHROPIC_API_KEY")
	switch name {
	case "auto", "":
		c.name, c.note = autoBrain(cmd.Context(), key, c.model)
	case "heuristic":
		c.name, c.note = "heuristic", "brain: heuristic"
	case "claude", "anthropic":
		if err := brain.Available(name, exec.LookPath, key); err != nil {
			c.name = "heuristic"
			c.note = fmt.Sprintf("brain: %s is not available here (%s); falling back to the heuristic brain",
				name, strings.TrimPrefix(err.Error(), brain.ErrUnavailable.Error()+": "))
			break
		}
		c.name, c.note = name, "brain: "+name
	default:
		return c, usageErr("--brain %q: want auto, heuristic, claude or anthropic", name)
	}
	if c.model != "" && c.name != "heuristic" {
		c.note += " (model " + c.model + ")"
	}
	return c, nil
}

// prober is an LLM brain that can be asked whether it answers.
type prober interface {
	Probe(ctx context.Context) error
}

// autoBrain is --brain auto: the Messages API when ANTHROPIC_API_KEY is set, else the claude CLI when it is on PATH,
// each only once it has answered a probe (a key can be revoked or out of credit; a claude on PATH may not be Claude
// Code, or not be signed in); else the heuristic. The note says which brain judges and why, and why the others do
// not: it is the run's first line.
func autoBrain(ctx context.Context, key, model string) (name, note string) {
	candidates := []struct {
		name, because string
		build         func() (prober, error)
	}{
		{"anthropic", "ANTHROPIC_API_KEY is set and the Messages API answers", func() (prober, error) {
			return brain.NewAnthropic(brain.AnthropicConfig{APIKey: key, Model: model})
		}},
		{"claude", "the claude CLI on PATH answers", func() (prober, error) {
			return brain.NewClaudeCLI(brain.ClaudeCLIConfig{Model: model}), nil
		}},
	}
	var refused []string
	for _, cand := range candidates {
		if brain.Available(cand.name, exec.LookPath, key) != nil {
			continue
		}
		p, err := cand.build()
		if err == nil {
			err = p.Probe(ctx)
		}
		if err == nil {
			return cand.name, "brain: " + cand.name + " (auto: " + cand.because + ")"
		}
		refused = append(refused, fmt.Sprintf("the %s brain did not answer (%v)", cand.name, err))
	}
	if len(refused) == 0 {
		return "heuristic", "brain: heuristic (auto: no LLM brain is configured; set ANTHROPIC_API_KEY or install the claude CLI)"
	}
	return "heuristic", "brain: heuristic (auto: " + strings.Join(refused, "; ") + "; every judgement is the offline heuristic's)"
}

// brainTuning resolves how a brain judges, from flags, env and orch.yaml: --llm-only (ORCH_LLM_ONLY, llm_only) and
// --similarity-threshold (ORCH_SIMILARITY_THRESHOLD, similarity_threshold), a ratio in (0, 1]: 0.8, the seed's loop
// detector's value, unless set.
func (a *app) brainTuning(cmd *cobra.Command) (llmOnly bool, threshold float64, err error) {
	fc := a.set.file
	file := ""
	if fc.LLMOnly {
		file = "true"
	}
	v := a.set.lookup(cmd, "llm-only", "ORCH_LLM_ONLY", "llm_only", file, "false")
	if llmOnly, err = strconv.ParseBool(strings.TrimSpace(v.v)); err != nil {
		return false, 0, usageErr("--llm-only %q: want true or false%s", safetext.OneLine(v.v, 40), v.suffix())
	}
	file = ""
	if fc.SimilarityThreshold != nil {
		// A 0 written in orch.yaml is a value, and refused below: it would make every two failures "the same".
		file = strconv.FormatFloat(*fc.SimilarityThreshold, 'g', -1, 64)
	}
	v = a.set.lookup(cmd, "similarity-threshold", "ORCH_SIMILARITY_THRESHOLD", "similarity_threshold", file, "0.8")
	threshold, err = strconv.ParseFloat(strings.TrimSpace(v.v), 64)
	if err != nil || !(threshold > 0 && threshold <= 1) {
		return false, 0, usageErr("--similarity-threshold %q: want a ratio above 0 and at most 1 (e.g. 0.8)%s", safetext.OneLine(v.v, 40), v.suffix())
	}
	return llmOnly, threshold, nil
}

// brains builds the brain of a run from its options. The API key comes from orch's environment and is never stored
// with the run.
type brains struct {
	apiKey string
}

func (b brains) forRun(opts jobs.Options) (*brain.Fallback, error) {
	f := &brain.Fallback{LLMOnly: opts.LLMOnly, SplitPlan: splitPlan,
		Heuristic: &brain.Heuristic{SimilarityThreshold: opts.SimilarityThreshold}}
	switch opts.Brain {
	case "heuristic", "":
	case "claude":
		f.LLM = brain.NewClaudeCLI(brain.ClaudeCLIConfig{Model: opts.BrainModel})
	case "anthropic":
		llm, err := brain.NewAnthropic(brain.AnthropicConfig{APIKey: b.apiKey, Model: opts.BrainModel})
		if err != nil {
			return nil, err
		}
		f.LLM = llm
	default:
		return nil, fmt.Errorf("unknown brain %q", opts.Brain)
	}
	return f, nil
}

// splitPlan is the offline task extractor: the markdown milestone parser.
func splitPlan(plan string) ([]brain.Task, error) {
	ts, err := pipeline.ParseMilestone(plan)
	if err != nil {
		return nil, err
	}
	out := make([]brain.Task, len(ts))
	for i, t := range ts {
		out[i] = brain.Task{ID: t.ID, Title: t.Title, Description: t.Description}
	}
	return out, nil
}
