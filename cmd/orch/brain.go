package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/orchrun/orch/brain"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/pipeline"
)

func (a *app) brainCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "brain", Short: "The brain's three judgements, as JSON", Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() }}
	pf := cmd.PersistentFlags()
	pf.String("brain", "auto", "brain: auto, heuristic, claude or anthropic (env ORCH_BRAIN)")
	pf.String("brain-model", "", "model of an LLM brain (env ORCH_BRAIN_MODEL)")
	pf.Bool("llm-only", false, "skip the explicit-marker fast path; always ask the LLM (env ORCH_LLM_ONLY)")
	pf.Float64("similarity-threshold", 0.8, "error similarity from which failures count as the same (env ORCH_SIMILARITY_THRESHOLD)")
	// open resolves the brain and says which one answers, on stderr: stdout is the JSON.
	open := func(cmd *cobra.Command) (*brain.Fallback, error) {
		llmOnly, threshold, err := a.brainTuning(cmd)
		if err != nil {
			return nil, err
		}
		bc, err := a.chooseBrain(cmd)
		if err != nil {
			return nil, err
		}
		fmt.Fprintln(a.stderr, bc.note)
		return brains{apiKey: a.env("ANTHROPIC_API_KEY")}.forRun(jobs.Options{Brain: bc.name, BrainModel: bc.model,
			LLMOnly: llmOnly, SimilarityThreshold: threshold})
	}
	// report says on stderr when the LLM's answer was not used.
	report := func(fallback string) {
		if fallback != "" {
			fmt.Fprintln(a.stderr, "brain: "+fallback)
		}
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "tasks PLAN",
		Short: "Extract the tasks of a plan",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			plan, err := pipeline.Load(args[0])
			if err != nil {
				return err
			}
			bn, err := open(cmd)
			if err != nil {
				return err
			}
			tasks, err := bn.Tasks(cmd.Context(), plan.Content)
			if err != nil {
				return brainErr(err)
			}
			report(tasks.Fallback)
			return printJSON(a.stdout, tasks)
		},
	}, &cobra.Command{
		Use:   "interpret [FILE|-]",
		Short: "Interpret an agent's output (default: stdin)",
		Args:  args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := a.readInput(args)
			if err != nil {
				return err
			}
			bn, err := open(cmd)
			if err != nil {
				return err
			}
			res, err := bn.Interpret(cmd.Context(), string(data))
			if err != nil {
				return brainErr(err)
			}
			report(res.Fallback)
			return printJSON(a.stdout, res)
		},
	}, &cobra.Command{
		Use:   "decide FILE",
		Short: "Decide retry or escalate for {\"task_id\",\"task_title\",\"attempt_history\":[…]}",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := a.readInput(args)
			if err != nil {
				return err
			}
			var in brain.DecideInput
			if err := json.Unmarshal(data, &in); err != nil {
				return usageErr("decide input %s: %v", args[0], err)
			}
			if len(in.AttemptHistory) == 0 {
				return usageErr("decide input %s: attempt_history is empty", args[0])
			}
			bn, err := open(cmd)
			if err != nil {
				return err
			}
			res, err := bn.Decide(cmd.Context(), in)
			if err != nil {
				return brainErr(err)
			}
			report(res.Fallback)
			return printJSON(a.stdout, res)
		},
	})
	return cmd
}

// brainErr classifies a judgement's failure: a plan without tasks is the user's to fix; an unavailable brain is not.
func brainErr(err error) error {
	if errors.Is(err, pipeline.ErrNoTasks) {
		return withCode(exitUsage, err)
	}
	return withCode(exitFailed, fmt.Errorf("brain unavailable: %w", err))
}

func (a *app) readInput(args []string) ([]byte, error) {
	if len(args) == 0 || args[0] == "-" {
		return io.ReadAll(a.stdin)
	}
	data, err := os.ReadFile(args[0])
	if err != nil {
		return nil, usageErr("%v", err)
	}
	return data, nil
}
