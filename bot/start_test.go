package bot

import "testing"

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
