package check

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// slackManifest is the part of a Slack app manifest orch's checks read (docs.slack.dev/reference/app-manifest).
type slackManifest struct {
	Features struct {
		AppHome struct {
			HomeTab      bool `yaml:"home_tab_enabled"`
			MessagesTab  bool `yaml:"messages_tab_enabled"`
			MessagesRead bool `yaml:"messages_tab_read_only_enabled"`
		} `yaml:"app_home"`
		Shortcuts []struct {
			Name       string `yaml:"name"`
			Type       string `yaml:"type"`
			CallbackID string `yaml:"callback_id"`
		} `yaml:"shortcuts"`
		SlashCommands []struct {
			Command   string `yaml:"command"`
			URL       string `yaml:"url"`
			UsageHint string `yaml:"usage_hint"`
		} `yaml:"slash_commands"`
	} `yaml:"features"`
	OAuth struct {
		Scopes struct {
			Bot []string `yaml:"bot"`
		} `yaml:"scopes"`
	} `yaml:"oauth_config"`
	Settings struct {
		Interactivity struct {
			Enabled    bool   `yaml:"is_enabled"`
			RequestURL string `yaml:"request_url"`
		} `yaml:"interactivity"`
		Events struct {
			RequestURL string   `yaml:"request_url"`
			BotEvents  []string `yaml:"bot_events"`
		} `yaml:"event_subscriptions"`
		SocketMode bool `yaml:"socket_mode_enabled"`
	} `yaml:"settings"`
}

func loadSlackManifest(t *testing.T, name string) slackManifest {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(deployDir, name))
	if err != nil {
		t.Fatal(err)
	}
	var m slackManifest
	if err := yaml.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return m
}

// The two manifests ask for what orch uses (the events it handles, the scopes of the Web API methods it calls, the Home
// tab, the shortcut, every subcommand), and differ only in how Slack reaches orch.
func TestSlackManifests(t *testing.T) {
	httpM, socketM := loadSlackManifest(t, "slack-app-manifest.yaml"), loadSlackManifest(t, "slack-app-manifest-socket.yaml")
	for name, m := range map[string]slackManifest{"HTTP": httpM, "Socket Mode": socketM} {
		for _, ev := range []string{"message.channels", "message.groups", "app_mention", "app_home_opened"} {
			if !slices.Contains(m.Settings.Events.BotEvents, ev) {
				t.Errorf("%s manifest: no %s event", name, ev)
			}
		}
		// chat.postMessage/update/postEphemeral: chat:write; conversations.replies: channels:history, groups:history;
		// the slash command and the shortcut: commands; app_mention: app_mentions:read. views.publish and views.open
		// need no scope of their own.
		for _, scope := range []string{"commands", "chat:write", "channels:history", "groups:history", "app_mentions:read"} {
			if !slices.Contains(m.OAuth.Scopes.Bot, scope) {
				t.Errorf("%s manifest: no %s scope", name, scope)
			}
		}
		if h := m.Features.AppHome; !h.HomeTab || !h.MessagesTab || !h.MessagesRead {
			t.Errorf("%s manifest: app_home %+v; want the Home tab, and the Messages tab (read-only) for reminders", name, h)
		}
		if len(m.Features.SlashCommands) != 1 || m.Features.SlashCommands[0].Command != "/orch" {
			t.Fatalf("%s manifest: slash commands %+v", name, m.Features.SlashCommands)
		}
		hint := m.Features.SlashCommands[0].UsageHint
		for _, sub := range []string{"do TEXT", "run PLAN", "status", "questions", "history", "costs", "logs RUN_ID", "abort RUN_ID", "help"} {
			if !strings.Contains(hint, sub) {
				t.Errorf("%s manifest: the usage hint %q does not name %q", name, hint, sub)
			}
		}
		if !m.Settings.Interactivity.Enabled {
			t.Errorf("%s manifest: interactivity is off: no button, modal or shortcut would reach orch", name)
		}
		// Every shortcut is one the bot handles: its callback id is in the bot's source.
		src := botSource(t)
		for _, s := range m.Features.Shortcuts {
			if !strings.Contains(src, `"`+s.CallbackID+`"`) {
				t.Errorf("%s manifest: shortcut %q (%s) is handled nowhere in bot/", name, s.Name, s.CallbackID)
			}
		}
	}
	if httpM.Settings.SocketMode || !socketM.Settings.SocketMode {
		t.Errorf("socket_mode_enabled: HTTP %v, Socket Mode %v", httpM.Settings.SocketMode, socketM.Settings.SocketMode)
	}
	for what, url := range map[string]string{
		"/slack/commands":     httpM.Features.SlashCommands[0].URL,
		"/slack/interactions": httpM.Settings.Interactivity.RequestURL,
		"/slack/events":       httpM.Settings.Events.RequestURL,
	} {
		if url != "https://ORCH_URL"+what {
			t.Errorf("HTTP manifest: %s goes to %q", what, url)
		}
	}
	// Without the URLs (which Socket Mode has none of) and the mode, the two are the same app.
	strip := func(m slackManifest) slackManifest {
		m.Features.SlashCommands = slices.Clone(m.Features.SlashCommands)
		for i := range m.Features.SlashCommands {
			m.Features.SlashCommands[i].URL = ""
		}
		m.Settings.Interactivity.RequestURL, m.Settings.Events.RequestURL, m.Settings.SocketMode = "", "", false
		return m
	}
	if a, b := strip(httpM), strip(socketM); !reflect.DeepEqual(a, b) {
		t.Errorf("the manifests differ beyond how Slack reaches orch:\nHTTP:   %+v\nSocket: %+v", a, b)
	}
}

// botSource is the bot package's Go source, tests excluded.
func botSource(t *testing.T) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(deployDir, "..", "bot", "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("the bot's source: %v", err)
	}
	var b strings.Builder
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
	}
	return b.String()
}
