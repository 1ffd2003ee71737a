package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/orchrun/orch/agent"
	"github.com/orchrun/orch/jobs"
)

// escalationPolicy resolves how questions behave: orch.yaml's escalation section, with flags and env over it.
func (a *app) escalationPolicy(cmd *cobra.Command) (jobs.EscalationPolicy, error) {
	fc := a.set.file.Escalation
	p := jobs.EscalationPolicy{TimeoutDefault: fc.TimeoutDefault, Reminders: fc.Reminders, Fallback: fc.Fallback,
		Triggers: fc.Triggers}
	var err error
	if p.MaxPerTask, err = a.set.int(cmd, "max-escalations", "ORCH_MAX_ESCALATIONS", fc.MaxPerTask, 5); err != nil {
		return p, err
	}
	if p.MaxPerTask < 1 {
		return p, usageErr("--max-escalations must be at least 1, got %d", p.MaxPerTask)
	}
	if v := a.set.str(cmd, "escalation-timeout", "ORCH_ESCALATION_TIMEOUT", fc.Timeout, "0"); v != "0" && v != "" {
		if p.Timeout, err = time.ParseDuration(v); err != nil || p.Timeout < 0 {
			return p, usageErr("--escalation-timeout: %q is not a duration (e.g. 1h; 0 waits forever)", v)
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
	SimilarityThreshold float64   `yaml:"similarity_threshold"`
	Sandbox             string    `yaml:"sandbox"`
	Image               string    `yaml:"image"`
	Redis               string    `yaml:"redis"`
	StateDir            string    `yaml:"state_dir"`
	Workspace           string    `yaml:"workspace"`
	MaxAttempts         int       `yaml:"max_attempts"`
	AgentTimeout        string    `yaml:"agent_timeout"`
	Concurrency         int       `yaml:"concurrency"`
	Git                 gitConfig `yaml:"git"`
	// History says what is kept of the runs that are over.
	History struct {
		Keep keepSetting `yaml:"keep"`
	} `yaml:"history"`
	// Permissions adds to the sandbox's default permission policy for the claude agent (or replaces it, defaults:
	// false).
	Permissions *permissionsConfig `yaml:"permissions"`
	Escalation  struct {
		MaxPerTask     int                  `yaml:"max_per_task"`
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
		return toPermissions(base), nil
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

// str returns flag name if set, else env key, else the orch.yaml value, else def.
func (s *settings) str(cmd *cobra.Command, flag, envKey, fileVal, def string) string {
	if f := cmd.Flags().Lookup(flag); f != nil && f.Changed {
		return f.Value.String()
	}
	if envKey != "" {
		if v := s.env(envKey); v != "" {
			return v
		}
	}
	if fileVal != "" {
		return fileVal
	}
	if f := cmd.Flags().Lookup(flag); f != nil && f.Value.String() != "" {
		return f.Value.String()
	}
	return def
}

func (s *settings) int(cmd *cobra.Command, flag, envKey string, fileVal, def int) (int, error) {
	fv := ""
	if fileVal != 0 {
		fv = strconv.Itoa(fileVal)
	}
	v := s.str(cmd, flag, envKey, fv, strconv.Itoa(def))
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return 0, usageErr("--%s: %q is not a number", flag, v)
	}
	return n, nil
}

func (s *settings) duration(cmd *cobra.Command, flag, envKey, fileVal string, def time.Duration) (time.Duration, error) {
	v := s.str(cmd, flag, envKey, fileVal, def.String())
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil || d <= 0 {
		return 0, usageErr("--%s: %q is not a positive duration (e.g. 30m)", flag, v)
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

// redactURL hides a password in a Redis URL.
func redactURL(u string) string {
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok {
		return u
	}
	userinfo, host, ok := strings.Cut(rest, "@")
	if !ok {
		return u
	}
	user, _, hasPass := strings.Cut(userinfo, ":")
	if !hasPass {
		return u
	}
	return scheme + "://" + user + ":***@" + host
}
