package check

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// promConfig is the part of Prometheus's configuration format deploy/prometheus.yml uses. Decoding is strict: a field
// this struct does not know is an error, so a misspelled key fails here instead of being ignored by a test.
type promConfig struct {
	Global struct {
		ScrapeInterval     string `yaml:"scrape_interval"`
		EvaluationInterval string `yaml:"evaluation_interval"`
	} `yaml:"global"`
	ScrapeConfigs []promScrape `yaml:"scrape_configs"`
}

type promScrape struct {
	JobName        string `yaml:"job_name"`
	MetricsPath    string `yaml:"metrics_path"`
	ScrapeInterval string `yaml:"scrape_interval"`
	StaticConfigs  []struct {
		Targets []string          `yaml:"targets"`
		Labels  map[string]string `yaml:"labels"`
	} `yaml:"static_configs"`
	DNSSDConfigs []struct {
		Names           []string `yaml:"names"`
		Type            string   `yaml:"type"`
		Port            int      `yaml:"port"`
		RefreshInterval string   `yaml:"refresh_interval"`
	} `yaml:"dns_sd_configs"`
}

func parsePromConfig(data []byte) (*promConfig, error) {
	var c promConfig
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		return nil, err
	}
	return &c, nil
}

func loadPromConfig(t *testing.T) *promConfig {
	t.Helper()
	path := filepath.Join(deployDir, "prometheus.yml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := parsePromConfig(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return c
}

func (c *promConfig) job(t *testing.T, name string) promScrape {
	t.Helper()
	for _, s := range c.ScrapeConfigs {
		if s.JobName == name {
			return s
		}
	}
	t.Fatalf("prometheus.yml has no job %q", name)
	return promScrape{}
}

func TestPrometheusConfig(t *testing.T) {
	c := loadPromConfig(t)
	for _, d := range []string{c.Global.ScrapeInterval, c.Global.EvaluationInterval} {
		if _, err := time.ParseDuration(d); err != nil {
			t.Errorf("prometheus.yml global: %q is not a duration", d)
		}
	}
	seen := map[string]bool{}
	for _, s := range c.ScrapeConfigs {
		if s.JobName == "" || seen[s.JobName] {
			t.Errorf("prometheus.yml: job name %q empty or repeated", s.JobName)
		}
		seen[s.JobName] = true
		if s.MetricsPath != "/metrics" {
			t.Errorf("job %s scrapes %q; orch serves /metrics", s.JobName, s.MetricsPath)
		}
		if len(s.StaticConfigs)+len(s.DNSSDConfigs) == 0 {
			t.Errorf("job %s has no targets", s.JobName)
		}
		for _, sc := range s.StaticConfigs {
			for _, target := range sc.Targets {
				if host, port, ok := strings.Cut(target, ":"); !ok || host == "" || port == "" {
					t.Errorf("job %s: target %q is not host:port", s.JobName, target)
				}
			}
		}
		for _, d := range s.DNSSDConfigs {
			if d.Type != "A" && d.Type != "AAAA" && d.Type != "SRV" {
				t.Errorf("job %s: dns_sd type %q", s.JobName, d.Type)
			}
			if d.Type != "SRV" && (d.Port <= 0 || d.Port > 65535) {
				t.Errorf("job %s: an %s lookup needs the port", s.JobName, d.Type)
			}
			if _, err := time.ParseDuration(d.RefreshInterval); d.RefreshInterval != "" && err != nil {
				t.Errorf("job %s: refresh_interval %q", s.JobName, d.RefreshInterval)
			}
		}
	}
	// What the compose checks rely on: the two jobs exist (their targets are checked against compose.yaml there).
	c.job(t, "orch-bot")
	c.job(t, "orch-worker")
}

func TestPrometheusConfigRejectsUnknownFields(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(deployDir, "prometheus.yml"))
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Replace(data, []byte("dns_sd_configs:"), []byte("dns_sd_config:"), 1)
	if bytes.Equal(bad, data) {
		t.Fatal("prometheus.yml has no dns_sd_configs to misspell")
	}
	if _, err := parsePromConfig(bad); err == nil {
		t.Fatal("a misspelled key in prometheus.yml decoded without error: the check would not catch it")
	}
}
