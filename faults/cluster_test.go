package faults

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/orchrun/orch/jobs"
)

// image is the suite's image, built once by TestMain.
var image string

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	if err := exec.Command("docker", "info").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			fmt.Fprintln(os.Stderr, "faults: the Docker Engine does not answer; CI must run this suite")
			return 1
		}
		fmt.Fprintln(os.Stderr, "faults: skipped: no Docker Engine")
		return 0
	}
	tag, err := buildImage()
	if err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		return 1
	}
	image = tag
	defer exec.Command("docker", "rmi", "-f", tag).Run()
	return m.Run()
}

// buildImage builds the suite's image FROM scratch: the static orch; redis-server, redis-cli and git from this
// machine's packages with every library they load, at the same paths; busybox as the shell and its tools.
func buildImage() (string, error) {
	dir, err := os.MkdirTemp("", "orch-faults-image-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	root := filepath.Join(dir, "root")
	build := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(root, "orch"), "github.com/orchrun/orch/cmd/orch")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building a static orch: %v\n%s", err, out)
	}
	for _, bin := range []string{"/usr/bin/redis-server", "/usr/bin/redis-cli", "/usr/bin/git", "/bin/busybox"} {
		if _, err := os.Stat(bin); err != nil {
			return "", fmt.Errorf("%s is not installed (.ci/run installs redis-server, git and busybox-static)", bin)
		}
		if err := copyInto(root, bin); err != nil {
			return "", err
		}
		if bin == "/bin/busybox" {
			continue // static
		}
		libs, err := exec.Command("ldd", bin).Output()
		if err != nil {
			return "", fmt.Errorf("ldd %s: %v", bin, err)
		}
		for _, m := range regexp.MustCompile(`(/\S+\.so[.\d]*)`).FindAllString(string(libs), -1) {
			if err := copyInto(root, m); err != nil {
				return "", err
			}
		}
	}
	// git runs the other end of a push to, or fetch from, a repository on disk as git-receive-pack and
	// git-upload-pack from its exec path: both are git itself.
	core := filepath.Join(root, "usr/lib/git-core")
	if err := os.MkdirAll(core, 0o755); err != nil {
		return "", err
	}
	for _, name := range []string{"git-receive-pack", "git-upload-pack", "git-upload-archive"} {
		if err := os.Symlink("/usr/bin/git", filepath.Join(core, name)); err != nil {
			return "", err
		}
	}
	dockerfile := "FROM scratch\nCOPY root/ /\n" +
		"RUN [\"/bin/busybox\", \"--install\", \"-s\", \"/bin\"]\n" +
		"RUN [\"/bin/mkdir\", \"-p\", \"/tmp\", \"/data\", \"/var/lib/orch\", \"/work\"]\n" +
		"RUN [\"/bin/chmod\", \"1777\", \"/tmp\"]\n" +
		"LABEL orch.test=faults\n"
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(dockerfile), 0o644); err != nil {
		return "", err
	}
	tag := "orch-faults:" + randomID()
	if out, err := exec.Command("docker", "build", "-q", "-t", tag, dir).CombinedOutput(); err != nil {
		return "", fmt.Errorf("docker build: %v\n%s", err, out)
	}
	return tag, nil
}

// copyInto copies the file at path (a link followed) to the same path under root.
func copyInto(root, path string) error {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(real)
	if err != nil {
		return err
	}
	info, err := os.Stat(real)
	if err != nil {
		return err
	}
	dst := filepath.Join(root, path)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, data, info.Mode().Perm())
}

func randomID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// cluster is one deployment of orch: Redis with Sentinel, workers, a command-line host, and the directory they share.
type cluster struct {
	t        *testing.T
	id       string
	network  string
	shared   string // mounted at /shared in every container
	password string
	workers  []string
	subnet   string // the network's first three octets
}

// The sentinels' name of the primary they watch.
const master = "orchfault"

func newCluster(t *testing.T) *cluster {
	t.Helper()
	c := &cluster{t: t, id: randomID(), shared: t.TempDir(), password: "fault-" + randomID()}
	c.network = "orch-faults-" + c.id
	// --internal: the containers reach each other and nothing outside. The data servers have addresses of their own:
	// Docker's DNS forgets a stopped container's name, and a sentinel that cannot resolve the primary it watches
	// stalls on the lookups (and enters its TILT mode) instead of failing it over, so the sentinels know them by address.
	for i := 0; ; i++ {
		var b [2]byte
		_, _ = rand.Read(b[:])
		c.subnet = fmt.Sprintf("10.%d.%d", 100+int(b[0])%100, b[1])
		out, err := exec.Command("docker", "network", "create", "--internal", "--subnet", c.subnet+".0/24",
			"--label", "orch.test=faults", c.network).CombinedOutput()
		if err == nil {
			break
		}
		if i == 5 {
			t.Fatalf("docker network create: %v\n%s", err, out)
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			c.dumpLogs()
		}
		out, _ := exec.Command("docker", "ps", "-aq", "--filter", "label=orch.faults="+c.id).Output()
		if ids := strings.Fields(string(out)); len(ids) > 0 {
			exec.Command("docker", append([]string{"rm", "-f"}, ids...)...).Run()
		}
		exec.Command("docker", "network", "rm", c.network).Run()
	})
	c.prepareShared()
	c.run("redis1", c.redisArgs("redis1", "")...)
	c.run("redis2", c.redisArgs("redis2", "redis1")...)
	for i := 1; i <= 3; i++ {
		name := fmt.Sprintf("s%d", i)
		conf := filepath.Join(c.shared, "sentinel-"+name+".conf")
		text := strings.Join([]string{"port 26379", "bind * -::*",
			// The sentinels take no password of their own here: the network is the suite's alone.
			"protected-mode no", "sentinel announce-ip " + c.addr(name), "sentinel monitor " + master + " " + c.addr("redis1") + " 6379 2",
			"sentinel auth-pass " + master + " " + c.password, "sentinel down-after-milliseconds " + master + " 2000",
			"sentinel failover-timeout " + master + " 10000", "sentinel parallel-syncs " + master + " 1", ""}, "\n")
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		c.run(name, "/usr/bin/redis-server", "/shared/sentinel-"+name+".conf", "--sentinel")
	}
	// The command-line host: where people run orch run, status and escalation resolve.
	c.run("cli", "/bin/sleep", "100000")
	for i := 1; i <= 3; i++ {
		c.startWorker(fmt.Sprintf("w%d", i))
	}
	c.waitReplicated()
	return c
}

// redisArgs are a data server's: deploy/redis.conf as production runs it, with the suite's password; replicaOf makes
// it a replica of that host.
func (c *cluster) redisArgs(name, replicaOf string) []string {
	args := []string{"/usr/bin/redis-server", "/shared/redis-" + name + ".conf", "--port", "6379", "--dir", "/data", "--requirepass", c.password,
		"--masterauth", c.password, "--replica-announce-ip", c.addr(name)}
	if replicaOf != "" {
		args = append(args, "--replicaof", c.addr(replicaOf), "6379")
	}
	return args
}

// addrs are the fixed addresses of the roles that have one.
var addrs = map[string]int{"redis1": 11, "redis2": 12, "s1": 21, "s2": 22, "s3": 23}

// addr is a role's address on the suite's network.
func (c *cluster) addr(role string) string { return fmt.Sprintf("%s.%d", c.subnet, addrs[role]) }

// role is the data server at address a.
func (c *cluster) role(a string) string {
	for r := range addrs {
		if c.addr(r) == a {
			return r
		}
	}
	return a
}

// prepareShared writes what every container reads: deploy/redis.conf, the agent, the plans, and the bare repository
// the runs clone and push to.
func (c *cluster) prepareShared() {
	c.t.Helper()
	conf, err := os.ReadFile("../deploy/redis.conf")
	if err != nil {
		c.t.Fatal(err)
	}
	// A file of its own for each data server: a sentinel rewrites the configuration of the servers it reconfigures
	// (CONFIG REWRITE), and a replica's "replicaof" written into a shared file would make its primary, restarted,
	// a replica of itself.
	for _, name := range []string{"redis1", "redis2"} {
		c.write("redis-"+name+".conf", string(conf))
	}
	// The agent: it tells where it started and finished (outside the repository, as a deploy or a message would be
	// seen), works for the time /shared/agent-seconds says, and writes its task's file. With /shared/ask-TASK present,
	// a task's first attempt asks a question instead.
	c.write("agent.sh", `cat >/dev/null
echo "start $ORCH_RUN_ID $ORCH_TASK_ID $ORCH_ATTEMPT $(hostname)" >> /shared/starts
if [ -e "/shared/ask-$ORCH_TASK_ID" ] && [ "$ORCH_ATTEMPT" = 1 ]; then
  printf 'QUESTION: Which store should I use?\nOPTIONS:\nA) Redis\nB) Memory\nRECOMMENDATION: A\n'
  exit 0
fi
sleep "$(cat /shared/agent-seconds 2>/dev/null || echo 2)"
echo "$ORCH_TASK_ID by $(hostname)" > "task-$ORCH_TASK_ID.txt"
echo "done $ORCH_RUN_ID $ORCH_TASK_ID $(hostname)" >> /shared/completions
echo "Done. All tests pass."
`)
	var plan strings.Builder
	plan.WriteString("# Faults\n\nThree tasks that each write a file.\n")
	for i := 1; i <= 3; i++ {
		fmt.Fprintf(&plan, "\n## Task 1.%d: Write file %d\n\n**Type:** CODING\n\n**Description:**\nWrite task-1.%d.txt.\n\n"+
			"**Acceptance Criteria:**\n- [ ] The file exists\n", i, i, i)
	}
	c.write("plan.md", plan.String())
	src := filepath.Join(c.t.TempDir(), "src")
	remote := filepath.Join(c.shared, "remote.git")
	for _, args := range [][]string{{"init", "-q", "-b", "main", src}, {"-C", src, "commit", "-q", "--allow-empty", "-m", "first"},
		{"clone", "-q", "--bare", src, remote}} {
		cmd := exec.Command("git", args...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=U", "GIT_AUTHOR_EMAIL=u@x", "GIT_COMMITTER_NAME=U",
			"GIT_COMMITTER_EMAIL=u@x", "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			c.t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

func (c *cluster) write(name, text string) {
	c.t.Helper()
	if err := os.WriteFile(filepath.Join(c.shared, name), []byte(text), 0o755); err != nil {
		c.t.Fatal(err)
	}
}

func (c *cluster) name(role string) string { return "orch-faults-" + c.id + "-" + role }

// orchEnv is the environment of every orch process of the deployment.
func (c *cluster) orchEnv() []string {
	return []string{"ORCH_REDIS_URL=redis+sentinel://s1:26379,s2:26379,s3:26379/" + master + "/0",
		"ORCH_REDIS_PASSWORD=" + c.password, "ORCH_SANDBOX=local", "ORCH_BRAIN=heuristic", "ANTHROPIC_API_KEY=",
		"ORCH_AGENT=cmd:/bin/sh /shared/agent.sh", "ORCH_REPO=/shared/remote.git", "ORCH_GIT_PUSH=origin",
		"ORCH_WORKTREES=/var/lib/orch", "ORCH_HTTP_ADDR=:3000", "HOME=/tmp", "ORCH_LOG_LEVEL=info"}
}

// run starts a container of the suite's image on its network, under the role's name.
func (c *cluster) run(role string, args ...string) {
	c.t.Helper()
	cmd := []string{"run", "-d", "--name", c.name(role), "--hostname", role, "--network", c.network, "--network-alias", role,
		"--label", "orch.faults=" + c.id, "-v", c.shared + ":/shared", "-w", "/work"}
	if _, ok := addrs[role]; ok {
		cmd = append(cmd, "--ip", c.addr(role))
	}
	if strings.HasPrefix(role, "w") || role == "cli" {
		for _, e := range c.orchEnv() {
			cmd = append(cmd, "-e", e)
		}
	}
	cmd = append(append(cmd, image), args...)
	c.docker(cmd...)
}

func (c *cluster) startWorker(role string) {
	c.run(role, "/orch", "worker", "--concurrency", "1")
	c.workers = append(c.workers, role)
}

func (c *cluster) docker(args ...string) string {
	c.t.Helper()
	out, err := exec.Command("docker", args...).CombinedOutput()
	if err != nil {
		c.t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// orch runs an orch command on the command-line host.
func (c *cluster) orch(args ...string) (string, error) {
	out, err := exec.Command("docker", append([]string{"exec", "-w", "/work", c.name("cli"), "/orch"}, args...)...).CombinedOutput()
	return string(out), err
}

// redisCLI runs redis-cli on the command-line host.
func (c *cluster) redisCLI(args ...string) (string, error) {
	out, err := exec.Command("docker", append([]string{"exec", c.name("cli"), "/usr/bin/redis-cli"}, args...)...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// primary is the data server the sentinels name primary now.
func (c *cluster) primary() string {
	out, err := c.redisCLI("-h", "s1", "-p", "26379", "sentinel", "get-master-addr-by-name", master)
	if err != nil {
		return ""
	}
	return c.role(strings.Fields(out + " ")[0])
}

// waitReplicated waits until the replica is in sync and the sentinels know it: before that, nothing could be failed
// over.
func (c *cluster) waitReplicated() {
	c.t.Helper()
	c.waitFor(2*time.Minute, "the replica to sync and the sentinels to know it", func() bool {
		p := c.primary()
		if p != "redis1" && p != "redis2" {
			return false
		}
		replica := map[string]string{"redis1": "redis2", "redis2": "redis1"}[p]
		info, err := c.redisCLI("-h", c.addr(replica), "-a", c.password, "--no-auth-warning", "info", "replication")
		if err != nil || !strings.Contains(info, "master_link_status:up") {
			return false
		}
		out, err := c.redisCLI("-h", "s1", "-p", "26379", "sentinel", "replicas", master)
		return err == nil && strings.Contains(out, c.addr(replica)) && !strings.Contains(out, "s_down")
	})
}

func (c *cluster) waitFor(limit time.Duration, what string, ok func() bool) {
	c.t.Helper()
	for deadline := time.Now().Add(limit); !ok(); time.Sleep(250 * time.Millisecond) {
		if time.Now().After(deadline) {
			c.t.Fatalf("waited %s for %s", limit, what)
		}
	}
}

var runIDRe = regexp.MustCompile(`\br-[a-z0-9]{10}\b`)

// submit queues a run of the plan on the deployment and returns its id.
func (c *cluster) submit() string {
	c.t.Helper()
	out, err := c.orch("run", "--detach", "/shared/plan.md")
	if err != nil {
		c.t.Fatalf("orch run --detach: %v\n%s", err, out)
	}
	id := runIDRe.FindString(out)
	if id == "" {
		c.t.Fatalf("no run id in:\n%s", out)
	}
	return id
}

// status is the run as orch status --json prints it.
func (c *cluster) status(id string) (*jobs.Run, error) {
	out, err := c.orch("status", "--json", id)
	if err != nil {
		return nil, fmt.Errorf("%v: %s", err, out)
	}
	var r jobs.Run
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		return nil, fmt.Errorf("%v: %s", err, out)
	}
	return &r, nil
}

func (c *cluster) waitStatus(id string, want jobs.RunStatus, limit time.Duration) *jobs.Run {
	c.t.Helper()
	var last *jobs.Run
	var lastErr error
	for deadline := time.Now().Add(limit); ; time.Sleep(500 * time.Millisecond) {
		last, lastErr = c.status(id)
		if lastErr == nil && last.Status == want {
			return last
		}
		if lastErr == nil && want != jobs.RunParked && last.Status.Terminal() {
			c.t.Fatalf("run %s ended %s (%s), want %s", id, last.Status, last.Reason, want)
		}
		if time.Now().After(deadline) {
			status := "unknown"
			if last != nil {
				status = string(last.Status)
			}
			c.t.Fatalf("run %s is %s after %s, want %s (%v)", id, status, limit, want, lastErr)
		}
	}
}

// lines are the agents' records of what they did (starts, completions) for run id.
func (c *cluster) lines(file, id string) []string {
	data, _ := os.ReadFile(filepath.Join(c.shared, file))
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, " "+id+" ") {
			out = append(out, l)
		}
	}
	return out
}

// started waits until a task of run id started on a worker, and returns the worker.
func (c *cluster) started(id, task string, skip ...string) string {
	c.t.Helper()
	host := ""
	c.waitFor(2*time.Minute, "task "+task+" of "+id+" to start", func() bool {
		for _, l := range c.lines("starts", id) {
			f := strings.Fields(l) // start RUN TASK ATTEMPT HOST
			if len(f) == 5 && f[2] == task && !contains(skip, f[4]) {
				host = f[4]
				return true
			}
		}
		return false
	})
	return host
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// check asserts what a team expects of a run that went through a fault: completed, each task's agent completed once,
// one commit per task, and the remote's branch at the commit the run recorded.
func (c *cluster) check(r *jobs.Run) {
	c.t.Helper()
	if r.Status != jobs.RunCompleted {
		c.t.Fatalf("run %s is %s", r.ID, r.Status)
	}
	done := map[string]int{}
	for _, l := range c.lines("completions", r.ID) {
		done[strings.Fields(l)[2]]++
	}
	for _, task := range r.Tasks {
		if done[task.ID] != 1 {
			c.t.Errorf("run %s: task %s's agent completed %d times:\n%s", r.ID, task.ID, done[task.ID],
				strings.Join(c.lines("completions", r.ID), "\n"))
		}
	}
	g := r.Git
	if g == nil {
		c.t.Fatalf("run %s has no branch", r.ID)
	}
	remote := filepath.Join(c.shared, "remote.git")
	head := gitOut(c.t, remote, "rev-parse", "refs/heads/"+g.Branch)
	if head != g.Head || g.Pushed != g.Head {
		c.t.Errorf("run %s: the remote's branch is at %s; the run records head %s, pushed %s", r.ID, head, g.Head, g.Pushed)
	}
	if n := gitOut(c.t, remote, "rev-list", "--count", g.BaseCommit+".."+head); n != fmt.Sprint(len(r.Tasks)) {
		c.t.Errorf("run %s: %s commits on the branch for %d tasks:\n%s", r.ID, n, len(r.Tasks),
			gitOut(c.t, remote, "log", "--oneline", g.BaseCommit+".."+head))
	}
	for _, task := range r.Tasks {
		if _, err := exec.Command("git", "--git-dir", remote, "cat-file", "-e", head+":task-"+task.ID+".txt").Output(); err != nil {
			c.t.Errorf("run %s: the branch has no task-%s.txt", r.ID, task.ID)
		}
	}
}

func gitOut(t *testing.T, gitDir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"--git-dir", gitDir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// dumpLogs writes every container's last log lines to the test log: what a failed fault test needs read.
func (c *cluster) dumpLogs() {
	out, _ := exec.Command("docker", "ps", "-a", "--filter", "label=orch.faults="+c.id, "--format", "{{.Names}}").Output()
	for _, name := range strings.Fields(string(out)) {
		var buf bytes.Buffer
		cmd := exec.Command("docker", "logs", "--tail", "40", name)
		cmd.Stdout, cmd.Stderr = &buf, &buf
		cmd.Run()
		c.t.Logf("--- %s\n%s", name, tail(&buf, 6000))
	}
	for _, f := range []string{"starts", "completions"} {
		data, _ := os.ReadFile(filepath.Join(c.shared, f))
		c.t.Logf("--- %s\n%s", f, data)
	}
}

func tail(r io.Reader, n int) string {
	data, _ := io.ReadAll(r)
	if len(data) > n {
		data = data[len(data)-n:]
	}
	return string(data)
}
