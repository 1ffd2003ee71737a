package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/store"
	"github.com/orchrun/orch/runs"
	"github.com/orchrun/orch/web"
)

// defaultWebAddr is where `orch web` listens: this machine only, unless told otherwise.
const defaultWebAddr = "127.0.0.1:3080"

func (a *app) webCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "web",
		Short: "Serve the web view of the runs in this store",
		Long: "Serve the web view: the runs, what each is doing, the questions that wait and the forms that answer\n" +
			"them. It listens on 127.0.0.1:3080 unless --addr says otherwise; an address beyond this machine needs\n" +
			"ORCH_WEB_TOKEN, which people then sign in with. It answers to localhost names only, and with the token to\n" +
			"the host of ORCH_PUBLIC_URL too. Unless --no-worker, a worker runs here too, so a run answered in the\n" +
			"browser goes on. Env: ORCH_WEB_TOKEN, ORCH_PUBLIC_URL, ORCH_ALLOWED_USERS.",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			addr, _ := cmd.Flags().GetString("addr")
			token := a.env("ORCH_WEB_TOKEN")
			if err := web.CheckAddr(addr, token); err != nil {
				return usageErr("%v", err)
			}
			if err := web.CheckPublicURL(a.env("ORCH_PUBLIC_URL")); err != nil {
				return usageErr("%v", err)
			}
			wk, err := a.sideWorker(cmd)
			if err != nil {
				return err
			}
			// The address is taken first: a worker must not take a run for a view that cannot serve.
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return withCode(exitUsage, fmt.Errorf("listening on %s: %w", addr, err))
			}
			defer ln.Close()
			fr := serveFront(ln)
			b, err := a.awaitBackend(cmd, fr)
			if errors.Is(err, errStoppedWaiting) {
				return nil
			}
			if err != nil {
				return err
			}
			defer b.Close()
			stop, err := wk.start(a, b)
			if err != nil {
				return err
			}
			defer stop()
			front, err := a.front(cmd, b, "local")
			if err != nil {
				return err
			}
			h, err := a.webView(b, token, front)
			if err != nil {
				return err
			}
			fr.use(h)
			fmt.Fprintf(a.stderr, "orch: web view on http://%s/ ; stop with Ctrl-C\n", ln.Addr())
			a.noteWebNames(addr, token)
			<-cmd.Context().Done()
			return fr.shutdown(5 * time.Second)
		},
	}
	cmd.Flags().String("addr", defaultWebAddr, "address to listen on (beyond loopback it needs ORCH_WEB_TOKEN)")
	cmd.Flags().Bool("no-worker", false, "only serve pages: answered runs go on where a worker runs")
	a.runFlags(cmd) // the options of the runs started from the view, and of its worker
	return cmd
}

// webView is the web view of a store, as orch web, orch serve and orch bot serve it; front starts the runs people
// ask for there.
func (a *app) webView(b *store.Backend, token string, front *runFront) (http.Handler, error) {
	s, err := web.New(web.Config{Store: b.Store, Queue: b.Queue, Front: front.Front, Diffs: front.diffs, Token: token,
		PublicURL: a.env("ORCH_PUBLIC_URL"), AllowedUsers: splitList(a.env("ORCH_ALLOWED_USERS")), LocalUser: whoami(),
		Log: a.log})
	if err != nil {
		return nil, withCode(exitUsage, err)
	}
	as, err := a.apiServer(b, front)
	if err != nil {
		return nil, err
	}
	return withAPI(s.Handler(), as), nil
}

// runFront is how the surfaces served over HTTP start runs and show their work.
type runFront struct {
	*runs.Front
	diffs runs.Differ // nil when the runs' repositories cannot be read here
}

// front is the run front of this process: its options (with sandbox the default sandbox), workspace and branches.
func (a *app) front(cmd *cobra.Command, b *store.Backend, sandbox string) (*runFront, error) {
	opts, ws, _, err := a.baseOptions(cmd, sandbox)
	if err != nil {
		return nil, err
	}
	return a.frontOf(cmd, b, opts, ws), nil
}

func (a *app) frontOf(cmd *cobra.Command, b *store.Backend, opts jobs.Options, ws string) *runFront {
	f := &runFront{Front: &runs.Front{Starter: &runs.Starter{Store: b.Store, Queue: b.Queue, FindTasks: a.findTasks},
		Options: opts, Workspace: ws, Git: a.branchRequest(cmd), Agents: runs.KnownAgents}}
	if trees, err := a.worktrees(cmd); err == nil {
		f.diffs = trees
	}
	return f
}

// noteWebNames says at start which names a view bound beyond this machine will not answer to, so that the person
// who set it up learns it before the first refused request.
func (a *app) noteWebNames(addr, token string) {
	public := a.env("ORCH_PUBLIC_URL")
	switch {
	case token == "" && public != "":
		fmt.Fprintln(a.stderr, "orch: the web view answers to localhost names only: ORCH_PUBLIC_URL is served only with ORCH_WEB_TOKEN set")
	case token != "" && public == "" && web.CheckAddr(addr, "") != nil:
		fmt.Fprintln(a.stderr, "orch: the web view answers to localhost names only: set ORCH_PUBLIC_URL to the address people use to reach it")
	}
}

// sideWorker is the worker a serving command (orch web, orch mcp) runs beside what it serves, so that the runs
// started or answered there go on; none with --no-worker. Its settings are checked before anything starts.
type sideWorker struct{ settings *workerSettings }

func (a *app) sideWorker(cmd *cobra.Command) (sideWorker, error) {
	if noWorker, _ := cmd.Flags().GetBool("no-worker"); noWorker {
		return sideWorker{}, nil
	}
	wk, err := a.workerSettings(cmd)
	if err != nil {
		return sideWorker{}, err
	}
	return sideWorker{settings: &wk}, nil
}

// start starts the worker on b, and returns what stops it.
func (s sideWorker) start(a *app, b *store.Backend) (stop func(), err error) {
	if s.settings == nil {
		return func() {}, nil
	}
	e, err := a.startWorker(b, *s.settings)
	if err != nil {
		return nil, err
	}
	return e.Shutdown, nil
}
