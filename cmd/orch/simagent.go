package main

import (
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/orchrun/orch/agent"
)

// simAgentCmd is the simulated agent: a real process in the sandbox that plays a scenario file and speaks Claude
// Code's stream-json. It takes its prompt as claude -p does: the argument, or else standard input, byte for byte
// (orch gives it there: an argument cannot hold every prompt). It accepts claude's output flags so that a command
// line built for claude also works.
func (a *app) simAgentCmd() *cobra.Command {
	var scenario, format string
	var printMode, verbose bool
	cmd := &cobra.Command{
		Use:    "sim-agent --scenario FILE -p [PROMPT]",
		Short:  "Play a scenario file as a Claude-Code-compatible agent (for demos and tests)",
		Hidden: true,
		Args:   args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			var prompt string
			if len(args) == 1 {
				prompt = args[0]
			} else {
				in, err := io.ReadAll(io.LimitReader(a.stdin, maxSimPrompt+1))
				if err != nil {
					return fmt.Errorf("sim-agent: reading the prompt from stdin: %w", err)
				}
				if len(in) > maxSimPrompt {
					return usageErr("sim-agent: the prompt on stdin is larger than %d MiB", maxSimPrompt>>20)
				}
				prompt = string(in)
			}
			if prompt == "" {
				return usageErr("sim-agent: no prompt: give it as an argument or on stdin")
			}
			if scenario == "" {
				scenario = a.env("ORCH_SIM_SCENARIO")
			}
			if scenario == "" {
				return usageErr("sim-agent: --scenario is required")
			}
			s, err := agent.LoadScenario(scenario)
			if err != nil {
				return usageErr("%v", err)
			}
			taskID := a.env("ORCH_TASK_ID")
			attempt, err := strconv.Atoi(a.env("ORCH_ATTEMPT"))
			if err != nil || attempt < 1 {
				attempt = 1
			}
			dir, err := os.Getwd()
			if err != nil {
				return err
			}
			code, err := agent.PlaySim(cmd.Context(), s, taskID, attempt, prompt, dir, a.stdout)
			if err != nil {
				return err
			}
			if code != 0 {
				return withCode(code, errSilent)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&scenario, "scenario", "", "scenario file (env ORCH_SIM_SCENARIO)")
	f.BoolVarP(&printMode, "print", "p", true, "accepted for compatibility with claude (the prompt is the argument, else stdin)")
	f.StringVar(&format, "output-format", "stream-json", "accepted for compatibility with claude")
	f.BoolVar(&verbose, "verbose", false, "accepted for compatibility with claude")
	return cmd
}

// maxSimPrompt bounds the prompt the sim agent reads: more than any plan (10 MiB) with its guidance.
const maxSimPrompt = 64 << 20
