package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/orchrun/orch/brain"
	"github.com/orchrun/orch/pipeline"
)

func (a *app) brainCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "brain", Short: "The brain's three judgements, as JSON", Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() }}
	var name string
	cmd.PersistentFlags().StringVar(&name, "brain", "auto", "brain: auto, heuristic, claude or anthropic")
	check := func() error {
		_, note, err := resolveBrain(name)
		if err == nil {
			fmt.Fprintln(a.stderr, note)
		}
		return err
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "tasks PLAN",
		Short: "Extract the tasks of a plan",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := check(); err != nil {
				return err
			}
			plan, err := pipeline.Load(args[0])
			if err != nil {
				return err
			}
			tasks, err := plan.Tasks()
			if err != nil {
				return err
			}
			out := make([]map[string]string, len(tasks))
			for i, t := range tasks {
				out[i] = map[string]string{"id": t.ID, "title": t.Title, "description": t.Description}
			}
			return printJSON(a.stdout, out)
		},
	}, &cobra.Command{
		Use:   "interpret [FILE|-]",
		Short: "Interpret an agent's output (default: stdin)",
		Args:  args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := check(); err != nil {
				return err
			}
			data, err := a.readInput(args)
			if err != nil {
				return err
			}
			res, err := (&brain.Heuristic{}).Interpret(cmd.Context(), string(data))
			if err != nil {
				return err
			}
			return printJSON(a.stdout, res)
		},
	}, &cobra.Command{
		Use:   "decide FILE",
		Short: "Decide retry or escalate for {\"task_id\",\"task_title\",\"attempt_history\":[…]}",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := check(); err != nil {
				return err
			}
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
			res, err := (&brain.Heuristic{}).Decide(cmd.Context(), in)
			if err != nil {
				return err
			}
			return printJSON(a.stdout, res)
		},
	})
	return cmd
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
