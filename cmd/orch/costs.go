package main

import (
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/store"
)

func (a *app) costsCmd() *cobra.Command {
	var asJSON bool
	var limit int
	var team, since string
	cmd := &cobra.Command{
		Use:   "costs [RUN_ID]",
		Short: "Tokens and USD per run, per task and per model (agent and brain); a team's spend per day with --team",
		Args:  args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 1 {
				return usageErr("--limit must be at least 1, got %d", limit)
			}
			if team != "" && len(args) == 1 {
				return usageErr("--team takes no RUN_ID: it shows a team's spend over days")
			}
			if err := jobs.CheckTeam(team); err != nil {
				return usageErr("--team: %v", err)
			}
			if cmd.Flags().Changed("since") && !cmd.Flags().Changed("team") {
				return usageErr("--since goes with --team: it says how far back a team's spend is shown")
			}
			b, err := a.backend(cmd)
			if err != nil {
				return err
			}
			defer b.Close()
			if cmd.Flags().Changed("team") {
				return a.teamCosts(cmd, b.Store, team, since, asJSON)
			}
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
	cmd.Flags().StringVar(&team, "team", "", "a team's spend per day (a Slack channel id, a GitHub owner/repo, an API person, or --team's name)")
	cmd.Flags().StringVar(&since, "since", "7d", "with --team: how far back, in days (7d) or hours (48h)")
	return cmd
}

// teamCosts prints what team spent each day since since, and where its budget stands this period.
func (a *app) teamCosts(cmd *cobra.Command, st *store.Store, team, since string, asJSON bool) error {
	if strings.TrimSpace(team) == "" {
		return usageErr("--team needs a team's name")
	}
	span, err := parseSince(since)
	if err != nil {
		return err
	}
	now := st.Now()
	days, err := st.TeamSpend(cmd.Context(), team, now.Add(-span), now)
	if err != nil {
		return err
	}
	led, budget, budgeted, err := st.LedgerOf(cmd.Context(), team, now)
	if err != nil {
		return err
	}
	var total float64
	for _, d := range days {
		total += d.USD
	}
	if asJSON {
		out := map[string]any{"team": team, "since": now.Add(-span).UTC(), "days": days, "total_usd": total}
		if budgeted {
			out["budget"] = map[string]any{"usd": budget.USD + led.ExtraUSD, "period": budget.Period, "key": led.Key,
				"spent_usd": led.SpentUSD, "held_usd": led.ReservedUSD, "running": led.Running}
		}
		return printJSON(a.stdout, out)
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "DAY (UTC)	ATTEMPTS	USD	")
	for _, d := range days {
		fmt.Fprintf(tw, "%s	%d	%.4f	\n", d.Day.Format("2006-01-02"), d.Attempts, d.USD)
	}
	fmt.Fprintf(tw, "total		%.4f	\n", total)
	tw.Flush()
	if budgeted {
		fmt.Fprintf(a.stdout, "\nBudget: %s of %s this %s (%s)", jobs.USD(led.SpentUSD), jobs.USD(budget.USD+led.ExtraUSD),
			budget.Period, led.Key)
		if led.Running > 0 {
			fmt.Fprintf(a.stdout, "; %d attempts running hold %s", led.Running, jobs.USD(led.ReservedUSD))
		}
		fmt.Fprintln(a.stdout)
	} else if len(days) == 0 {
		fmt.Fprintf(a.stdout, "\nTeam %s spent nothing in that time, and has no budget in orch.yaml.\n", team)
	}
	return nil
}

// parseSince reads a span back from now: "7d", "48h", "90m".
func parseSince(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if n, ok := strings.CutSuffix(t, "d"); ok {
		days, err := strconv.Atoi(n)
		if err != nil || days < 1 || days > 400 {
			return 0, usageErr("--since %q: want days from 1d to 400d, or a duration such as 48h", s)
		}
		return time.Duration(days) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(t)
	if err != nil || d <= 0 || d > 400*24*time.Hour {
		return 0, usageErr("--since %q: want days from 1d to 400d, or a duration such as 48h", s)
	}
	return d, nil
}
