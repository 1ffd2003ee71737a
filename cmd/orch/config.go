package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/orchrun/orch/agent"
	"github.com/orchrun/orch/internal/safetext"
	"github.com/orchrun/orch/jobs"
	"github.com/orchrun/orch/jobs/store"
)

// escalationPolicy resolves how questions behave: orch.yaml's escalation section, with flags and env over it.
func (a *app) escalationPolicy(cmd *cobra.Command) (jobs.EscalationPolicy, error) {
	fc := a.set.file.Escalation
	p := jobs.EscalationPolicy{TimeoutDefault: fc.TimeoutDefault, Reminders: fc.Reminders, Fallback: fc.Fallback,
		Triggers: fc.Triggers}
	var err error
	if p.MaxPerTask, err = a.set.atLeast(cmd, "max-escalations", "ORCH_MAX_ESCALATIONS", "escalation.max_per_task", fc.MaxPerTask, 5, 1); err != nil {
		return p, err
	}
	if v := a.set.lookup(cmd, "escalation-timeout", "ORCH_ESCALATION_TIMEOUT", "escalation.timeout", fc.Timeout, "0"); v.v != "0" && v.v != "" {
		if p.Timeout, err = time.ParseDuration(strings.TrimSpace(v.v)); err != nil || p.Timeout < 0 {
			return p, usageErr("--escalation-timeout: %q is not a duration (e.g. 1h; 0 waits forever)%s", safetext.OneLine(v.v, 40), v.suffix())
		}
	}
	if f := cmd.Flags().Lookup("timeout-default"); f != nil && f.Changed {
		p.TimeoutDefault, _ = cmd.Flags().GetBool("timeout-default")
	}
	if p.Reminders < 0 {
		return p, usageErr("orch.yaml escalation.reminders must not be negative")
	}
	switch p.Fallback {
	case "", "wait", "abort":
	default:
		return p, usageErr("orch.yaml escalation.fallback: %q, want wait or abort", p.Fallback)
	}
	for i, t := range p.Triggers {
		if strings.TrimSpace(t.Name) == "" {
			return p, usageErr("orch.yaml escalation.triggers[%d]: a trigger needs a name", i)
		}
		if _, err := regexp.Compile(t.Pattern); err != nil || t.Pattern == "" {
			return p, usageErr("orch.yaml trigger %q: pattern %q is not a valid regular expression", t.Name, t.Pattern)
		}
		if t.Priority < 0 || t.Priority > 1000 {
			return p, usageErr("orch.yaml trigger %q: priority %d is outside 0..1000", t.Name, t.Priority)
		}
	}
	return p, nil
}

// fileConfig is orch.yaml: the lowest layer of configuration, under env (ORCH_*) and flags.
type fileConfig struct {
	Agent      string `yaml:"agent"`
	AgentModel string `yaml:"agent_model"`
	Brain      string `yaml:"brain"`
	BrainModel string `yaml:"brain_model"`
	// LLMOnly sends every output to the LLM brain, markers included (--llm-only).
	LLMOnly bool `yaml:"llm_only"`
	// SimilarityThreshold is the error similarity from which failures count as the same (0.8 when unset).
	SimilarityThreshold *float64 `yaml:"similarity_threshold"`
	Sandbox             string   `yaml:"sandbox"`
	Image               string   `yaml:"image"`
	Redis               string   `yaml:"redis"`
	StateDir            string   `yaml:"state_dir"`
	Workspace           string   `yaml:"workspace"`
	AgentEnv            []string `yaml:"agent_env"` // given to agents besides the allowlist (ORCH_AGENT_ENV)
	// MaxAttempts and Concurrency are pointers so that a 0 written in the file is refused, not taken for unset.
	MaxAttempts  *int      `yaml:"max_attempts"`
	AgentTimeout string    `yaml:"agent_timeout"`
	Concurrency  *int      `yaml:"concurrency"`
	Git          gitConfig `yaml:"git"`
	// History says what is kept of the runs that are over.
	History struct {
		Keep keepSetting `yaml:"keep"`
	} `yaml:"history"`
	// Permissions adds to the sandbox's default permission policy for the claude agent (or replaces it, defaults:
	// false).
	Permissions *permissionsConfig `yaml:"permissions"`
	// Teams weighs the worker time of the teams that share the worker pool (teams.go); Budgets bounds what runs spend
	// (budgets.go).
	Teams      map[string]int `yaml:"teams"`
	Budgets    budgetsConfig  `yaml:"budgets"`
	Escalation struct {
		MaxPerTask     *int                 `yaml:"max_per_task"`
		Timeout        string               `yaml:"timeout"`
		TimeoutDefault bool                 `yaml:"timeout_default"`
		Reminders      int                  `yaml:"reminders"`
		Fallback       string               `yaml:"fallback"`
		Triggers       []jobs.CustomTrigger `yaml:"triggers"`
	} `yaml:"escalation"`
}

// permissionsConfig is orch.yaml's permissions section: rules in Claude Code's syntax on top of the sandbox's
// defaults, and the decision for a call no rule names.
type permissionsConfig struct {
	Default  string   `yaml:"default"`
	Allow    []string `yaml:"allow"`
	Ask      []string `yaml:"ask"`
	Deny     []string `yaml:"deny"`
	Defaults *bool    `yaml:"defaults"` // false: the sandbox's default rules are left out
}

// permissions resolves the policy a run's agent works under: the sandbox's defaults, with orch.yaml's rules on top.
func (a *app) permissions(sandboxKind string) (*jobs.Permissions, error) {
	pc := a.set.file.Permissions
	base := agent.DefaultPolicy(sandboxKind)
	if pc == nil {
		// The sandbox's defaults are not copied into every run (two KiB of rules in each parked run, rewritten with
		// every step): a run without a policy of its own works under its sandbox's defaults (worker.Policy), and its
		// start records their summary.
		return nil, nil
	}
	if pc.Defaults != nil && !*pc.Defaults {
		base = agent.Policy{Default: agent.Ask}
	}
	p := base.Extend(agent.Policy{Default: agent.Decision(pc.Default), Allow: pc.Allow, Ask: pc.Ask, Deny: pc.Deny})
	p.Name = "orch.yaml on " + sandboxKind + " defaults"
	if pc.Defaults != nil && !*pc.Defaults {
		p.Name = "orch.yaml"
	}
	if err := p.Validate(); err != nil {
		return nil, usageErr("orch.yaml %v", err)
	}
	return toPermissions(p), nil
}

func toPermissions(p agent.Policy) *jobs.Permissions {
	return &jobs.Permissions{Name: p.Name, Default: string(p.Default), Allow: p.Allow, Ask: p.Ask, Deny: p.Deny}
}

// settings resolves a value from flag, env and orch.yaml, in that order of precedence.
type settings struct {
	file    fileConfig
	fileSet map[string]bool
	env     func(string) string
}

func loadSettings(path string, env func(string) string) (*settings, error) {
	s := &settings{env: env, fileSet: map[string]bool{}}
	explicit := path != ""
	if path == "" {
		path = "orch.yaml"
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) && !explicit {
		return s, nil
	}
	if err != nil {
		return nil, usageErr("reading config %s: %v", path, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&s.file); err != nil && !errors.Is(err, io.EOF) {
		return nil, usageErr("config %s: %v", path, err)
	}
	var raw map[string]any
	_ = yaml.Unmarshal(data, &raw)
	for k := range raw {
		s.fileSet[k] = true
	}
	return s, nil
}

// setting is one setting as resolved: its text, and the layer it came from when that was not the flag, so that an error
// about it names what the person wrote ("ORCH_MAX_ATTEMPTS", "orch.yaml max_attempts").
type setting struct {
	v    string
	from string // "" for the flag or the default
}

// suffix says where a bad value came from, for the end of an error message.
func (s setting) suffix() string {
	if s.from == "" {
		return ""
	}
	return " (from " + s.from + ")"
}

// lookup returns flag name if set, else env key, else the orch.yaml value (fileKey names it), else def.
func (s *settings) lookup(cmd *cobra.Command, flag, envKey, fileKey, fileVal, def string) setting {
	if f := cmd.Flags().Lookup(flag); f != nil && f.Changed {
		return setting{v: f.Value.String()}
	}
	if envKey != "" {
		if v := s.env(envKey); v != "" {
			return setting{v: v, from: envKey}
		}
	}
	if fileVal != "" {
		return setting{v: fileVal, from: "orch.yaml " + fileKey}
	}
	if f := cmd.Flags().Lookup(flag); f != nil && f.Value.String() != "" {
		return setting{v: f.Value.String()}
	}
	return setting{v: def}
}

// str returns flag name if set, else env key, else the orch.yaml value, else def.
func (s *settings) str(cmd *cobra.Command, flag, envKey, fileVal, def string) string {
	return s.lookup(cmd, flag, envKey, "", fileVal, def).v
}

// atLeast resolves a whole number that must be min or more: zero and negative values are refused wherever they come
// from (a 0 in orch.yaml included: fileVal is nil only when the file does not set it).
func (s *settings) atLeast(cmd *cobra.Command, flag, envKey, fileKey string, fileVal *int, def, min int) (int, error) {
	fv := ""
	if fileVal != nil {
		fv = strconv.Itoa(*fileVal)
	}
	v := s.lookup(cmd, flag, envKey, fileKey, fv, strconv.Itoa(def))
	n, err := strconv.Atoi(strings.TrimSpace(v.v))
	if err != nil {
		return 0, usageErr("--%s: %q is not a number%s", flag, safetext.OneLine(v.v, 40), v.suffix())
	}
	if n < min {
		return 0, usageErr("--%s must be at least %d, got %d%s", flag, min, n, v.suffix())
	}
	return n, nil
}

func (s *settings) duration(cmd *cobra.Command, flag, envKey, fileKey, fileVal string, def time.Duration) (time.Duration, error) {
	v := s.lookup(cmd, flag, envKey, fileKey, fileVal, def.String())
	d, err := time.ParseDuration(strings.TrimSpace(v.v))
	if err != nil || d <= 0 {
		return 0, usageErr("--%s: %q is not a positive duration (e.g. 30m)%s", flag, safetext.OneLine(v.v, 40), v.suffix())
	}
	return d, nil
}

// absDir resolves dir and checks that it is a directory.
func absDir(dir, what string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", usageErr("%s %s: %v", what, dir, err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return "", usageErr("%s %s: %v", what, dir, err)
	}
	if !st.IsDir() {
		return "", usageErr("%s %s: not a directory", what, dir)
	}
	return abs, nil
}

func describeRedis(url, stateDir string) string {
	if url != "" {
		return "redis " + redactURL(url)
	}
	return fmt.Sprintf("embedded store in %s", stateDir)
}

// checkEnvironment checks the settings every command shares, before the command reads or writes anything: the URLs
// orch is given (Redis, the repository, the web services it calls) and the address it serves on. A URL that does
// not parse is named, with its credentials hidden, and exits 2.
func (a *app) checkEnvironment(cmd *cobra.Command) error {
	for _, check := range []func(*cobra.Command) error{a.checkCredentials, a.checkRedisURL, a.checkServiceURLs,
		a.checkHeaders, a.checkGitURLs, a.checkAgentPass, a.checkHTTPAddr} {
		if err := check(cmd); err != nil {
			return err
		}
	}
	return nil
}

// checkCredentials refuses a credential pasted with its line break or a space around it, which would fail much
// later, at the first call that sends it (a pull request at the end of a run), without echoing it.
func (a *app) checkCredentials(*cobra.Command) error {
	for _, k := range secretEnv {
		if v := a.env(k); v != "" && strings.IndexFunc(v, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
			return usageErr("%s holds a space, a tab or a line break: set it to the credential alone", k)
		}
	}
	return nil
}

func (a *app) checkRedisURL(cmd *cobra.Command) error {
	s := a.set
	if v := s.lookup(cmd, "redis", "ORCH_REDIS_URL", "redis", s.file.Redis, ""); v.v != "" {
		if _, err := store.ParseRedisURL(v.v); err != nil {
			return usageErr("%s: %s is not a Redis URL (%s): want redis://HOST:PORT[/DB] or rediss://…, or redis+sentinel://HOST:PORT[,HOST:PORT…]/MASTER[/DB] for a primary that Redis Sentinel elects, with USER:PASSWORD@ before the hosts when it needs them",
				settingName(v, "--redis"), safetext.OneLine(redactURL(v.v), 200), a.secrets.scrub(urlErrorDetail(err)))
		}
	}
	return nil
}

// checkServiceURLs checks the URLs of the web services orch calls or is reached at.
func (a *app) checkServiceURLs(*cobra.Command) error {
	for _, k := range []string{"SLACK_API_URL", "ORCH_GITHUB_API_URL", "ORCH_NOTIFY_WEBHOOK", "OTEL_EXPORTER_OTLP_ENDPOINT",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "ORCH_PUBLIC_URL"} {
		if err := a.checkHTTPURL(k, a.env(k)); err != nil {
			return err
		}
	}
	return nil
}

// checkHeaders checks the exporter's headers: it logs a header it cannot read, value and all, so orch refuses it
// first, and shows no value.
func (a *app) checkHeaders(*cobra.Command) error {
	for _, k := range headerEnv {
		v := a.env(k)
		if v == "" {
			continue
		}
		for i, pair := range strings.Split(v, ",") {
			name, val, ok := strings.Cut(pair, "=")
			name = strings.TrimSpace(name)
			if !ok || name == "" || strings.ContainsFunc(name, func(r rune) bool { return r <= ' ' || strings.ContainsRune(":()<>@,;\\\"/[]?={}", r) }) {
				return usageErr("%s: header %d is not NAME=VALUE (its text is not shown: it may hold a credential)", k, i+1)
			}
			if _, err := url.PathUnescape(val); err != nil {
				return usageErr("%s: the value of header %s has a %% that is not followed by two hex digits (escape it as %%25)", k, name)
			}
		}
	}
	return nil
}

// checkGitURLs checks the repository and the push remote where they are URLs: a remote's name, a path and scp-like
// user@host:path are not, and what says it is one must parse.
func (a *app) checkGitURLs(cmd *cobra.Command) error {
	s := a.set
	repo := s.lookup(cmd, "repo", "ORCH_REPO", "git.repo", s.file.Git.Repo, "")
	push := s.lookup(cmd, "", "ORCH_GIT_PUSH", "git.push", s.file.Git.Push, "")
	for _, g := range []struct {
		v    setting
		flag string
	}{{repo, "--repo"}, {push, "ORCH_GIT_PUSH"}} {
		if !strings.Contains(g.v.v, "://") {
			continue
		}
		if u, err := url.Parse(strings.TrimSpace(g.v.v)); err != nil || (u.Host == "" && u.Scheme != "file") {
			detail := "no host"
			if err != nil {
				detail = a.secrets.scrub(urlErrorDetail(err))
			}
			return usageErr("%s: %s is not a git URL (%s)", settingName(g.v, g.flag), safetext.OneLine(redactURL(g.v.v), 200), detail)
		}
	}
	return nil
}

func (a *app) checkAgentPass(cmd *cobra.Command) error {
	_, err := a.agentPass(cmd)
	return err
}

func (a *app) checkHTTPAddr(*cobra.Command) error {
	if v := a.env("ORCH_HTTP_ADDR"); v != "" {
		_, port, err := net.SplitHostPort(v)
		if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 0 || n > 65535 {
			return usageErr("ORCH_HTTP_ADDR: %q: want HOST:PORT or :PORT, e.g. :3000", safetext.OneLine(v, 80))
		}
	}
	return nil
}

// checkHTTPURL checks a setting that holds an http(s) URL, when it is set.
func (a *app) checkHTTPURL(name, v string) error {
	if v == "" {
		return nil
	}
	// A webhook's URL is its credential, path and all: it is named, never shown.
	shown := " " + safetext.OneLine(redactURL(v), 200)
	if name == "ORCH_NOTIFY_WEBHOOK" {
		shown = ""
	}
	u, err := url.Parse(strings.TrimSpace(v))
	switch {
	case err != nil:
		return usageErr("%s:%s is not a URL (%s)", name, shown, a.secrets.scrub(urlErrorDetail(err)))
	case u.Scheme != "http" && u.Scheme != "https", u.Host == "":
		return usageErr("%s:%s is not a URL: want http(s)://HOST/…", name, shown)
	}
	return nil
}

// settingName names where a setting came from for an error: its env variable or orch.yaml key, else the flag.
func settingName(v setting, flag string) string {
	if v.from != "" {
		return v.from
	}
	return flag
}
