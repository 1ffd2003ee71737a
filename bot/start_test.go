package bot

import (
	"os"
	"path/filepath"
	"testing"
)

// What a channel is told of a run that could not start names the workspace's files relative to it, and never where
// the workspace is on the server.
func TestStartErrorsHideTheWorkspace(t *testing.T) {
	n := &newRuns{workspace: "/srv/orch/ws"}
	for in, want := range map[string]string{
		"plans/a.md: open /srv/orch/ws/plans/a.md: permission denied": "plans/a.md: open plans/a.md: permission denied",
		"the workspace /srv/orch/ws is not a git repository":          "the workspace . is not a git repository",
		"the workspace (/srv/orch/ws)":                                "the workspace (.)",
		"scenario /srv/orch/wsx/s.yaml is another directory's":        "scenario /srv/orch/wsx/s.yaml is another directory's",
		"nothing of the server here":                                  "nothing of the server here",
	} {
		if got := n.withoutWorkspace(in); got != want {
			t.Errorf("withoutWorkspace(%q) = %q, want %q", in, got, want)
		}
	}
}

// A workspace configured through a symbolic link is hidden under the name an error gives it, the link's or the
// directory's it leads to.
func TestStartErrorsHideTheWorkspaceThroughALink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	resolved, err := filepath.EvalSymlinks(real)
	if err != nil {
		t.Fatal(err)
	}
	n := &newRuns{workspace: link}
	for in, want := range map[string]string{
		"open " + link + "/plan.md: permission denied":     "open plan.md: permission denied",
		"open " + resolved + "/plan.md: permission denied": "open plan.md: permission denied",
	} {
		if got := n.withoutWorkspace(in); got != want {
			t.Errorf("withoutWorkspace(%q) = %q, want %q", in, got, want)
		}
	}
}
