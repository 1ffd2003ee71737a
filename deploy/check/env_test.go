package check

import (
	"bufio"
	"bytes"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/dotenv"
)

// deployDir is deploy/, relative to this package; repoDir the repository root.
const (
	deployDir = ".."
	repoDir   = "../.."
)

// internalEnv are variables orch's source names that are not settings: orch sets them for the agents it starts
// (the sim agent, which is orch itself, reads them back) or only its tests read them.
var internalEnv = map[string]string{
	"ORCH_RUN_ID":         "set by orch for every agent process",
	"ORCH_TASK_ID":        "set by orch for every agent process",
	"ORCH_ATTEMPT":        "set by orch for every agent process",
	"ORCH_TEST_REDIS_URL": "tests only",
}

// secretEnv must never have a value in a committed file.
var secretEnv = []string{"SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_APP_TOKEN", "ANTHROPIC_API_KEY"}

var envLiteral = regexp.MustCompile(`"((?:ORCH|SLACK|ANTHROPIC|DOCKER|OTEL|GITHUB)_[A-Z0-9_]+)"`)

// envPackages read the environment: cmd/orch, and telemetry (through the env function cmd/orch gives it).
var envPackages = []string{"cmd/orch", "telemetry"}

// orchEnv returns the environment variables orch reads: the string literals with those prefixes in the non-test
// source of envPackages, minus internalEnv.
func orchEnv(t *testing.T) map[string]bool {
	t.Helper()
	var files []string
	for _, pkg := range envPackages {
		fs, err := filepath.Glob(filepath.Join(repoDir, filepath.FromSlash(pkg), "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, fs...)
	}
	names := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range envLiteral.FindAllSubmatch(src, -1) {
			if _, internal := internalEnv[string(m[1])]; !internal {
				names[string(m[1])] = true
			}
		}
	}
	// A scan that finds nothing would make every check below pass: these are read today, and must be found.
	for _, must := range []string{"ORCH_REDIS_URL", "ORCH_WORKSPACE", "ORCH_HTTP_ADDR", "ORCH_SANDBOX", "SLACK_BOT_TOKEN", "ANTHROPIC_API_KEY"} {
		if !names[must] {
			t.Fatalf("scanning cmd/orch for the environment it reads did not find %s (found %v): fix the scan", must, sorted(names))
		}
	}
	return names
}

// envExample is deploy/orch.env.example: its values as compose parses them, and every name it documents, set or
// commented out ("# NAME=").
type envExample struct {
	values     map[string]string
	documented map[string]bool
}

var commentedVar = regexp.MustCompile(`^#\s*([A-Z][A-Z0-9_]*)=`)

func loadEnvExample(t *testing.T) envExample {
	t.Helper()
	path := filepath.Join(deployDir, "orch.env.example")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	values, err := dotenv.UnmarshalBytesWithLookup(data, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	ex := envExample{values: values, documented: map[string]bool{}}
	for k := range values {
		ex.documented[k] = true
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if m := commentedVar.FindStringSubmatch(sc.Text()); m != nil {
			ex.documented[m[1]] = true
		}
	}
	return ex
}

var composeVar = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)`)

// composeVars are the variables deploy/compose.yaml interpolates.
func composeVars(t *testing.T) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(deployDir, "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]bool{}
	for _, m := range composeVar.FindAllSubmatch(data, -1) {
		vars[string(m[1])] = true
	}
	return vars
}

func TestEnvExampleDocumentsWhatOrchReads(t *testing.T) {
	read := orchEnv(t)
	ex := loadEnvExample(t)
	vars := composeVars(t)
	for name := range read {
		if !ex.documented[name] {
			t.Errorf("orch reads %s but deploy/orch.env.example does not document it", name)
		}
	}
	for name := range ex.values {
		if !read[name] && !vars[name] {
			t.Errorf("deploy/orch.env.example sets %s, which neither orch reads nor compose.yaml uses (a typo?)", name)
		}
	}
	for name := range vars {
		if !ex.documented[name] {
			t.Errorf("compose.yaml uses ${%s} but deploy/orch.env.example does not document it", name)
		}
	}
	for _, s := range secretEnv {
		v, ok := ex.values[s]
		if !ok {
			t.Errorf("deploy/orch.env.example has no %s line", s)
		} else if v != "" {
			t.Errorf("deploy/orch.env.example has a value for the secret %s: leave it empty", s)
		}
	}
}

func TestDeployEnvIsIgnoredByGit(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoDir, ".gitignore"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(line) == "/deploy/orch.env" {
			return
		}
	}
	t.Error(".gitignore does not list /deploy/orch.env, the filled-in copy of orch.env.example (it holds secrets)")
}

// addrPort is the port of a listen address such as ":3000".
func addrPort(t *testing.T, addr string) string {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		t.Fatalf("listen address %q: %v", addr, err)
	}
	return port
}

func sorted(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
