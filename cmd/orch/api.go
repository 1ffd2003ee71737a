package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"runtime/debug"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/orchrun/orch/agent"
	"github.com/orchrun/orch/agent/prompttool"
	"github.com/orchrun/orch/api"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/store"
	"github.com/orchrun/orch/sandbox"
)

// promptCommand is the argument after `mcp` that makes orch Claude Code's permission prompt tool (prompttool.Serve)
// instead of its MCP server: Claude Code starts it with every claude run orch gives its hook, so it starts without the
// command line's machinery, as the hook does.
const promptCommand = "--permission-prompt"

// runPromptTool serves the permission prompt tool on stdin and stdout until Claude Code closes them.
func runPromptTool(stderr *os.File) int {
	home, _ := os.UserHomeDir()
	if err := prompttool.Serve(context.Background(), os.Stdin, os.Stdout, os.Getenv(agent.HookEnv), home, orchVersion()); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}

// orchVersion is this binary's module version ("dev" for a build from a work tree).
func orchVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// promptToolFor is the command that serves orch's permission prompt tool where a run's agent runs, beside the hook
// (hook is hookFor's answer): nil when there is no hook.
func promptToolFor(hook string, opts jobs.Options, self string) []string {
	if hook == "" {
		return nil
	}
	if opts.Sandbox == "docker" {
		self = sandbox.OrchPath
	}
	return []string{self, "mcp", promptCommand}
}

func (a *app) mcpCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve orch's MCP server on stdin and stdout, for an MCP client (Claude Desktop, Claude Code, an IDE)",
		Long: "Serve orch's tools over MCP's stdio transport: start_run, list_runs, get_run, get_events, get_diff,\n" +
			"list_questions, answer_question and cancel_run, on the store the flags name, as the person running orch\n" +
			"(audited as via mcp). Unless --no-worker, a worker runs here too, so the runs it starts go on. orch serve,\n" +
			"orch bot and orch web serve the same tools over streamable HTTP at /mcp, behind ORCH_API_TOKENS.\n" +
			"An MCP client's configuration: {\"command\": \"orch\", \"args\": [\"mcp\", \"--workspace\", \"/path/to/repo\"]}.\n" +
			"With --permission-prompt it is instead the permission prompt tool orch gives Claude Code (internal).",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if prompt, _ := cmd.Flags().GetBool("permission-prompt"); prompt {
				if code := runPromptTool(os.Stderr); code != 0 {
					return withCode(code, errSilent)
				}
				return nil
			}
			wk, err := a.sideWorker(cmd)
			if err != nil {
				return err
			}
			b, err := a.backend(cmd)
			if err != nil {
				return err
			}
			defer b.Close()
			front, err := a.front(cmd, b, "local")
			if err != nil {
				return err
			}
			s, err := a.apiServer(b, front)
			if err != nil {
				return err
			}
			stop, err := wk.start(a, b)
			if err != nil {
				return err
			}
			defer stop()
			err = s.MCP(whoami(), orchVersion()).Run(cmd.Context(), &mcp.StdioTransport{})
			if errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		},
	}
	f := cmd.Flags()
	f.Bool("no-worker", false, "only serve the tools: the runs started go on where a worker runs")
	f.Bool("permission-prompt", false, "serve the permission prompt tool orch gives Claude Code instead")
	f.MarkHidden("permission-prompt")
	a.runFlags(cmd) // the options of the runs started here, and of its worker
	return cmd
}

// apiServer is the HTTP API and MCP server of a store: its tokens from ORCH_API_TOKENS, its runs started by front.
func (a *app) apiServer(b *store.Backend, front *runFront) (*api.Server, error) {
	tokens, err := api.ParseTokens(a.env("ORCH_API_TOKENS"))
	if err != nil {
		return nil, usageErr("%v", err)
	}
	s, err := api.New(api.Config{Store: b.Store, Queue: b.Queue, Front: front.Front, Diffs: front.diffs, Tokens: tokens,
		LocalUser: whoami(), PublicURL: a.env("ORCH_PUBLIC_URL"), Log: a.log})
	if err != nil {
		return nil, withCode(exitUsage, err)
	}
	return s, nil
}

// withAPI serves the API at /api/v1/ and MCP at /mcp beside view.
func withAPI(view http.Handler, s *api.Server) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(api.Prefix, s.Handler())
	mux.Handle(api.MCPPath, s.MCPHandler(orchVersion()))
	mux.Handle("/", view)
	return mux
}
