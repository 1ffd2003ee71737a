package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/orchrun/orch/jobs"
)

func (a *app) costsCmd() *cobra.Command {
	var asJSON bool
	var limit int
	cmd := &cobra.Command{
		Use:   "costs [RUN_ID]",
		Short: "Tokens and USD per run, per task and per model (agent and brain)",
		Args:  args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 1 {
				return usageErr("--limit must be at least 1, got %d", limit)
			}
			b, err := a.backend(cmd)
			if err != nil {
				return err
			}
			defer b.Close()
			var runs []*jobs.Run
			if len(args) == 1 {
				r, err := b.Store.Get(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				runs = []*jobs.Run{r}
			} else if runs, err = b.Store.List(cmd.Context(), limit); err != nil {
				return err
			}
			all := make([]jobs.RunCosts, len(runs))
			for i, r := range runs {
				all[i] = r.Costs()
			}
			if asJSON {
				if len(args) == 1 {
					return printJSON(a.stdout, all[0])
				}
				return printJSON(a.stdout, all)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
			defer tw.Flush()
			if len(args) == 0 {
				fmt.Fprintln(tw, "RUN\tSTATUS\tAGENT TOKENS (in/out)\tAGENT $\tBRAIN CALLS\tBRAIN $\tTOTAL $\t")
				var total float64
				for _, c := range all {
					fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%.4f\t%d\t%.4f\t%.4f\t\n", c.RunID, c.Status, c.Agent.InputTokens,
						c.Agent.OutputTokens, c.Agent.CostUSD, c.Brain.Calls, c.Brain.CostUSD, c.Agent.CostUSD+c.Brain.CostUSD)
					total += c.Agent.CostUSD + c.Brain.CostUSD
				}
				fmt.Fprintf(tw, "\t\t\t\t\t\t%.4f\t\n", total)
				return nil
			}
			c := all[0]
			fmt.Fprintf(tw, "TASK\tATTEMPTS\tAGENT TOKENS (in/out)\tAGENT $\tBRAIN CALLS\tBRAIN TOKENS (in/out)\tBRAIN $\t\n")
			for _, t := range c.Tasks {
				fmt.Fprintf(tw, "%s\t%d\t%d/%d\t%.4f\t%d\t%d/%d\t%.4f\t\n", t.TaskID, t.Attempts, t.Agent.InputTokens,
					t.Agent.OutputTokens, t.Agent.CostUSD, t.Brain.Calls, t.Brain.InputTokens, t.Brain.OutputTokens, t.Brain.CostUSD)
			}
			fmt.Fprintf(tw, "run %s\t\t%d/%d\t%.4f\t%d\t%d/%d\t%.4f\t\n", c.RunID, c.Agent.InputTokens, c.Agent.OutputTokens,
				c.Agent.CostUSD, c.Brain.Calls, c.Brain.InputTokens, c.Brain.OutputTokens, c.Brain.CostUSD)
			fmt.Fprintf(tw, "\t\t\t\t\t\t\t\nMODEL\tCALLS\tTOKENS (in/out)\tUSD\t\t\t\t\n")
			for _, m := range c.Models {
				fmt.Fprintf(tw, "%s\t%d\t%d/%d\t%.4f\t\t\t\t\n", m.Scope, m.Calls, m.InputTokens, m.OutputTokens, m.CostUSD)
			}
			fmt.Fprintf(tw, "total\t\t\t%.4f\t\t\t\t\n", c.Agent.CostUSD+c.Brain.CostUSD)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	cmd.Flags().IntVar(&limit, "limit", 20, "how many runs (without RUN_ID)")
	return cmd
}
