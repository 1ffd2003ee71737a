// Command bench measures orch end to end on loopback with a real Redis, using orch's own packages: how fast the Slack
// handlers and the GitHub webhook ack, how long a click or a comment takes to resume an agent, what a parked run
// costs, how many task steps one worker moves and what orch adds to each, and how fast a Docker sandbox starts. It
// writes bench/results.json and the table between the bench markers in README.md.
//
//	go run ./bench [-quick] [-only KEY,…] [-out bench/results.json] [-readme README.md]
//
// -only makes the named measurements alone (their keys: ack, steps, fairshare, …) and writes them over the results
// already in -out, whose machine line it leaves as it was; each note says how its number was obtained.
//
// It starts its own redis-server unless ORCH_BENCH_REDIS_URL names one (with an empty database: it is flushed
// between measurements). It never judges a time against a target: it fails only when a measurement could not be
// made or produced a number no correct run can.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// counts are how much each measurement does.
type counts struct {
	ackRounds     int   // rounds of 200 concurrent requests, per endpoint
	resumes       int   // clicks with orch's poll interval
	approvals     int   // clicks on a claude agent's approval
	resumesSlow   int   // clicks with asynq's default poll interval
	parked        int   // runs parked, then all answered
	stepRuns      int   // runs of the step measurement…
	stepTasks     int   // …of this many tasks each
	agentStarts   int   // no-op agent starts, each way
	dockerSamples int   // cold and warm starts, each
	worktrees     int   // worktree setups, on each repository
	concurrent    int   // runs at once on one repository
	history       []int // finished runs in the embedded store's workspaces, smallest first
	historyTimes  int   // samples of each command in each of them
	outputMB      int   // megabytes an agent prints to orch run
	rescues       int   // workers SIGKILLed mid-task
	crashTrials   int   // pairs of runs on one state dir, one of them SIGKILLed
	fairRuns      int   // runs of each team in the fair share measurement…
	fairTasks     int   // …of this many tasks each
	fairWarmup    time.Duration
	fairWindow    time.Duration // measured; the unequal variant is measured for half of it
	// questions are the numbers of runs waiting at which the question listings are timed, questionSamples times each.
	questions       []int
	questionSamples int
	helpStarts      int  // starts of `orch help` and of a static hello, each
	longPlan        int  // tasks of the long plan run by orch run on each store
	coldBuilds      bool // build cmd/orch and a minimal asynq program from an empty build cache
}

var (
	fullCounts = counts{ackRounds: 25, resumes: 100, approvals: 50, resumesSlow: 20, parked: 10000, stepRuns: 100, stepTasks: 20, agentStarts: 300,
		dockerSamples: 20, worktrees: 20, concurrent: 16,
		history: []int{100, 10000}, historyTimes: 15, outputMB: 200, rescues: 5, crashTrials: 50,
		fairRuns: 200, fairTasks: 50, fairWarmup: 5 * time.Second, fairWindow: time.Minute,
		questions: []int{1000, 10000}, questionSamples: 30, helpStarts: 100, coldBuilds: true, longPlan: 1000}
	quickCounts = counts{ackRounds: 2, resumes: 5, approvals: 3, resumesSlow: 2, parked: 200, stepRuns: 10, stepTasks: 20, agentStarts: 20,
		dockerSamples: 3, worktrees: 3, concurrent: 4,
		history: []int{100, 1000}, historyTimes: 3, outputMB: 20, rescues: 1, crashTrials: 3,
		fairRuns: 20, fairTasks: 20, fairWarmup: 2 * time.Second, fairWindow: 4 * time.Second,
		questions: []int{100, 1000}, questionSamples: 3, helpStarts: 5, longPlan: 40}
)

func main() {
	quick := flag.Bool("quick", false, "small counts: every measurement in under a minute, for a correctness check")
	out := flag.String("out", "bench/results.json", "where the results are written")
	readme := flag.String("readme", "README.md", `README whose bench table is rewritten ("" for none)`)
	only := flag.String("only", "", "comma-separated measurement keys: make only these, over the results in -out")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, mode := fullCounts, "full"
	if *quick {
		c, mode = quickCounts, "quick"
	}
	var base *Results
	var keys map[string]bool
	if *only != "" {
		keys = map[string]bool{}
		for _, k := range strings.Split(*only, ",") {
			keys[strings.TrimSpace(k)] = true
		}
		base = &Results{}
		data, err := os.ReadFile(*out)
		if err == nil {
			err = json.Unmarshal(data, base)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench: -only needs the results of a whole run in -out:", err)
			os.Exit(1)
		}
	}
	res, err := run(ctx, c, mode, base, keys)
	if err == nil {
		err = res.write(*out)
	}
	if err == nil && *readme != "" {
		err = updateReadme(*readme, res, *quick)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "bench: wrote %s", *out)
	if *readme != "" {
		fmt.Fprintf(os.Stderr, " and the table in %s", *readme)
	}
	fmt.Fprintln(os.Stderr)
}

// run makes every measurement, in order; those marked fresh start from an empty database. With only, it makes only
// the measurements named there, into base.
func run(ctx context.Context, c counts, mode string, base *Results, only map[string]bool) (*Results, error) {
	tmp, err := os.MkdirTemp("", "orch-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	srv, redisNote, err := openRedis(ctx, tmp)
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	step("building orch for the sim agent")
	bin, err := buildOrch(ctx, tmp)
	if err != nil {
		return nil, err
	}
	// Errors the worker and the bot log are worth seeing; their routine warnings are not.
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	r := &rig{redis: srv, orchBin: bin, shim: []string{filepath.Join(filepath.Dir(bin), "orch-shim")}, tmp: tmp, log: log}
	res := &Results{Notes: Notes{Mode: mode, Redis: redisNote}}
	if base != nil {
		res = base
	}
	for _, m := range measurements(c) {
		if only != nil && !only[m.key] {
			continue
		}
		step(m.name)
		if m.fresh {
			if err := srv.Flush(ctx); err != nil {
				return nil, err
			}
		}
		if err := m.do(ctx, r, res); err != nil {
			return nil, fmt.Errorf("%s: %w", m.key, err)
		}
	}
	if base == nil {
		res.Machine = machine(srv.Version(ctx))
	}
	wantParked := c.parked
	if only != nil && !only["parked"] {
		wantParked = res.ParkedRuns // as the whole run measured it
	}
	if err := res.check(wantParked); err != nil {
		return nil, fmt.Errorf("the results are not sane: %w", err)
	}
	return res, nil
}

// measurement is one of the suite's measurements: what it is called in errors (key) and in the progress (name),
// whether it starts from an empty database, and what it does, into the results.
type measurement struct {
	key, name string
	fresh     bool
	do        func(ctx context.Context, r *rig, res *Results) error
}

// measurements are the suite, in the order it runs.
func measurements(c counts) []measurement {
	return []measurement{
		{"ack", "ack: 200 concurrent signed requests to the Slack handlers", true,
			func(ctx context.Context, r *rig, res *Results) error {
				ack, err := measureAck(ctx, r, c.ackRounds)
				if err != nil {
					return err
				}
				res.AckP50Ms, res.AckP99Ms, res.Notes.Ack = roundTo(ack.p50, 3), roundTo(ack.p99, 3), ack.note
				return nil
			}},
		{"resume", "resume: click to resumed agent start, orch's poll interval, then asynq's default", true,
			func(ctx context.Context, r *rig, res *Results) error { return measureResumes(ctx, r, c, res) }},
		{"github-ack", "github ack: 200 concurrent signed issue_comment deliveries to the GitHub webhook", true,
			func(ctx context.Context, r *rig, res *Results) error {
				ack, err := measureGitHubAck(ctx, r, c.ackRounds, ackResult{p50: res.AckP50Ms, p99: res.AckP99Ms})
				if err != nil {
					return err
				}
				res.GitHubAckP50Ms, res.GitHubAckP99Ms = roundTo(ack.p50, 3), roundTo(ack.p99, 3)
				res.Notes.GitHubAck = ack.note
				return nil
			}},
		{"github-resume", "github resume: a comment answering a question to the resumed agent start", true,
			func(ctx context.Context, r *rig, res *Results) error {
				return measureGitHubResume(ctx, r, c.resumes, res)
			}},
		{"api-resume", "api resume: an answer POSTed to the API to the resumed agent start", true,
			func(ctx context.Context, r *rig, res *Results) error { return measureAPIResume(ctx, r, c.resumes, res) }},
		{"approval", "approval: click on a tool-call approval to the resumed claude process", true,
			func(ctx context.Context, r *rig, res *Results) error {
				approvals, err := clickToApproval(ctx, r, 20*time.Millisecond, c.approvals)
				if err != nil {
					return err
				}
				res.ApprovalResumeP50Ms = roundTo(percentileMs(approvals.click, 0.5), 2)
				res.ApprovalResumeP99Ms = roundTo(percentileMs(approvals.click, 0.99), 2)
				res.Notes.Approval = approvalNote(approvals)
				return nil
			}},
		{"agentstart", "agent start: the no-op agent with no shim, behind orch-shim and behind orch", false,
			func(ctx context.Context, r *rig, res *Results) error {
				a, err := measureAgentStart(ctx, r, c.agentStarts)
				if err != nil {
					return err
				}
				res.AgentStartP50Ms, res.AgentStartShimP50Ms = roundTo(a.bare, 2), roundTo(a.small, 2)
				res.AgentStartOrchShimP50Ms, res.Notes.AgentStart = roundTo(a.whole, 2), a.note
				return nil
			}},
		{"steps", "steps: task steps through one worker", true,
			func(ctx context.Context, r *rig, res *Results) error {
				return measureStepsAgainstAsynq(ctx, r, c, res)
			}},
		{"binary", "binary: orch's size, `orch help`'s start and cold builds against their anchors", false,
			func(ctx context.Context, r *rig, res *Results) error {
				b, err := measureBinary(ctx, r, c.helpStarts, c.coldBuilds)
				if err != nil {
					return err
				}
				res.OrchBinaryMB, res.HelpStartMs, res.HelloStartMs = roundTo(mb(b.orchBytes), 1), roundTo(b.helpMs, 2), roundTo(b.helloMs, 2)
				res.ColdBuildOrchSeconds, res.ColdBuildAsynqSeconds = nil, nil
				if c.coldBuilds {
					orch, asynq := roundTo(b.buildOrchS, 1), roundTo(b.buildAsynqS, 1)
					res.ColdBuildOrchSeconds, res.ColdBuildAsynqSeconds = &orch, &asynq
				}
				res.Notes.Binary = b.note
				return nil
			}},
		{"longplan", fmt.Sprintf("long plan: %d tasks by orch run on the embedded store and on Redis", c.longPlan), true,
			func(ctx context.Context, r *rig, res *Results) error {
				l, err := measureLongPlan(ctx, r, c.longPlan)
				if err != nil {
					return err
				}
				res.LongPlanTasks = l.tasks
				res.LongPlanEmbeddedFirstMs, res.LongPlanEmbeddedLastMs = roundTo(l.embeddedFirst, 1), roundTo(l.embeddedLast, 1)
				res.LongPlanRedisFirstMs, res.LongPlanRedisLastMs = roundTo(l.redisFirst, 1), roundTo(l.redisLast, 1)
				res.Notes.LongPlan = l.note
				return nil
			}},
		{"parked", fmt.Sprintf("parked: %d runs waiting for a human, then all answered", c.parked), true,
			func(ctx context.Context, r *rig, res *Results) error {
				parked, err := measureParked(ctx, r, c.parked)
				if err != nil {
					return err
				}
				res.ParkedRuns, res.ParkedWorkerSlotsBusy = parked.runs, parked.busy
				res.ParkedRedisBytesPerRun = math.Round(parked.bytesPerRun)
				res.ResumeAllSeconds = roundTo(parked.resumeAll.Seconds(), 2)
				res.Notes.Parked, res.Notes.ResumeAll = parked.note, parked.resumeNote
				return nil
			}},
		{"docker", "docker: cold and warm sandbox starts", true,
			func(ctx context.Context, r *rig, res *Results) error {
				docker, err := measureDocker(ctx, r, c.dockerSamples)
				if err != nil {
					return err
				}
				res.DockerColdStartP50Ms, res.DockerWarmStartP50Ms = roundPtr(docker.cold, 1), roundPtr(docker.warm, 1)
				res.DockerRepoStartP50Ms = roundPtr(docker.repo, 1)
				res.Notes.Docker = docker.note
				return nil
			}},
		{"worktrees", "worktrees: a run's worktree on 100 and 10,000 files; runs at once on one repository", false,
			func(ctx context.Context, r *rig, res *Results) error {
				wt, err := measureWorktrees(ctx, r.tmp, c.worktrees, c.concurrent)
				if err != nil {
					return err
				}
				res.WorktreeSetupP50Ms, res.WorktreeSetup100FilesP50Ms = roundTo(wt.large, 1), roundTo(wt.small, 1)
				res.WorktreeSetupColdP50Ms = roundTo(wt.cold, 1)
				res.ConcurrentRuns, res.ConcurrentRunsIsolated = wt.runs, wt.isolated
				res.Notes.Worktrees = wt.note
				return nil
			}},
		{"history", fmt.Sprintf("history: orch status and orch run in workspaces of %v finished runs", c.history), false,
			func(ctx context.Context, r *rig, res *Results) error { return measureHistoryInto(ctx, r, c, res) }},
		{"output", fmt.Sprintf("output: orch run's peak memory while its agent prints %d MB", c.outputMB), false,
			func(ctx context.Context, r *rig, res *Results) error {
				output, err := measureOutputRSS(ctx, r, c.outputMB)
				if err != nil {
					return err
				}
				res.RunRSS200MBOutputMB, res.Notes.Output = roundPtr(output.peakMB, 1), output.note
				return nil
			}},
		{"rescue", fmt.Sprintf("rescue: %d workers SIGKILLed mid-task, the other worker takes the step over", c.rescues), true,
			func(ctx context.Context, r *rig, res *Results) error {
				rescue, err := measureRescue(ctx, r, c.rescues)
				if err != nil {
					return err
				}
				res.RescueP50Seconds, res.Notes.Rescue = roundTo(percentileMs(rescue.samples, 0.5)/1000, 2), rescue.note
				return nil
			}},
		{"questions", "questions: the listings of the questions with 1,000 and then 10,000 runs waiting", true,
			func(ctx context.Context, r *rig, res *Results) error {
				q, err := measureQuestions(ctx, r, c.questions, c.questionSamples)
				if err != nil {
					return err
				}
				last := len(q.sizes) - 1
				res.QuestionsPageMsAt1k, res.QuestionsPageMsAt10k = roundTo(q.page[0], 2), roundTo(q.page[last], 2)
				res.QuestionsAPIMsAt10k, res.EscalationShowLookupMsAt10k = roundTo(q.api[last], 2), roundTo(q.show[last], 2)
				res.Notes.Questions = q.note
				return nil
			}},
		{"fairshare", "fair share: two teams weighted 3:1, both backlogged, on two workers", true,
			func(ctx context.Context, r *rig, res *Results) error { return measureFairShareInto(ctx, r, c, res) }},
		{"crash", fmt.Sprintf("crash: %d trials of two runs on one state dir, one SIGKILLed at random, then resumed", c.crashTrials), false,
			func(ctx context.Context, r *rig, res *Results) error {
				crash, err := measureCrashTrials(ctx, r, c.crashTrials)
				if err != nil {
					return err
				}
				res.CrashTrials, res.CrashTaskCompletions, res.CrashTasksCompletedTwice, res.Notes.Crash = crash.trials,
					crash.tasks, crash.twice, crash.note
				return nil
			}},
	}
}

// measureResumes measures click to resume with orch's poll interval, then with asynq's default, each from an empty
// database.
func measureResumes(ctx context.Context, r *rig, c counts, res *Results) error {
	fast, err := clickToResume(ctx, r, 20*time.Millisecond, c.resumes)
	if err != nil {
		return err
	}
	step("resume: the same with asynq's default poll interval")
	if err := r.redis.Flush(ctx); err != nil {
		return err
	}
	slow, err := clickToResume(ctx, r, asynqDefaultPoll, c.resumesSlow)
	if err != nil {
		return fmt.Errorf("with asynq's default poll: %w", err)
	}
	res.ResumeP50Ms, res.ResumeP99Ms = roundTo(percentileMs(fast, 0.5), 2), roundTo(percentileMs(fast, 0.99), 2)
	res.ResumeAsynqDefaultP50Ms = roundTo(percentileMs(slow, 0.5), 1)
	res.Notes.Resume = resumeNote(fast, slow)
	return nil
}

// measureHistoryInto measures orch status, orch run and the web view in workspaces of many finished runs.
func measureHistoryInto(ctx context.Context, r *rig, c counts, res *Results) error {
	hist, err := measureHistory(ctx, r, c.history, c.historyTimes)
	if err != nil {
		return err
	}
	res.EmbeddedStatusMsAt100, res.EmbeddedStatusMsAt10k = roundTo(hist.status[0], 1), roundTo(hist.status[1], 1)
	res.EmbeddedRunStartMsAt10k = roundTo(hist.runStart[1], 1)
	res.EmbeddedStateBytesPerFinishedRun = math.Round(hist.bytesPerRun)
	res.Notes.History = hist.note
	res.WebRunsPageMsAt10k, res.WebRunsFilteredMsAt10k = roundTo(hist.web.list, 2), roundTo(hist.web.filtered, 2)
	res.WebRunPageMs = roundTo(hist.web.run, 2)
	res.Notes.Web = hist.web.note
	res.APIRunsP50MsAt10k, res.APIRunsP99MsAt10k = roundTo(hist.web.apiP50, 2), roundTo(hist.web.apiP99, 2)
	res.Notes.API = hist.web.apiNote
	return nil
}

// openRedis starts the benchmark's own Redis, or connects to ORCH_BENCH_REDIS_URL.
func openRedis(ctx context.Context, tmp string) (*redisServer, string, error) {
	if url := os.Getenv("ORCH_BENCH_REDIS_URL"); url != "" {
		srv, err := connectRedis(ctx, url)
		return srv, "ORCH_BENCH_REDIS_URL (a server this program did not start; its settings are its own).", err
	}
	srv, err := startRedis(ctx, tmp)
	return srv, "redis-server started by the benchmark on a free loopback port: appendonly yes, appendfsync " +
		"everysec, no RDB snapshots, maxmemory-policy noeviction; flushed before each measurement.", err
}

func resumeNote(fast, slow []time.Duration) string {
	return fmt.Sprintf("%d clicks with orch's poll interval (20 ms) and %d with asynq's default (1 s), same run, each on "+
		"its own run of examples/plans/ambiguous_task.md started with /orch run and parked on its question: from the "+
		"signed POST of a click on the question's button B to the commit of the resumed attempt's task_started (just "+
		"before the sim agent process starts). Path: bot handler, background pool, escalation.Resolve, resume task on "+
		"the control queue, resume handler, step task on the step queue, step handler. Each click comes at a random "+
		"moment within one poll interval after the previous run ended, so it meets the idle workers' poll loops at a "+
		"random phase. Nearest-rank percentiles. With 20 ms: p50 %.1f, p90 %.1f, max %.1f ms. With 1 s: p50 %.0f, max "+
		"%.0f ms.", len(fast), len(slow), percentileMs(fast, 0.5), percentileMs(fast, 0.9), percentileMs(fast, 1),
		percentileMs(slow, 0.5), percentileMs(slow, 1))
}

func approvalNote(a *approvalResult) string {
	lat := a.click
	return fmt.Sprintf("%d clicks, each on its own run of a one-task plan started with /orch run, whose claude agent (the "+
		"fake claude of agent/testdata/fakeclaude: Claude Code's documented permission flow with a scripted model) ran "+
		"`git push --force` under the local defaults: orch's PreToolUse hook deferred the call, the process exited and the "+
		"run parked on an approval. From the signed POST of a click on \"Allow once\" (button A) to the resumed `claude -p "+
		"--resume` process starting (its own clock, logged as it starts): the resume path of resume_p50_ms, then the "+
		"claude step (the hook's state with the decision, the command, the process start). orch's poll interval (20 ms); "+
		"nearest-rank percentiles: p50 %.1f, p90 %.1f, max %.1f ms. Of that, from the resumed attempt's task_started "+
		"commit (where resume_p50_ms stops) to the claude process starting: p50 %.1f ms — the hook's state and the "+
		"command, and two process starts: the local sandbox's shim (orch-shim, beside the bench's orch as make build "+
		"puts it), then claude. The hook (orch-hook) runs after claude starts, so it is not in this path.", len(lat),
		percentileMs(lat, 0.5), percentileMs(lat, 0.9), percentileMs(lat, 1), percentileMs(a.spawn, 0.5))
}

func step(what string) { fmt.Fprintf(os.Stderr, "bench: %s\n", what) }

// roundTo keeps n decimals: more would be noise on this machine.
func roundTo(v float64, n int) float64 {
	p := math.Pow(10, float64(n))
	return math.Round(v*p) / p
}

func roundPtr(v *float64, n int) *float64 {
	if v == nil {
		return nil
	}
	r := roundTo(*v, n)
	return &r
}
