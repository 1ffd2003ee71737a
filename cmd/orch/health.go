package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/orchrun/orch/agent"
	"github.com/orchrun/orch/bot"
	"github.com/orchrun/orch/brain"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/sandbox"
	"github.com/orchrun/orch/worker"
)

// check is one part of `orch health`.
type check struct {
	part   string
	ok     bool
	skip   bool
	detail string
}

func (a *app) healthCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "health",
		Short: "Check Redis, Docker, the agent CLI, the brain, Slack and GitHub; exit 1 naming what fails",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			opts, _, _, err := a.baseOptions(cmd, "local")
			if err != nil {
				return err
			}
			var checks []check
			checks = append(checks, a.checkRedis(cmd), a.checkTeams(cmd))
			checks = append(checks, a.checkDocker(ctx, opts))
			if opts.Sandbox == "docker" && (opts.Agent == "claude" || opts.Agent == "codex") {
				// The agent runs in the sandbox image; the Docker check above covers the image.
				checks = append(checks, check{part: "agent", ok: true, detail: opts.Agent + " (in the sandbox image)"})
			} else {
				checks = append(checks, checkAgentCLI(ctx, opts.Agent))
			}
			if opts.Agent == "claude" {
				checks = append(checks, check{part: "permissions", ok: true, detail: worker.Policy(opts).Summary()})
				checks = append(checks, a.checkHook(opts))
			}
			checks = append(checks, a.checkBrain(opts))
			checks = append(checks, a.checkSlack(ctx))
			checks = append(checks, a.checkGitHub(cmd))
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			var failed []string
			for _, c := range checks {
				mark := "ok"
				switch {
				case c.skip:
					mark = "-"
				case !c.ok:
					mark = "FAIL"
					failed = append(failed, c.part)
				}
				// A check's detail quotes what a library said, which may quote a URL or a token.
				fmt.Fprintf(tw, "%s\t%s\t%s\n", c.part, mark, a.secrets.scrub(c.detail))
			}
			tw.Flush()
			if len(failed) > 0 {
				return withCode(exitFailed, fmt.Errorf("unhealthy: %s", strings.Join(failed, ", ")))
			}
			return nil
		},
	}
	a.runFlags(cmd)
	return cmd
}

// checkHook says which program decides a claude run's tool calls: orch-hook beside orch, orch's own binary, or, in
// Docker with an orch that cannot run in the image, none (Claude Code's own rules carry the policy).
func (a *app) checkHook(opts jobs.Options) check {
	self, err := os.Executable()
	if err != nil {
		return check{part: "hook", detail: "locating the orch binary: " + err.Error()}
	}
	hook := hookFor(opts, self, hookProgram(self, a.log))
	switch {
	case hook == "":
		return check{part: "hook", ok: true, detail: "none: orch is not a static binary, so it cannot run in the image; " +
			"Claude Code's own rules carry the policy (build with CGO_ENABLED=0, as make build does)"}
	case opts.Sandbox == "docker":
		return check{part: "hook", ok: true, detail: hook + " (orch's static binary, mounted in the container)"}
	case strings.HasSuffix(hook, " "+hookCommand):
		return check{part: "hook", ok: true, detail: hook + " (no " + hookProgramName + " of protocol \"" +
			agent.HookProtocol + "\" beside orch; it would start in 2 ms where orch takes 10, before every tool call)"}
	}
	return check{part: "hook", ok: true, detail: hook + " (" + agent.HookProtocol + ")"}
}

func (a *app) checkRedis(cmd *cobra.Command) check {
	url := a.set.str(cmd, "redis", "ORCH_REDIS_URL", a.set.file.Redis, "")
	b, err := a.backend(cmd)
	if err != nil {
		return check{part: "redis", detail: err.Error()}
	}
	defer b.Close()
	if url == "" {
		return check{part: "redis", ok: true, detail: "embedded store in " + a.set.str(cmd, "state-dir", "ORCH_STATE_DIR", a.set.file.StateDir, ".orch")}
	}
	return check{part: "redis", ok: true, detail: redactURL(url) + " answers"}
}

func (a *app) checkDocker(ctx context.Context, opts jobs.Options) check {
	if opts.Sandbox != "docker" && a.env("DOCKER_HOST") == "" {
		if _, err := exec.LookPath("docker"); err != nil {
			return check{part: "docker", skip: true, detail: "not used (sandbox local)"}
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	image := opts.Image
	if image == "" {
		image = sandbox.DefaultImage
	}
	d, err := sandbox.NewDocker(ctx, sandbox.DockerConfig{Host: a.env("DOCKER_HOST"), Image: image, Logger: a.log})
	if err != nil {
		if opts.Sandbox != "docker" {
			return check{part: "docker", skip: true, detail: "not used (sandbox local): " + err.Error()}
		}
		return check{part: "docker", detail: err.Error()}
	}
	d.Close()
	return check{part: "docker", ok: true, detail: "engine answers; image " + image + " present"}
}

func checkAgentCLI(ctx context.Context, name string) check {
	switch {
	case name == "sim":
		return check{part: "agent", ok: true, detail: "sim (built in)"}
	case strings.HasPrefix(name, "cmd:"):
		fields := strings.Fields(strings.TrimPrefix(name, "cmd:"))
		if len(fields) == 0 {
			return check{part: "agent", detail: "empty cmd: template"}
		}
		name = strings.Trim(fields[0], `"'`)
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return check{part: "agent", detail: name + " is not on PATH"}
	}
	if name != "claude" {
		return check{part: "agent", ok: true, detail: path}
	}
	return check{part: "agent", ok: true, detail: path + ", " + claudeVersion(ctx, path)}
}

// claudeVersion says which Claude Code is installed and whether it can pause a tool call for a person.
func claudeVersion(ctx context.Context, path string) string {
	vctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(vctx, path, "--version").Output()
	v := strings.TrimSpace(string(out))
	if err != nil || v == "" {
		return "version unknown (claude --version failed)"
	}
	if !agent.SupportsDefer(v) {
		return v + ": older than " + agent.DeferVersion + ", so a tool call that needs approval is refused first and asked about after"
	}
	s := v + ": tool calls that need approval wait for a person"
	if agent.OffersQuestions(v) {
		s += "; Claude's own questions (AskUserQuestion) reach the hook"
	} else {
		s += "; from " + agent.QuestionsHiddenVersion + " Claude Code offers AskUserQuestion in -p only with a permission " +
			"prompt tool: orch gives its own (" + agent.PromptTool + ", `orch mcp --permission-prompt`), and Claude's " +
			"questions reach the hook through it"
	}
	return s
}

func (a *app) checkBrain(opts jobs.Options) check {
	if opts.Brain == "heuristic" || opts.Brain == "" {
		return check{part: "brain", ok: true, detail: "heuristic (offline)"}
	}
	if err := brain.Available(opts.Brain, exec.LookPath, a.env("ANTHROPIC_API_KEY")); err != nil {
		return check{part: "brain", detail: err.Error()}
	}
	return check{part: "brain", ok: true, detail: opts.Brain + " configured (not called)"}
}

func (a *app) checkSlack(ctx context.Context) check {
	token := a.env("SLACK_BOT_TOKEN")
	if token == "" {
		return check{part: "slack", skip: true, detail: "SLACK_BOT_TOKEN not set"}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	user, team, err := bot.AuthTest(ctx, token, a.env("SLACK_API_URL"))
	if err != nil {
		return check{part: "slack", detail: err.Error()}
	}
	return check{part: "slack", ok: true, detail: fmt.Sprintf("auth.test: %s in %s", user, team)}
}

// checkGitHub checks what orch needs on GitHub: a token that may write on the repository it serves, and for the
// webhook its secret. Without a token and a secret there is nothing to check.
func (a *app) checkGitHub(cmd *cobra.Command) check {
	secret := a.env("ORCH_GITHUB_WEBHOOK_SECRET")
	clientFor, err := a.githubClients()
	switch {
	case err != nil:
		return check{part: "github", detail: err.Error()}
	case clientFor == nil && secret == "":
		return check{part: "github", skip: true, detail: "ORCH_GITHUB_TOKEN not set"}
	case clientFor == nil:
		return check{part: "github", detail: "ORCH_GITHUB_WEBHOOK_SECRET is set but no token (ORCH_GITHUB_TOKEN) or App: orch cannot answer on GitHub"}
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
	defer cancel()
	_, ws, _, err := a.baseOptions(cmd, "local")
	if err != nil {
		return check{part: "github", detail: err.Error()}
	}
	repo, err := a.servedRepo(ctx, a.branchRequest(cmd), ws)
	if err != nil {
		return check{part: "github", detail: err.Error()}
	}
	gh, err := clientFor(ctx, repo)
	if err != nil {
		return check{part: "github", detail: err.Error()}
	}
	if a.env("ORCH_GITHUB_APP_ID") != "" {
		// An App writes issues and pull requests with the permissions its manifest names; Contents may be read only
		// (workers push with their own git credentials), so the repository's push permission says nothing here.
		if _, err := gh.MayWrite(ctx, repo); err != nil {
			return check{part: "github", detail: err.Error()}
		}
		return check{part: "github", ok: true, detail: fmt.Sprintf("GitHub App %s installed on %s; %s",
			a.env("ORCH_GITHUB_APP_ID"), repo, webhookNote(secret))}
	}
	write, err := gh.MayWrite(ctx, repo)
	switch {
	case err != nil:
		return check{part: "github", detail: err.Error()}
	case !write:
		return check{part: "github", detail: fmt.Sprintf("the token may read %s but not write on it: orch can open no pull request and answer in no issue", repo)}
	}
	return check{part: "github", ok: true, detail: fmt.Sprintf("the token may write on %s; %s", repo, webhookNote(secret))}
}

func webhookNote(secret string) string {
	if secret == "" {
		return "no webhook (ORCH_GITHUB_WEBHOOK_SECRET not set)"
	}
	return "webhook secret set"
}
