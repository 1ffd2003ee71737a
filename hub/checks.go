package hub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/google/go-github/v92/github"

	"github.com/orchrun/orch/forge"
	"github.com/orchrun/orch/internal/gfm"
	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs"
)

// Red checks on orch's pull requests: a check run or a workflow run that fails on a pull request's head commit is a
// fix run on its branch, told the failing checks' names and the tails of their logs. One fix run per head commit,
// however many checks and workflows fail on it; at most MaxFixes per pull request; and the same failure seen
// sameFailures times is a question in the pull request, not another attempt: a loop that stops itself. A person's
// own words on the pull request (`@orch <words>`) start the count again.

const (
	// failTail is how much of the end of a failing check's log a fix run reads, and failText of all of them.
	failTail = 6 << 10
	failText = 16 << 10
	// sameFailures is how many times the same failure is seen before orch asks instead of trying again.
	sameFailures = 3
	// The fields of a pull request's state in the mirror: fix runs started, the last failure's signature, and how
	// many times in a row it was seen.
	fieldFixes   = "fixes"
	fieldFailure = "failure"
	fieldSame    = "same"
	// fieldLastFailure is what the last fix run would have been told, kept when orch asked instead.
	fieldLastFailure = "last_failure"
)

// failedConclusion reports a check's conclusion that is a failure to fix (not a cancellation, a skip, or a neutral
// result).
func failedConclusion(c string) bool { return c == "failure" || c == "timed_out" }

// checkRun is the work of a completed check run: a fix when it failed on an orch pull request's head.
func (d *desk) checkRun(e *github.CheckRunEvent) func(context.Context) {
	cr := e.GetCheckRun()
	if e.GetAction() != "completed" || !failedConclusion(cr.GetConclusion()) || !d.fixes(cr.GetName()) {
		return nil
	}
	return d.redCheck(e.GetRepo(), cr.GetHeadSHA(), cr.PullRequests)
}

// workflowRun is the work of a completed workflow run: a fix when it failed on an orch pull request's head. Its
// failing jobs are check runs of the same commit: the fix reads them.
func (d *desk) workflowRun(e *github.WorkflowRunEvent) func(context.Context) {
	wr := e.GetWorkflowRun()
	if e.GetAction() != "completed" || !failedConclusion(wr.GetConclusion()) || d.cfg.FixOff {
		return nil
	}
	return d.redCheck(e.GetRepo(), wr.GetHeadSHA(), wr.PullRequests)
}

// redCheck is the fix of each pull request a failure on commit sha is of. GitHub names in a check's event only the
// pull requests whose branch is in the repository itself, never a fork's.
func (d *desk) redCheck(repo *github.Repository, sha string, prs []*github.PullRequest) func(context.Context) {
	if sha == "" || len(prs) == 0 {
		return nil
	}
	var numbers []int
	for _, pr := range prs {
		numbers = append(numbers, pr.GetNumber())
	}
	r, clone := repoOf(repo), repo.GetCloneURL()
	return func(ctx context.Context) {
		for _, n := range numbers {
			d.fix(ctx, asked{repo: r, cloneURL: clone, issue: n}, sha)
		}
	}
}

// fixes reports whether a failing check of this name may start a fix run (ORCH_GITHUB_FIX_CHECKS).
func (d *desk) fixes(name string) bool {
	if d.cfg.FixOff {
		return false
	}
	return len(d.cfg.FixChecks) == 0 || slices.ContainsFunc(d.cfg.FixChecks, func(n string) bool { return strings.EqualFold(n, name) })
}

// failure is a failing check as a fix run is told of it.
type failure struct{ name, text string }

// fixBy is who a fix run is by: no person asked for it.
const fixBy = "a red check"

// fix starts the fix run of pull request a.issue for its head commit sha ("" for whatever the head is now), once, or
// asks in the pull request when the loop should stop. A failure of a commit the branch has moved past, or while a run
// works on the branch, is left alone: when that run ends, the head's checks are looked at again (afterRun).
func (d *desk) fix(ctx context.Context, a asked, sha string) {
	p, ok, err := d.pullOf(ctx, a.repo, a.issue)
	if err != nil {
		d.log.Error("github: reading a pull request with a red check", "repo", a.repo, "pull", a.issue, "err", err)
	}
	if !ok || (sha != "" && p.HeadSHA != sha) || p.State != "open" || !p.run.Status.Terminal() {
		return
	}
	key := fmt.Sprintf("fix:%s@%s", issueKey(a.repo, a.issue), p.HeadSHA)
	if first, err := d.issues.Once(ctx, key, seenTTL); err != nil || !first {
		return
	}
	failing, err := d.failing(ctx, a.repo, p.HeadSHA)
	if err != nil || len(failing) == 0 {
		if err != nil {
			d.log.Error("github: reading the checks of a pull request", "repo", a.repo, "pull", a.issue, "err", err)
		}
		_ = d.issues.Unsee(ctx, key) // the next check's delivery tries again
		return
	}
	pull := "pull:" + issueKey(a.repo, a.issue)
	t, err := d.tally(ctx, pull, failing)
	if err != nil {
		d.log.Error("github: reading a pull request's fixes", "repo", a.repo, "pull", a.issue, "err", err)
		_ = d.issues.Unsee(ctx, key)
		return
	}
	told := failContext(a, p, failing)
	if t.same >= sameFailures || t.fixes >= d.cfg.MaxFixes {
		// The failure is kept, for the attempt a person's words start to read.
		d.save(ctx, pull, fieldFailure, t.sig, fieldSame, strconv.Itoa(t.same), fieldLastFailure, told)
		d.say(ctx, a, ChecksQuestion(checkNames(failing), t.same, t.fixes, d.cfg.Mention))
		return
	}
	// Counted before the run starts, as the run's end may come before this goroutine's next step; given back when it
	// does not start.
	d.save(ctx, pull, fieldFailure, t.sig, fieldSame, strconv.Itoa(t.same), fieldFixes, strconv.Itoa(t.fixes+1))
	req := StartRequest{Text: fmt.Sprintf("Make the failing checks of pull request #%d pass: %s", p.Number,
		strings.Join(checkNames(failing), ", ")), Context: told, By: fixBy}
	if _, ok := d.goOn(ctx, a, p, req); !ok {
		d.save(ctx, pull, fieldFailure, t.was.sig, fieldSame, strconv.Itoa(t.was.same), fieldFixes, strconv.Itoa(t.fixes))
		_ = d.issues.Unsee(ctx, key)
	}
}

// tallied is a failure counted against a pull request's loop: the fix runs it had, the failure's signature, and how
// many times in a row it was seen, this time included.
type tallied struct {
	fixes, same int
	sig         string
	// was is the failure counted before this one.
	was struct {
		same int
		sig  string
	}
}

// tally counts a failure of a pull request against its loop's two stops: the same failure seen sameFailures times
// in a row, and MaxFixes fix runs. It saves nothing: what it counted is saved with what becomes of it.
func (d *desk) tally(ctx context.Context, pull string, failing []failure) (tallied, error) {
	st, err := d.issues.State(ctx, pull)
	if err != nil {
		return tallied{}, err
	}
	t := tallied{sig: signature(failing)}
	t.fixes, _ = strconv.Atoi(st[fieldFixes])
	t.was.same, _ = strconv.Atoi(st[fieldSame])
	t.was.sig = st[fieldFailure]
	t.same = 1
	if t.sig == t.was.sig {
		t.same = t.was.same + 1
	}
	return t, nil
}

// save saves fields of a pull request's state, and says in the log when it cannot.
func (d *desk) save(ctx context.Context, pull string, fieldValues ...string) {
	if err := d.issues.Save(ctx, pull, fieldValues...); err != nil {
		d.log.Error("github: saving a pull request's fixes", "pull", pull, "err", err)
	}
}

// afterRun looks at a pull request again when a run on its branch has ended: a fix run that changed nothing is a
// question (another would change nothing either), and a check that failed while the run worked, on the head the run
// left, is fixed now — GitHub does not say it again.
func (d *desk) afterRun(ctx context.Context, r *jobs.Run, repo forge.Repo) {
	if r.Git == nil {
		return
	}
	n := pullNumber(r.Git.PullRequest)
	if n == 0 {
		return
	}
	a := asked{repo: repo, issue: n}
	if r.Origin.User == fixBy && r.Status == jobs.RunCompleted && r.Git.Commits == 0 {
		d.say(ctx, a, fmt.Sprintf("The fix run %s changed nothing, so the checks still fail as they did. What should "+
			"change? %s makes another attempt with your words; or push a fix to the branch yourself.", gfm.Code(r.ID),
			gfm.Code(d.cfg.Mention+" <guidance>")))
		return
	}
	d.fix(ctx, a, "")
}

// pullNumber is the number of the pull request whose page is url ("…/pull/12"), 0 for none.
func pullNumber(url string) int {
	i := strings.LastIndex(url, "/pull/")
	if i < 0 {
		return 0
	}
	n, err := strconv.Atoi(url[i+len("/pull/"):])
	if err != nil || n <= 0 {
		return 0
	}
	return n
}

func checkNames(failing []failure) []string {
	names := make([]string, len(failing))
	for i, f := range failing {
		names[i] = f.name
	}
	return names
}

// failing are the failing checks of commit sha that orch fixes, each with its output and the end of its log (a
// GitHub Actions job's: its check run's id is the job's).
func (d *desk) failing(ctx context.Context, repo forge.Repo, sha string) ([]failure, error) {
	checks, err := d.cfg.GitHub.CheckRuns(ctx, repo, sha)
	if err != nil {
		return nil, err
	}
	var out []failure
	for _, c := range checks {
		if !failedConclusion(c.Conclusion) || !d.fixes(c.Name) {
			continue
		}
		parts := []string{c.Title, c.Summary, c.Text}
		if c.App == "github-actions" {
			log, err := d.cfg.GitHub.JobLog(ctx, repo, c.ID, failTail)
			if err != nil {
				log = "(its log could not be read: " + err.Error() + ")"
			}
			parts = append(parts, "The end of its log:\n"+log)
		}
		out = append(out, failure{name: c.Name, text: strings.TrimSpace(strings.Join(slices.DeleteFunc(parts,
			func(s string) bool { return strings.TrimSpace(s) == "" }), "\n\n"))})
	}
	slices.SortFunc(out, func(a, b failure) int { return strings.Compare(a.name, b.name) })
	return out, nil
}

// failContext is what a fix run is told: the pull request, and each failing check with its output and log, redacted
// (a log prints what a job had in its environment) and bounded.
func failContext(a asked, p orchPull, failing []failure) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Checks failed on the head commit (%s) of pull request %s#%d (%s), which orch opened; the run "+
		"works on its branch %s. Find the cause in the code and fix it; do not weaken or skip the checks.\n",
		p.HeadSHA, a.repo, p.Number, p.Title, p.HeadRef)
	for _, f := range failing {
		fmt.Fprintf(&b, "\n## The check %q failed\n\n%s\n", f.name, f.text)
	}
	return safetext.Bound(safetext.Redact(b.String()), failText)
}

// noise is what changes from one run of the same failure to the next: numbers (times, durations, line counts, ids)
// and hex (commits, addresses).
var noise = regexp.MustCompile(`[0-9a-f]{7,}|[0-9]+`)

// signature names a failure so that the same failure seen again has the same name: the failing checks' names and
// the last lines of their output, with what changes between runs taken out.
func signature(failing []failure) string {
	h := sha256.New()
	for _, f := range failing {
		lines := strings.Split(strings.TrimSpace(f.text), "\n")
		lines = lines[max(0, len(lines)-40):]
		fmt.Fprintf(h, "%s\x00", f.name)
		for _, l := range lines {
			fmt.Fprintf(h, "%s\n", strings.Join(strings.Fields(noise.ReplaceAllString(l, "#")), " "))
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// resetFixes starts a pull request's fix count again: a person said what to do.
func (d *desk) resetFixes(ctx context.Context, repo forge.Repo, number int) {
	if err := d.issues.Save(ctx, "pull:"+issueKey(repo, number), fieldFixes, "0", fieldSame, "0", fieldFailure, "",
		fieldLastFailure, ""); err != nil {
		d.log.Warn("github: resetting a pull request's fixes", "repo", repo, "pull", number, "err", err)
	}
}
