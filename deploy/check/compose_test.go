package check

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
)

// dockerGID stands in for the host's docker group, and redisPassword for Redis's password, which orch.env.example
// leaves for the operator to fill in.
const (
	dockerGID     = "999"
	redisPassword = "check-redis-password"
)

// composeFiles are what deploy/compose.yaml refers to, copied beside it for a load.
var composeFiles = []string{"compose.yaml", "redis.conf", "prometheus.yml"}

// loadCompose loads compose.yaml (as mutated by edit, when not nil) the way
// `docker compose --env-file deploy/orch.env -f deploy/compose.yaml` does, with orch.env a copy of orch.env.example
// and DOCKER_GID filled in: interpolation, schema validation, normalization, env_file resolution.
func loadCompose(t *testing.T, edit func([]byte) []byte, env map[string]string) (*types.Project, error) {
	t.Helper()
	dir := t.TempDir()
	for _, f := range composeFiles {
		data, err := os.ReadFile(filepath.Join(deployDir, f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "compose.yaml" && edit != nil {
			data = edit(data)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	example, err := os.ReadFile(filepath.Join(deployDir, "orch.env.example"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "orch.env"), example, 0o600); err != nil {
		t.Fatal(err)
	}
	details := types.ConfigDetails{
		WorkingDir:  dir,
		ConfigFiles: []types.ConfigFile{{Filename: filepath.Join(dir, "compose.yaml")}},
		Environment: env,
	}
	return loader.LoadWithContext(context.Background(), details)
}

// composeEnv is the interpolation environment: orch.env.example's values plus DOCKER_GID.
func composeEnv(t *testing.T) map[string]string {
	env := map[string]string{}
	for k, v := range loadEnvExample(t).values {
		env[k] = v
	}
	env["DOCKER_GID"] = dockerGID
	env["ORCH_REDIS_PASSWORD"] = redisPassword
	return env
}

func mustLoadCompose(t *testing.T) (*types.Project, map[string]string) {
	t.Helper()
	env := composeEnv(t)
	p, err := loadCompose(t, nil, env)
	if err != nil {
		t.Fatalf("deploy/compose.yaml: %v", err)
	}
	return p, env
}

func service(t *testing.T, p *types.Project, name string) types.ServiceConfig {
	t.Helper()
	s, err := p.GetService(name)
	if err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	return s
}

func envValue(s types.ServiceConfig, key string) (string, bool) {
	v, ok := s.Environment[key]
	if !ok || v == nil {
		return "", false
	}
	return *v, true
}

// volumeAt returns the service's volume mounted at target.
func volumeAt(t *testing.T, s types.ServiceConfig, target string) types.ServiceVolumeConfig {
	t.Helper()
	for _, v := range s.Volumes {
		if v.Target == target {
			return v
		}
	}
	t.Fatalf("service %s mounts nothing at %s", s.Name, target)
	return types.ServiceVolumeConfig{}
}

// samePathBind checks a bind mount whose source and target are both path: what the Docker sandbox needs for the
// workspace and the orch binary.
func samePathBind(t *testing.T, s types.ServiceConfig, path string, readOnly bool) {
	t.Helper()
	v := volumeAt(t, s, path)
	if v.Type != types.VolumeTypeBind || v.Source != path {
		t.Errorf("service %s: %s must be a bind mount of the same host path, got %s %s", s.Name, path, v.Type, v.Source)
	}
	if v.ReadOnly != readOnly {
		t.Errorf("service %s: %s read_only = %v, want %v", s.Name, path, v.ReadOnly, readOnly)
	}
	if v.Bind == nil || bool(v.Bind.CreateHostPath) {
		t.Errorf("service %s: %s must not be created when missing on the host (bind.create_host_path: false): an empty directory there hides the mistake", s.Name, path)
	}
}

func dependsOnHealthy(t *testing.T, s types.ServiceConfig, on string) {
	t.Helper()
	d, ok := s.DependsOn[on]
	if !ok || d.Condition != types.ServiceConditionHealthy {
		t.Errorf("service %s must depend on %s being healthy, got %+v", s.Name, on, d)
	}
}

func TestComposeServices(t *testing.T) {
	p, _ := mustLoadCompose(t)
	if p.Name != "orch" {
		t.Errorf("project name %q, want orch (orch.env.example names its default network orch_default)", p.Name)
	}
	want := []string{"bot", "prometheus", "redis", "worker"}
	if got := p.ServiceNames(); !slices.Equal(slices.Sorted(slices.Values(got)), want) {
		t.Errorf("services %v, want %v", got, want)
	}
	for name, s := range p.Services {
		if s.HealthCheck == nil || len(s.HealthCheck.Test) == 0 || s.HealthCheck.Disable {
			t.Errorf("service %s has no healthcheck", name)
		}
		if s.Restart == "" || s.Restart == "no" {
			t.Errorf("service %s is not restarted", name)
		}
	}
}

// redisSettings reads a redis.conf: directive -> value.
func redisSettings(t *testing.T, data []byte) map[string]string {
	t.Helper()
	settings := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, _ := strings.Cut(line, " ")
		settings[strings.ToLower(k)] = strings.TrimSpace(v)
	}
	return settings
}

// productionRedis are the settings DESIGN §7 asks of a production Redis.
var productionRedis = map[string]string{"appendonly": "yes", "appendfsync": "everysec", "maxmemory-policy": "noeviction"}

func TestComposeRedis(t *testing.T) {
	p, _ := mustLoadCompose(t)
	r := service(t, p, "redis")
	if !strings.HasPrefix(r.Image, "redis:7") {
		t.Errorf("redis image %q, want redis:7", r.Image)
	}
	if len(r.Command) < 2 || r.Command[0] != "redis-server" {
		t.Fatalf("redis command %v: want redis-server CONFIG [--option value]...", r.Command)
	}
	conf := volumeAt(t, r, r.Command[1])
	if conf.Type != types.VolumeTypeBind || filepath.Base(conf.Source) != "redis.conf" || !conf.ReadOnly {
		t.Errorf("redis: %s must be deploy/redis.conf mounted read-only, got %+v", r.Command[1], conf)
	}
	data, err := os.ReadFile(filepath.Join(deployDir, "redis.conf"))
	if err != nil {
		t.Fatal(err)
	}
	effective := redisSettings(t, data)
	// Options on the command line come after the file and win.
	args := r.Command[2:]
	if len(args)%2 != 0 {
		t.Fatalf("redis command options %v are not --name value pairs", args)
	}
	for i := 0; i < len(args); i += 2 {
		if !strings.HasPrefix(args[i], "--") {
			t.Fatalf("redis command option %q", args[i])
		}
		effective[strings.TrimPrefix(args[i], "--")] = args[i+1]
	}
	for k, want := range productionRedis {
		if effective[k] != want {
			t.Errorf("redis %s = %q, want %q", k, effective[k], want)
		}
	}
	// A password, always: orch.env's, which the bot and the workers read as well, and the healthcheck sends.
	if effective["requirepass"] != redisPassword {
		t.Errorf("redis requirepass = %q, want orch.env's ORCH_REDIS_PASSWORD", effective["requirepass"])
	}
	if v, _ := envValue(r, "REDISCLI_AUTH"); v != redisPassword {
		t.Errorf("redis REDISCLI_AUTH = %q: the healthcheck's redis-cli would not authenticate", v)
	}
	if effective["protected-mode"] != "yes" {
		t.Errorf("redis protected-mode = %q, want yes", effective["protected-mode"])
	}
	env := composeEnv(t)
	delete(env, "ORCH_REDIS_PASSWORD")
	if _, err := loadCompose(t, nil, env); err == nil || !strings.Contains(err.Error(), "ORCH_REDIS_PASSWORD") {
		t.Errorf("compose.yaml loads without ORCH_REDIS_PASSWORD (%v): Redis would start without a password", err)
	}
	dataDir := volumeAt(t, r, effective["dir"])
	if dataDir.Type != types.VolumeTypeVolume || p.Volumes[dataDir.Source].Name == "" {
		t.Errorf("redis data dir %q must be a named volume declared under volumes:, got %+v", effective["dir"], dataDir)
	}
	if len(r.Ports) != 0 {
		t.Errorf("redis publishes %v: only orch should reach it", r.Ports)
	}
	if !slices.Contains(r.HealthCheck.Test, "redis-cli") || !slices.Contains(r.HealthCheck.Test, "ping") {
		t.Errorf("redis healthcheck %v: want redis-cli ping", r.HealthCheck.Test)
	}
}

// orchCommon checks what the bot and the workers share.
func orchCommon(t *testing.T, p *types.Project, s types.ServiceConfig, read map[string]bool) {
	t.Helper()
	vars := composeVars(t)
	if !s.ReadOnly || !slices.Contains(s.CapDrop, "ALL") || !slices.Contains(s.SecurityOpt, "no-new-privileges:true") {
		t.Errorf("service %s: want read_only, cap_drop ALL and no-new-privileges, got %v %v %v", s.Name, s.ReadOnly, s.CapDrop, s.SecurityOpt)
	}
	if len(s.EnvFiles) != 1 || filepath.Base(s.EnvFiles[0].Path) != "orch.env" {
		t.Errorf("service %s: env_file %+v, want orch.env", s.Name, s.EnvFiles)
	}
	for k := range s.Environment {
		if !read[k] && !vars[k] {
			t.Errorf("service %s sets %s, which orch does not read", s.Name, k)
		}
	}
	url, _ := envValue(s, "ORCH_REDIS_URL")
	hostPort, ok := strings.CutPrefix(url, "redis://")
	host, port, _ := strings.Cut(strings.SplitN(hostPort, "/", 2)[0], ":")
	if !ok || port != "6379" {
		t.Errorf("service %s: ORCH_REDIS_URL %q, want redis://redis:6379/0", s.Name, url)
	} else if _, err := p.GetService(host); err != nil {
		t.Errorf("service %s: ORCH_REDIS_URL names %s, which is not a service", s.Name, host)
	}
	dependsOnHealthy(t, s, "redis")
	// env_file was resolved: its variables are in the environment.
	if _, ok := s.Environment["ORCH_AGENT"]; !ok {
		t.Errorf("service %s: orch.env's variables are not in its environment", s.Name)
	}
}

func TestComposeBot(t *testing.T) {
	p, env := mustLoadCompose(t)
	read := orchEnv(t)
	bot := service(t, p, "bot")
	orchCommon(t, p, bot, read)
	if !slices.Equal(bot.Command, []string{"bot"}) || len(bot.Entrypoint) != 0 {
		t.Errorf("bot runs %v %v, want the image's /orch with [bot]", bot.Entrypoint, bot.Command)
	}
	addr, _ := envValue(bot, "ORCH_HTTP_ADDR")
	port := addrPort(t, addr)
	if len(bot.Ports) != 1 || strconv.Itoa(int(bot.Ports[0].Target)) != port {
		t.Errorf("bot publishes %+v; it listens on %s", bot.Ports, port)
	}
	samePathBind(t, bot, env["ORCH_WORKSPACE"], true)
	if hc := bot.HealthCheck.Test; len(hc) < 3 || hc[0] != "CMD" || hc[1] != "/orch" || hc[2] != "health" {
		t.Errorf("bot healthcheck %v, want [CMD /orch health ...]", hc)
	}
}

func TestComposeWorkers(t *testing.T) {
	p, env := mustLoadCompose(t)
	read := orchEnv(t)
	w := service(t, p, "worker")
	orchCommon(t, p, w, read)
	bot := service(t, p, "bot")
	if w.Image != bot.Image {
		t.Errorf("worker image %q differs from the bot's %q", w.Image, bot.Image)
	}
	if w.Deploy == nil || w.Deploy.Replicas == nil || *w.Deploy.Replicas != 2 {
		t.Errorf("worker deploy.replicas: want 2, got %+v", w.Deploy)
	}
	if len(w.Ports) != 0 {
		t.Errorf("worker publishes %v: replicas would fight over the host port", w.Ports)
	}
	if v, _ := envValue(w, "ORCH_SANDBOX"); v != "docker" {
		t.Errorf("worker ORCH_SANDBOX = %q, want docker", v)
	}
	for _, s := range []string{"SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_APP_TOKEN"} {
		if v, ok := envValue(w, s); !ok || v != "" {
			t.Errorf("worker %s must be set empty (workers do not talk to Slack), got %q %v", s, v, ok)
		}
	}
	sock := volumeAt(t, w, "/var/run/docker.sock")
	if sock.Type != types.VolumeTypeBind || sock.Source != "/var/run/docker.sock" {
		t.Errorf("worker: the Docker socket must be bind-mounted from the host, got %+v", sock)
	}
	if !slices.Contains(w.GroupAdd, dockerGID) {
		t.Errorf("worker group_add %v lacks DOCKER_GID (%s): a non-root worker cannot use the socket", w.GroupAdd, dockerGID)
	}
	samePathBind(t, w, env["ORCH_WORKSPACE"], false)
	bin := env["ORCH_BINARY"]
	if !filepath.IsAbs(bin) {
		t.Fatalf("ORCH_BINARY %q is not an absolute path", bin)
	}
	samePathBind(t, w, bin, true)
	if !slices.Equal(w.Entrypoint, []string{bin}) || !slices.Equal(w.Command, []string{"worker"}) {
		t.Errorf("worker runs %v %v, want [%s] [worker]", w.Entrypoint, w.Command, bin)
	}
	if hc := w.HealthCheck.Test; len(hc) < 3 || hc[0] != "CMD" || hc[1] != bin || hc[2] != "health" {
		t.Errorf("worker healthcheck %v, want [CMD %s health ...]", hc, bin)
	}
	// The workspace in orch.env (what orch reads) is the path mounted (what compose interpolates).
	if v, _ := envValue(w, "ORCH_WORKSPACE"); v != env["ORCH_WORKSPACE"] {
		t.Errorf("worker ORCH_WORKSPACE = %q, mounted %q", v, env["ORCH_WORKSPACE"])
	}
}

func TestComposePrometheus(t *testing.T) {
	p, _ := mustLoadCompose(t)
	prom := service(t, p, "prometheus")
	var configPath string
	for _, a := range prom.Command {
		if v, ok := strings.CutPrefix(a, "--config.file="); ok {
			configPath = v
		}
	}
	if configPath == "" {
		t.Fatalf("prometheus command %v has no --config.file", prom.Command)
	}
	if v := volumeAt(t, prom, configPath); v.Type != types.VolumeTypeBind || filepath.Base(v.Source) != "prometheus.yml" {
		t.Errorf("prometheus: %s must be deploy/prometheus.yml, got %+v", configPath, v)
	}
	c := loadPromConfig(t)
	bot := service(t, p, "bot")
	botAddr, _ := envValue(bot, "ORCH_HTTP_ADDR")
	botJob := c.job(t, "orch-bot")
	if len(botJob.StaticConfigs) != 1 || !slices.Equal(botJob.StaticConfigs[0].Targets, []string{"bot:" + addrPort(t, botAddr)}) {
		t.Errorf("job orch-bot targets %+v, want [bot:%s]", botJob.StaticConfigs, addrPort(t, botAddr))
	}
	w := service(t, p, "worker")
	wAddr, _ := envValue(w, "ORCH_HTTP_ADDR")
	wJob := c.job(t, "orch-worker")
	if len(wJob.DNSSDConfigs) != 1 {
		t.Fatalf("job orch-worker: want one dns_sd_configs entry (every replica of the worker service), got %+v", wJob)
	}
	d := wJob.DNSSDConfigs[0]
	if !slices.Equal(d.Names, []string{w.Name}) || d.Type != "A" || strconv.Itoa(d.Port) != addrPort(t, wAddr) {
		t.Errorf("job orch-worker: dns_sd %+v, want names [%s], type A, port %s", d, w.Name, addrPort(t, wAddr))
	}
}

// The checks above are only worth something if the loader refuses what docker compose refuses.
func TestComposeRejectsMistakes(t *testing.T) {
	env := composeEnv(t)
	cases := map[string]func([]byte) []byte{
		"misspelled field": func(b []byte) []byte { return bytes.Replace(b, []byte("healthcheck:"), []byte("healtcheck:"), 1) },
		"wrong type":       func(b []byte) []byte { return bytes.Replace(b, []byte("replicas: 2"), []byte("replicas: two"), 1) },
		"unknown condition": func(b []byte) []byte {
			return bytes.Replace(b, []byte("condition: service_healthy"), []byte("condition: service_happy"), 1)
		},
	}
	for name, edit := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := loadCompose(t, edit, env); err == nil {
				t.Error("compose.yaml with the mistake loaded without error")
			}
		})
	}
	t.Run("DOCKER_GID unset", func(t *testing.T) {
		env := composeEnv(t)
		delete(env, "DOCKER_GID")
		if _, err := loadCompose(t, nil, env); err == nil || !strings.Contains(err.Error(), "DOCKER_GID") {
			t.Errorf("compose.yaml without DOCKER_GID: want an error naming it, got %v", err)
		}
	})
}
