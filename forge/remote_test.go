package forge

import "testing"

func TestParseGitHubRemote(t *testing.T) {
	for _, tc := range []struct {
		remote, host string
		owner, repo  string // "" when not a GitHub remote
	}{
		{"https://github.com/orchrun/orch", "", "orchrun", "orch"},
		{"https://github.com/orchrun/orch.git", "", "orchrun", "orch"},
		{"https://github.com/orchrun/orch/", "", "orchrun", "orch"},
		{"http://github.com/orchrun/orch.git", "", "orchrun", "orch"},
		{"https://x-access-token:ghs_secret@github.com/orchrun/orch.git", "", "orchrun", "orch"},
		{"https://user@github.com/orchrun/orch.git", "", "orchrun", "orch"},
		{"https://GitHub.com/OrchRun/Orch.git", "", "OrchRun", "Orch"},
		{"git@github.com:orchrun/orch.git", "", "orchrun", "orch"},
		{"git@github.com:orchrun/orch", "", "orchrun", "orch"},
		{"github.com:orchrun/orch.git", "", "orchrun", "orch"},
		{"org-123@github.com:orchrun/orch.git", "", "orchrun", "orch"},
		{"ssh://git@github.com/orchrun/orch.git", "", "orchrun", "orch"},
		{"ssh://git@github.com:22/orchrun/orch.git", "", "orchrun", "orch"},
		{"git+ssh://git@github.com/orchrun/orch.git", "", "orchrun", "orch"},
		{"  https://github.com/orchrun/orch.git\n", "", "orchrun", "orch"},
		{"https://github.com/orchrun/my.repo_name-2.git", "github.com", "orchrun", "my.repo_name-2"},

		// GitHub Enterprise: the host given, in any of the forms a user writes it.
		{"https://ghe.example.com/team/app.git", "ghe.example.com", "team", "app"},
		{"git@ghe.example.com:team/app.git", "ghe.example.com", "team", "app"},
		{"ssh://git@ghe.example.com:2222/team/app.git", "ghe.example.com", "team", "app"},
		{"https://ghe.example.com/team/app.git", "https://ghe.example.com/", "team", "app"},
		{"https://ghe.example.com:8443/team/app.git", "ghe.example.com:8443", "team", "app"},
		{"https://ghe.example.com/team/app.git", "ghe.example.com:8443", "", ""},
		{"https://github.com/orchrun/orch.git", "ghe.example.com", "", ""},
		{"https://ghe.example.com/team/app.git", "", "", ""},

		// Not GitHub remotes.
		{"", "", "", ""},
		{"/srv/git/orch.git", "", "", ""},
		{"../orch", "", "", ""},
		{"./github.com:orchrun/orch", "", "", ""},
		{"orch.git", "", "", ""},
		{"file:///srv/git/orch.git", "", "", ""},
		{"git://github.com/orchrun/orch.git", "", "", ""},
		{"https://gitlab.com/orchrun/orch.git", "", "", ""},
		{"https://www.github.com/orchrun/orch", "", "", ""},
		{"https://github.com.evil.example/orchrun/orch", "", "", ""},
		{"https://github.com/orchrun", "", "", ""},
		{"https://github.com/orchrun/orch/tree/main", "", "", ""},
		{"https://github.com/orchrun/orch?tab=readme", "", "", ""},
		{"https://github.com/orchrun/..", "", "", ""},
		{"https://github.com/../orch", "", "", ""},
		{"https://github.com/orchrun/.git", "", "", ""},
		{"https://github.com/orch run/orch", "", "", ""},
		{`C:\work\orch`, "", "", ""},
		{"C:/work/orch", "", "", ""},
	} {
		t.Run(tc.remote+"@"+tc.host, func(t *testing.T) {
			owner, repo, ok := ParseGitHubRemote(tc.remote, tc.host)
			if want := tc.owner != ""; ok != want || owner != tc.owner || repo != tc.repo {
				t.Errorf("ParseGitHubRemote(%q, %q) = %q, %q, %v; want %q, %q, %v",
					tc.remote, tc.host, owner, repo, ok, tc.owner, tc.repo, want)
			}
		})
	}
}
