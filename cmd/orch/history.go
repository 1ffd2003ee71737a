package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/orchrun/orch/jobs/store"
)

// keepSetting is orch.yaml's history.keep: how many finished runs history keeps, and for how long. It is written as a
// count (`keep: 1000`), an age (`keep: 90d`), both (`keep: 1000, 90d`) or a mapping (`keep: {count: 1000, age: 90d}`).
type keepSetting struct {
	store.Keep
	set bool
}

func (k *keepSetting) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.MappingNode {
		var m struct {
			Count int    `yaml:"count"`
			Age   string `yaml:"age"`
		}
		if err := n.Decode(&m); err != nil {
			return fmt.Errorf("history.keep: want {count: N, age: 90d}: %v", err)
		}
		spec := strings.TrimSpace(fmt.Sprintf("%d, %s", m.Count, m.Age))
		if m.Count == 0 {
			spec = m.Age
		}
		return k.parse(spec)
	}
	var s string
	if err := n.Decode(&s); err != nil {
		return fmt.Errorf("history.keep: want a count, an age or both, got %s", n.Value)
	}
	return k.parse(s)
}

func (k *keepSetting) parse(spec string) error {
	keep, err := parseKeep(spec)
	if err != nil {
		return err
	}
	k.Keep, k.set = keep, true
	return nil
}

// parseKeep reads "1000", "90d", "1000, 90d" or "all".
func parseKeep(spec string) (store.Keep, error) {
	var k store.Keep
	spec = strings.TrimSpace(spec)
	if spec == "" || spec == "all" {
		return k, nil
	}
	for part := range strings.FieldsFuncSeq(spec, func(r rune) bool { return r == ',' || r == ' ' }) {
		if n, err := strconv.Atoi(part); err == nil {
			if n < 1 || k.Count > 0 {
				return k, fmt.Errorf("history.keep %q: the count must be one number of at least 1 (or \"all\")", spec)
			}
			k.Count = n
			continue
		}
		age, err := parseAge(part)
		if err != nil || age <= 0 || k.Age > 0 {
			return k, fmt.Errorf("history.keep %q: %q is neither a count (1000) nor an age (90d, 12h)", spec, part)
		}
		k.Age = age
	}
	return k, nil
}

// parseAge reads a duration, with days ("90d") besides Go's units.
func parseAge(s string) (time.Duration, error) {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err != nil {
			return 0, err
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	return time.ParseDuration(s)
}

// historyKeep is what history keeps: the flag named (--keep of `orch history --prune`, for that prune alone; "" for
// what pruning by itself keeps), else ORCH_HISTORY_KEEP, else orch.yaml's history.keep; everything by default.
func (a *app) historyKeep(cmd *cobra.Command, flag string) (store.Keep, error) {
	spec := a.set.str(cmd, flag, "ORCH_HISTORY_KEEP", "", "")
	if spec == "" {
		return a.set.file.History.Keep.Keep, nil
	}
	k, err := parseKeep(spec)
	if err != nil {
		return k, usageErr("%v", err)
	}
	return k, nil
}
