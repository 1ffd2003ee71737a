package store

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/jobstest"
)

// findRun is one run of the fixture: what it is started with and how it ends.
type findRun struct {
	plan, title, user, channel string
	status                     jobs.RunStatus
	asks                       bool // has an escalation nobody answered
}

// fillFind creates runs of every kind one second apart, archiving the finished ones after each third of them, so that
// live and archived runs alternate in creation order (parked and running runs stay live). It returns the runs, in
// creation order, as they were last saved.
func fillFind(t *testing.T, s *Store, c *clock) []*jobs.Run {
	t.Helper()
	ctx := context.Background()
	plans := []struct{ path, title string }{
		{"plans/billing.md", "Billing export"}, {"plans/Deploy-API.md", "Deploy the API"}, {"ops/cleanup.md", "Cleanup"},
	}
	users := []string{"U1", "U2", ""}
	channels := []string{"C1", "C2", "C1", ""}
	statuses := []jobs.RunStatus{jobs.RunCompleted, jobs.RunFailed, jobs.RunParked, jobs.RunCompleted, jobs.RunRunning,
		jobs.RunAborted, jobs.RunQueued}
	var all []*jobs.Run
	for i := range 42 {
		c.add(time.Second)
		p := plans[i%len(plans)]
		fr := findRun{plan: p.path, title: p.title, user: users[(i/3)%len(users)], channel: channels[(i/2)%len(channels)],
			status: statuses[i%len(statuses)]}
		fr.asks = fr.status == jobs.RunParked || fr.status == jobs.RunRunning && i%2 == 0
		all = append(all, makeRun(t, s, fr))
		if i%14 == 13 {
			if _, err := s.ArchiveFinished(ctx, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	return all
}

func makeRun(t *testing.T, s *Store, fr findRun) *jobs.Run {
	t.Helper()
	ctx := context.Background()
	r := newRun()
	r.PlanPath, r.PlanTitle, r.Origin = fr.plan, fr.title, jobs.Origin{Kind: "slack", User: fr.user, Channel: fr.channel}
	if err := s.Create(ctx, r); err != nil {
		t.Fatal(err)
	}
	r, err := s.Update(ctx, r.ID, func(r *jobs.Run, c *jobs.Change) error {
		r.Status = fr.status
		if fr.status.Terminal() {
			r.EndedAt = s.Now().UTC()
		}
		if fr.asks {
			r.Escalations = append(r.Escalations, &jobs.Escalation{ID: "e1", TaskID: "1.1", Question: "which one?"})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// want is what Find should list of all (in creation order) for q, newest first: the filters written out again, apart
// from the store's.
func want(all []*jobs.Run, q Query) []string {
	var out []string
	for _, r := range slices.Backward(all) {
		switch {
		case q.Status == "open" && (r.Status.Terminal() || r.Status != jobs.RunParked && r.OpenEscalation() == nil),
			q.Status != "" && q.Status != "open" && string(r.Status) != q.Status,
			q.User != "" && r.Origin.User != q.User,
			q.Channel != "" && r.Origin.Channel != q.Channel,
			q.Plan != "" && !strings.Contains(strings.ToLower(r.PlanPath), strings.ToLower(q.Plan)) &&
				!strings.Contains(strings.ToLower(r.PlanTitle), strings.ToLower(q.Plan)):
			continue
		}
		out = append(out, r.ID)
	}
	return out
}

var findQueries = []Query{
	{},
	{Status: "failed"},
	{Status: "open"},
	{Status: "parked"},
	{Status: "running"},
	{Plan: "deploy"},      // the path's "Deploy" and the title's "Deploy"
	{Plan: "BILLING"},     // any case
	{Plan: "cleanup.md"},  // the path alone
	{Plan: "export"},      // the title alone
	{Plan: "md\nbilling"}, // not across the two
	{User: "U1"},
	{User: "U"}, // exact, not a prefix
	{Status: "completed", User: "U2"},
	{Status: "open", Plan: "api", User: "U1"},
	{Status: "completed", Plan: "deploy", User: "U2"},
	{Status: "no such status"},
	{Channel: "C1"},
	{Channel: "C"}, // exact, not a prefix
	{Channel: "C2", User: "U1"},
	{Status: "open", Channel: "C1"},
	{Status: "failed", Plan: "billing", Channel: "C2"},
}

// checkFind reads every page of q in pages of size and compares them with want.
func checkFind(t *testing.T, s *Store, q Query, all []*jobs.Run) {
	t.Helper()
	ctx := context.Background()
	w := want(all, q)
	for _, size := range []int{1, 4, 10, 100} {
		var got []string
		for offset := 0; ; offset += size {
			page, more, err := s.Find(ctx, q, offset, size)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, ids(page)...)
			if wantMore := offset+size < len(w); more != wantMore {
				t.Fatalf("%+v: page at %d of %d: more = %v, want %v", q, offset, size, more, wantMore)
			}
			if len(page) > size || more && len(page) != size {
				t.Fatalf("%+v: page at %d of %d has %d runs", q, offset, size, len(page))
			}
			if !more {
				break
			}
		}
		if !slices.Equal(got, w) {
			t.Fatalf("%+v in pages of %d:\n got %v\nwant %v", q, size, got, w)
		}
	}
}

func TestFind(t *testing.T) {
	for name, open := range archivedStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s, c := open(t)
			all := fillFind(t, s, c)
			live, _ := s.Live(ctx, 1000)
			if len(live) == 0 || len(live) == len(all) {
				t.Fatalf("%d of %d runs live; want some of each", len(live), len(all))
			}
			for _, q := range findQueries {
				checkFind(t, s, q, all)
			}
			if page, more, err := s.Find(ctx, Query{}, len(all), 10); err != nil || len(page) > 0 || more {
				t.Fatalf("past the end: %v, %v, %v", ids(page), more, err)
			}
			if page, _, _ := s.Find(ctx, Query{}, -5, 0); len(page) != 20 || page[0].ID != all[len(all)-1].ID {
				t.Fatalf("a negative offset and no limit: %d runs from %s", len(page), page[0].ID)
			}

			// Without an archive (a Redis server), every run is live: the same answers from summaries alone.
			for _, r := range all {
				if _, err := s.Update(ctx, r.ID, func(*jobs.Run, *jobs.Change) error { return nil }); err != nil {
					t.Fatal(err) // brings it back from the archive
				}
			}
			s.archive = nil
			if n := s.rdb.HLen(ctx, keySummaries).Val(); n != int64(len(all)) {
				t.Fatalf("%d summaries for %d runs", n, len(all))
			}
			for _, q := range findQueries {
				checkFind(t, s, q, all)
			}
		})
	}
}

// Runs an orch from before summaries created have none: Find matches them by their documents and writes theirs.
func TestFindLiveRunsWithoutSummaries(t *testing.T) {
	for name, open := range archivedStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s, c := open(t)
			s.archive = nil
			all := fillFind(t, s, c)
			s.rdb.Del(ctx, keySummaries)
			// A summary this orch cannot read counts as none, but is left for the later orch that wrote it.
			later := "9\x00a summary of a later orch"
			s.rdb.HSet(ctx, keySummaries, all[0].ID, later)
			for _, q := range findQueries {
				checkFind(t, s, q, all)
			}
			if got := s.rdb.HGet(ctx, keySummaries, all[0].ID).Val(); got != later {
				t.Fatalf("a later orch's summary was replaced by %q", got)
			}
			for _, r := range all[1:] {
				if got := s.rdb.HGet(ctx, keySummaries, r.ID).Val(); got != summarize(r) {
					t.Fatalf("summary of %s = %q, want %q", r.ID, got, summarize(r))
				}
			}
		})
	}
}

// summaryBeforeChannels is a run's summary as an orch from before the channel filter wrote it.
func summaryBeforeChannels(r *jobs.Run) string {
	f := factsOf(r)
	open := "0"
	if f.open {
		open = "1"
	}
	return strings.Join([]string{"1", string(f.status), open, f.user, f.plan, f.title}, "\x00")
}

// Summaries written before the channel filter have no channel: a channel filter matches those runs by their documents
// and writes their summaries anew; the other filters still read the old summaries alone.
func TestFindLiveRunsWithSummariesBeforeChannels(t *testing.T) {
	for name, open := range archivedStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s, c := open(t)
			s.archive = nil
			all := fillFind(t, s, c)
			for _, r := range all {
				s.rdb.HSet(ctx, keySummaries, r.ID, summaryBeforeChannels(r))
			}
			for _, q := range findQueries {
				if q.Channel == "" {
					checkFind(t, s, q, all)
				}
			}
			for _, r := range all {
				if got := s.rdb.HGet(ctx, keySummaries, r.ID).Val(); got != summaryBeforeChannels(r) {
					t.Fatalf("a filter without a channel rewrote the summary of %s: %q", r.ID, got)
				}
			}
			for _, q := range findQueries {
				checkFind(t, s, q, all)
			}
			for _, r := range all {
				if got := s.rdb.HGet(ctx, keySummaries, r.ID).Val(); got != summarize(r) {
					t.Fatalf("summary of %s = %q, want %q", r.ID, got, summarize(r))
				}
			}
		})
	}
}

// A summary written by a change committed while Find read a run's document is not replaced by the one Find derives
// from the document it read.
func TestFindKeepsASummaryWrittenMeanwhile(t *testing.T) {
	for name, open := range archivedStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s, c := open(t)
			s.archive = nil
			c.add(time.Second)
			r := makeRun(t, s, findRun{plan: "plans/billing.md", title: "Billing export", user: "U1", channel: "C1",
				status: jobs.RunRunning})
			s.rdb.HSet(ctx, keySummaries, r.ID, summaryBeforeChannels(r))
			meanwhile := strings.Replace(summarize(r), "running", "completed", 1)
			hooked := redis.NewClient(s.rdb.(*redis.Client).Options())
			t.Cleanup(func() { hooked.Close() })
			hooked.AddHook(beforeScript{fn: func() { s.rdb.HSet(ctx, keySummaries, r.ID, meanwhile) }})
			hs := New(hooked, c.now)
			page, _, err := hs.Find(ctx, Query{Channel: "C1"}, 0, 10)
			if err != nil || !slices.Equal(ids(page), []string{r.ID}) {
				t.Fatalf("Find = %v, %v", ids(page), err)
			}
			if got := s.rdb.HGet(ctx, keySummaries, r.ID).Val(); got != meanwhile {
				t.Fatalf("the summary written meanwhile was replaced by %q", got)
			}
		})
	}
}

// beforeScript calls fn before a pipeline that runs a script is sent.
type beforeScript struct{ fn func() }

func (beforeScript) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (beforeScript) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (b beforeScript) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			if c.Name() == "eval" || c.Name() == "evalsha" {
				b.fn()
				break
			}
		}
		return next(ctx, cmds)
	}
}

// oldIndexLines rewrites the archive's index as an orch from before filters wrote it, without plan, title, user and
// channel.
func oldIndexLines(t *testing.T, a *Archive) {
	t.Helper()
	rewriteIndex(t, a, func(e map[string]any) {
		for _, k := range []string{"v", "plan", "title", "user", "channel"} {
			delete(e, k)
		}
	})
}

// indexLinesBeforeChannels rewrites the archive's index as an orch from before the channel filter wrote it: plan,
// title and user, but no channel.
func indexLinesBeforeChannels(t *testing.T, a *Archive) {
	t.Helper()
	rewriteIndex(t, a, func(e map[string]any) {
		delete(e, "channel")
		e["v"] = indexFields
	})
}

// rewriteIndex changes every line of the archive's index with edit.
func rewriteIndex(t *testing.T, a *Archive, edit func(map[string]any)) {
	t.Helper()
	data, err := os.ReadFile(a.indexPath())
	if err != nil {
		t.Fatal(err)
	}
	var old bytes.Buffer
	for line := range bytes.Lines(data) {
		var e map[string]any
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatal(err)
		}
		edit(e)
		b, _ := json.Marshal(e)
		old.Write(append(b, '\n'))
	}
	if err := os.WriteFile(a.indexPath(), old.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestFindWithOldIndexLines(t *testing.T) {
	for name, open := range archivedStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s, c := open(t)
			all := fillFind(t, s, c)
			oldIndexLines(t, s.archive)
			if data, _ := os.ReadFile(s.archive.indexPath()); bytes.Contains(data, []byte(`"plan"`)) {
				t.Fatal("the index still has plans")
			}
			// Runs archived from now on get lines with plans after the old ones.
			c.add(time.Second)
			all = append(all, makeRun(t, s, findRun{plan: "plans/billing.md", title: "Billing export", user: "U1",
				status: jobs.RunFailed}))
			if _, err := s.ArchiveFinished(ctx, 0); err != nil {
				t.Fatal(err)
			}
			for _, q := range findQueries {
				checkFind(t, s, q, all)
			}

			// What the old lines hold (status) is matched without the runs' files; the rest needs them.
			runs := filepath.Join(s.archive.Dir(), "runs")
			if err := os.Rename(runs, runs+".away"); err != nil {
				t.Fatal(err)
			}
			none := func(string) bool { return false }
			failed, err := s.archive.find(newMatcher(Query{Status: "failed"}), 100, none, s.log)
			if err != nil || len(failed) < 2 {
				t.Fatalf("failed runs by the index alone: %d, %v", len(failed), err)
			}
			byUser, err := s.archive.find(newMatcher(Query{User: "U1"}), 100, none, s.log)
			if err != nil || len(byUser) != 1 || byUser[0].ID != all[len(all)-1].ID {
				t.Fatalf("without the files, a user filter matches only the new line: %v, %v", byUser, err)
			}
		})
	}
}

// Lines archived before the channel filter hold plan, title and user but no channel: a channel filter reads their
// runs' files, the other filters still need only the lines.
func TestFindWithIndexLinesBeforeChannels(t *testing.T) {
	for name, open := range archivedStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s, c := open(t)
			all := fillFind(t, s, c)
			indexLinesBeforeChannels(t, s.archive)
			if data, _ := os.ReadFile(s.archive.indexPath()); bytes.Contains(data, []byte(`"channel"`)) ||
				!bytes.Contains(data, []byte(`"plan"`)) {
				t.Fatal("the index is not as an orch before channels wrote it")
			}
			c.add(time.Second)
			all = append(all, makeRun(t, s, findRun{plan: "plans/billing.md", title: "Billing export", user: "U1",
				channel: "C1", status: jobs.RunFailed}))
			if _, err := s.ArchiveFinished(ctx, 0); err != nil {
				t.Fatal(err)
			}
			for _, q := range findQueries {
				checkFind(t, s, q, all)
			}

			runs := filepath.Join(s.archive.Dir(), "runs")
			if err := os.Rename(runs, runs+".away"); err != nil {
				t.Fatal(err)
			}
			none := func(string) bool { return false }
			byUser, err := s.archive.find(newMatcher(Query{User: "U1"}), 100, none, s.log)
			if err != nil || len(byUser) < 2 {
				t.Fatalf("a user filter by the lines alone: %d, %v", len(byUser), err)
			}
			byChannel, err := s.archive.find(newMatcher(Query{Channel: "C1"}), 100, none, s.log)
			if err != nil || len(byChannel) != 1 || byChannel[0].ID != all[len(all)-1].ID {
				t.Fatalf("without the files, a channel filter matches only the new line: %v, %v", byChannel, err)
			}
		})
	}
}

// A damaged run is left out of the page it falls on, with a warning, as Page leaves it out: in Redis, in the archive,
// and in the archive behind an old index line that a filter must read the file of.
func TestFindSkipsDamagedRuns(t *testing.T) {
	for name, open := range archivedStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s, c := open(t)
			var logged bytes.Buffer
			s.log = slog.New(slog.NewTextHandler(&logged, nil))
			fr := findRun{plan: "plans/billing.md", title: "Billing export", user: "U1", status: jobs.RunFailed}
			var all []*jobs.Run
			for range 4 {
				c.add(time.Second)
				all = append(all, makeRun(t, s, fr))
			}
			if _, err := s.ArchiveFinished(ctx, 0); err != nil {
				t.Fatal(err)
			}
			oldIndexLines(t, s.archive)
			fr.status = jobs.RunParked
			for range 2 {
				c.add(time.Second)
				all = append(all, makeRun(t, s, fr))
			}
			slices.Reverse(all) // newest first
			badLive, badArchived, badOld := all[1], all[3], all[4]
			s.rdb.Set(ctx, runKey(badLive.ID), `{"id": "`+badLive.ID+`", "tasks": [`, 0)
			for _, r := range []*jobs.Run{badArchived, badOld} {
				path := s.archive.runPath(r.ID)
				data, _ := os.ReadFile(path)
				os.WriteFile(path, data[:len(data)/2], 0o600)
			}

			page, more, err := s.Find(ctx, Query{}, 0, 4)
			if err != nil || !more || !slices.Equal(ids(page), []string{all[0].ID, all[2].ID}) {
				t.Fatalf("first page of 4 = %v, more %v, %v; want the two good runs among the first four", ids(page), more, err)
			}
			page, more, err = s.Find(ctx, Query{}, 4, 4)
			if err != nil || more || !slices.Equal(ids(page), []string{all[5].ID}) {
				t.Fatalf("second page = %v, more %v, %v", ids(page), more, err)
			}
			// A filter the old lines cannot answer reads their files: the damaged one is no match.
			page, more, err = s.Find(ctx, Query{Plan: "billing"}, 0, 10)
			if err != nil || more || !slices.Equal(ids(page), []string{all[0].ID, all[2].ID, all[5].ID}) {
				t.Fatalf("by plan = %v, more %v, %v", ids(page), more, err)
			}
			for _, r := range []*jobs.Run{badLive, badArchived, badOld} {
				if !strings.Contains(logged.String(), r.ID) {
					t.Fatalf("no warning names damaged run %s:\n%s", r.ID, logged.String())
				}
			}
		})
	}
}

func TestSummaryRoundTrip(t *testing.T) {
	r := &jobs.Run{Status: jobs.RunRunning, PlanPath: "a/b.md", PlanTitle: "Title with \x00 and \t",
		Origin: jobs.Origin{User: "U9", Channel: "C9"}, Escalations: []*jobs.Escalation{{ID: "e1"}}}
	f, ok := parseSummary(summarize(r))
	if want := factsOf(r); !ok || f != want || !f.open {
		t.Fatalf("parsed %+v, %v; want %+v", f, ok, want)
	}
	// A summary from before channels: all but the channel, and it says so.
	f, ok = parseSummary(summaryBeforeChannels(r))
	want := factsOf(r)
	want.channel, want.holds = "", indexFields
	if !ok || f != want {
		t.Fatalf("parsed an old summary as %+v, %v; want %+v", f, ok, want)
	}
	r.Status = jobs.RunAborted
	if f, _ := parseSummary(summarize(r)); f.open {
		t.Fatal("a run that is over waits for nobody")
	}
	for _, bad := range []string{"", "1\x00running", "2\x00running\x000\x00\x00\x00", "3\x00running\x000\x00\x00\x00\x00"} {
		if _, ok := parseSummary(bad); ok {
			t.Fatalf("%q parsed", bad)
		}
	}
}

// benchRun is a run as the benchmark stores it: five tasks and an answered escalation, the size of a short real run.
func benchRun(i int, created time.Time, status jobs.RunStatus) *jobs.Run {
	r := &jobs.Run{ID: fmt.Sprintf("r-bench%05d", i), PlanPath: fmt.Sprintf("plans/%s-%d.md", benchPlans[i%len(benchPlans)], i%7),
		PlanTitle: "Milestone " + benchPlans[i%len(benchPlans)], Origin: jobs.Origin{Kind: "slack", User: fmt.Sprintf("U%d", i%13)},
		Status: status, Options: jobs.Options{Agent: "claude", Brain: "claude", Sandbox: "docker", MaxAttempts: 3},
		CreatedAt: created, UpdatedAt: created.Add(time.Minute), Version: 12}
	if status.Terminal() {
		r.EndedAt = r.UpdatedAt
	}
	for k := range 5 {
		r.Tasks = append(r.Tasks, &jobs.Task{ID: fmt.Sprintf("1.%d", k+1), Title: strings.Repeat("do the thing ", 4),
			Status: jobs.TaskCompleted})
	}
	r.Escalations = []*jobs.Escalation{{ID: "e1", TaskID: "1.2", Question: strings.Repeat("which way should it go? ", 8),
		Output: strings.Repeat("agent output ", 40), Resolution: &jobs.Resolution{Type: jobs.ResolveChoose, Key: "a", By: "U1"}}}
	if status == jobs.RunParked {
		r.Escalations[0].Resolution = nil
	}
	return r
}

// One plan in twenty is billing's: a plan filter matching 5% of the runs.
var benchPlans = []string{"billing", "deploy", "search", "auth", "payments", "reports", "mobile", "infra", "docs", "api",
	"ingest", "alerts", "backup", "cache", "cli", "email", "export", "import", "queue", "ui"}

// benchStatus is a finished run's status: one run in five failed.
func benchStatus(i int) jobs.RunStatus {
	return []jobs.RunStatus{jobs.RunCompleted, jobs.RunCompleted, jobs.RunFailed, jobs.RunCompleted, jobs.RunAborted}[i%5]
}

// fillBench stores n runs, created a second apart: the archived ones written straight to the archive as
// ArchiveFinished writes them (without its fsyncs, which would make the setup minutes long) and the live ones straight
// to Redis as Create and Update leave them.
func fillBench(b *testing.B, s *Store, archived, live int) {
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if archived > 0 {
		a := s.archive
		os.MkdirAll(filepath.Join(a.dir, "runs"), 0o700)
		var index bytes.Buffer
		for i := range archived {
			r := benchRun(i, t0.Add(time.Duration(i)*time.Second), benchStatus(i))
			doc, _ := json.Marshal(r)
			var buf bytes.Buffer
			zw := gzip.NewWriter(&buf)
			json.NewEncoder(zw).Encode(&archivedRun{Version: archiveVersion, Run: doc})
			zw.Close()
			if err := os.WriteFile(a.runPath(r.ID), buf.Bytes(), 0o600); err != nil {
				b.Fatal(err)
			}
			line, _ := json.Marshal(indexEntry{ID: r.ID, Created: r.CreatedAt.UnixMilli(), Archived: r.EndedAt.Add(10 * time.Second).UnixMilli(),
				Ended: r.EndedAt.UnixMilli(), Status: string(r.Status), V: indexFields, Plan: r.PlanPath, Title: r.PlanTitle, User: r.Origin.User})
			index.Write(append(line, '\n'))
		}
		if err := os.WriteFile(a.indexPath(), index.Bytes(), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	liveStatuses := []jobs.RunStatus{jobs.RunRunning, jobs.RunParked, jobs.RunQueued, jobs.RunFailed}
	for start := 0; start < live; start += 500 {
		_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := archived + start; i < archived+min(live, start+500); i++ {
				status := benchStatus(i)
				if s.archive != nil {
					status = liveStatuses[i%len(liveStatuses)]
				}
				r := benchRun(i, t0.Add(time.Duration(i)*time.Second), status)
				doc, _ := json.Marshal(r)
				p.Set(ctx, runKey(r.ID), doc, 0)
				p.ZAdd(ctx, keyRuns, redis.Z{Score: float64(r.CreatedAt.UnixMilli()), Member: r.ID})
				p.HSet(ctx, keySummaries, r.ID, summarize(r))
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFind lists 10,000 runs: with the embedded store's archive (9,900 archived, 100 live) and with a Redis server
// (all 10,000 live); unfiltered, by status (a fifth of the runs) and by plan (a twentieth); the first page of 20 and
// the fiftieth.
func BenchmarkFind(b *testing.B) {
	ctx := context.Background()
	for name, rdb := range jobstest.Clients(b) {
		for _, layout := range []struct {
			name           string
			archived, live int
		}{{"archive", 9900, 100}, {"redis", 0, 10000}} {
			b.Run(name+"/"+layout.name, func(b *testing.B) {
				if err := rdb.FlushDB(ctx).Err(); err != nil {
					b.Fatal(err)
				}
				s := New(rdb, nil)
				if layout.archived > 0 {
					s.UseArchive(NewArchive(b.TempDir(), nil), nil)
				}
				fillBench(b, s, layout.archived, layout.live)
				for _, q := range []struct {
					name string
					q    Query
				}{{"all", Query{}}, {"status", Query{Status: "failed"}}, {"plan", Query{Plan: "BILLING"}}} {
					for _, pg := range []int{1, 50} {
						b.Run(fmt.Sprintf("%s/page%d", q.name, pg), func(b *testing.B) {
							for b.Loop() {
								runs, _, err := s.Find(ctx, q.q, (pg-1)*20, 20)
								if err != nil || q.name != "plan" && len(runs) != 20 {
									b.Fatalf("%d runs, %v", len(runs), err)
								}
							}
						})
					}
				}
			})
		}
	}
}

// Find keeps the index in memory: what is archived after, a line appended in two writes, a run archived twice and a
// prune that replaces the index are each seen by the next Find.
func TestFindFollowsTheIndex(t *testing.T) {
	for name, open := range archivedStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s, c := open(t)
			all := fillFind(t, s, c)
			failed := Query{Status: "failed"}
			checkFind(t, s, failed, all)

			fr := findRun{plan: "plans/billing.md", title: "Billing export", user: "U1", status: jobs.RunFailed}
			c.add(time.Second)
			all = append(all, makeRun(t, s, fr))
			if _, err := s.ArchiveFinished(ctx, 0); err != nil {
				t.Fatal(err)
			}
			checkFind(t, s, failed, all)

			// A line seen half written is read once it is whole.
			c.add(time.Second)
			all = append(all, makeRun(t, s, fr))
			if _, err := s.ArchiveFinished(ctx, 0); err != nil {
				t.Fatal(err)
			}
			data, _ := os.ReadFile(s.archive.indexPath())
			lastStart := bytes.LastIndexByte(data[:len(data)-1], '\n') + 1
			half := lastStart + (len(data)-lastStart)/2
			os.WriteFile(s.archive.indexPath(), data[:half], 0o600)
			checkFind(t, s, failed, all[:len(all)-1])
			f, _ := os.OpenFile(s.archive.indexPath(), os.O_APPEND|os.O_WRONLY, 0)
			f.Write(data[half:])
			f.Close()
			checkFind(t, s, failed, all)

			// Reopened and archived again: listed once, as it is now.
			reopened := all[len(all)-1]
			if _, err := s.Update(ctx, reopened.ID, func(r *jobs.Run, _ *jobs.Change) error { r.Reason = "again"; return nil }); err != nil {
				t.Fatal(err)
			}
			checkFind(t, s, failed, all)
			if _, err := s.ArchiveFinished(ctx, 0); err != nil {
				t.Fatal(err)
			}
			checkFind(t, s, failed, all)
			if page, _, _ := s.Find(ctx, failed, 0, 1); len(page) != 1 || page[0].Reason != "again" {
				t.Fatalf("the newest failed run = %+v", page)
			}

			// A prune replaces the index.
			gone, err := s.Prune(ctx, Keep{Count: 5})
			if err != nil || len(gone) == 0 {
				t.Fatalf("pruned %v, %v", gone, err)
			}
			all = slices.DeleteFunc(all, func(r *jobs.Run) bool { return slices.Contains(gone, r.ID) })
			checkFind(t, s, failed, all)
			checkFind(t, s, Query{}, all)

			// So does a rewrite in place (an old orch's prune); no index at all is no archived run.
			data, _ = os.ReadFile(s.archive.indexPath())
			lines := bytes.SplitAfter(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
			kept := bytes.Join(lines[:len(lines)-1], nil)
			var dropped indexEntry
			json.Unmarshal(lines[len(lines)-1], &dropped)
			os.WriteFile(s.archive.indexPath(), kept, 0o600)
			all = slices.DeleteFunc(all, func(r *jobs.Run) bool { return r.ID == dropped.ID })
			checkFind(t, s, Query{}, all)
			os.Remove(s.archive.indexPath())
			live, _ := s.Live(ctx, 1000)
			slices.Reverse(live)
			checkFind(t, s, Query{}, live)
		})
	}
}

func TestContainsFold(t *testing.T) {
	for _, c := range []struct {
		s, needle string
		want      bool
	}{
		{"plans/Deploy-API.md", "deploy-api", true}, {"Billing export", "export", true}, {"Billing", "billing", true},
		{"Billing", "billings", false}, {"abc", "", true}, {"", "a", false}, {"aab", "ab", true},
		{"Ärger im Büro", "büro", true}, {"ÄRGER", "ärger", true}, {"Ärger", "x", false},
	} {
		if got := containsFold(c.s, c.needle); got != c.want {
			t.Errorf("containsFold(%q, %q) = %v", c.s, c.needle, got)
		}
	}
}

// The runs that wait are listed from their index, which a store written before it had is given at the first listing,
// from the runs' summaries; a run closed meanwhile and left in it is taken out by the listing that reads it.
func TestOpenIndex(t *testing.T) {
	for name, open := range archivedStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s, c := open(t)
			all := fillFind(t, s, c)
			var want []string
			for i := len(all) - 1; i >= 0; i-- {
				if factsOf(all[i]).open {
					want = append(want, all[i].ID)
				}
			}
			if len(want) < 2 {
				t.Fatalf("%d runs wait; want a few", len(want))
			}
			check := func(when string) {
				t.Helper()
				page, more, err := s.Find(ctx, Query{Status: StatusOpen}, 0, 1000)
				if err != nil || more || !slices.Equal(ids(page), want) {
					t.Fatalf("%s: %v (more %v, %v), want %v", when, ids(page), more, err, want)
				}
				if n, err := s.Waiting(ctx); err != nil || n != len(want) {
					t.Fatalf("%s: %d waiting, want %d (%v)", when, n, len(want), err)
				}
			}
			check("as written")
			// An orch from before the index: none, and no mark that it was built.
			s.rdb.Del(ctx, keyOpen, keyOpenBuilt)
			check("built from the summaries")
			// A run closed while the index was built stays in it until a listing reads it.
			s.rdb.ZAdd(ctx, keyOpen, redis.Z{Score: float64(time.Now().UnixMicro()), Member: all[0].ID})
			if factsOf(all[0]).open {
				t.Fatal("the fixture's first run waits")
			}
			page, _, _ := s.Find(ctx, Query{Status: StatusOpen}, 0, 1)
			if len(page) != 0 {
				t.Fatalf("a closed run was listed: %v", ids(page))
			}
			check("healed")
			// Paging: one at a time, newest first.
			for i, id := range want {
				page, more, err := s.Find(ctx, Query{Status: StatusOpen}, i, 1)
				if err != nil || len(page) != 1 || page[0].ID != id || more != (i < len(want)-1) {
					t.Fatalf("page %d: %v, more %v, %v", i, ids(page), more, err)
				}
			}
		})
	}
}
