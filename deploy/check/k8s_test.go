package check

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	ktypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

var k8sDir = filepath.Join(deployDir, "k8s")

const namespace = "orch"

// decodeStrict decodes one manifest into its typed Kubernetes object: a field the type does not have, a duplicate
// key or a value of the wrong type is an error (sigs.k8s.io/yaml: YAML to JSON, then a decoder that disallows
// unknown fields). Only the kinds deploy/k8s is meant to hold are accepted.
func decodeStrict(data []byte) (metav1.Object, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(data, &tm); err != nil {
		return nil, err
	}
	var obj metav1.Object
	switch tm.GroupVersionKind() {
	case corev1.SchemeGroupVersion.WithKind("Namespace"):
		obj = &corev1.Namespace{}
	case corev1.SchemeGroupVersion.WithKind("ConfigMap"):
		obj = &corev1.ConfigMap{}
	case corev1.SchemeGroupVersion.WithKind("Secret"):
		obj = &corev1.Secret{}
	case corev1.SchemeGroupVersion.WithKind("Service"):
		obj = &corev1.Service{}
	case appsv1.SchemeGroupVersion.WithKind("Deployment"):
		obj = &appsv1.Deployment{}
	case appsv1.SchemeGroupVersion.WithKind("StatefulSet"):
		obj = &appsv1.StatefulSet{}
	case networkingv1.SchemeGroupVersion.WithKind("NetworkPolicy"):
		obj = &networkingv1.NetworkPolicy{}
	default:
		return nil, fmt.Errorf("unexpected apiVersion %q kind %q", tm.APIVersion, tm.Kind)
	}
	if err := yaml.UnmarshalStrict(data, obj); err != nil {
		return nil, fmt.Errorf("%s: %w", tm.Kind, err)
	}
	if obj.GetName() == "" {
		return nil, fmt.Errorf("%s without a name", tm.Kind)
	}
	return obj, nil
}

// documents splits a YAML stream into its non-empty documents.
func documents(data []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(stripComments(doc))) > 0 {
			docs = append(docs, doc)
		}
	}
}

func stripComments(doc []byte) []byte {
	var out []byte
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out = append(append(out, line...), '\n')
		}
	}
	return out
}

func loadKustomization(t *testing.T) ktypes.Kustomization {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(k8sDir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k ktypes.Kustomization
	if err := yaml.UnmarshalStrict(data, &k); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	return k
}

// TestK8sFilesDecodeStrictly decodes every manifest file as it is on disk, so an error names its file.
func TestK8sFilesDecodeStrictly(t *testing.T) {
	k := loadKustomization(t)
	files, err := filepath.Glob(filepath.Join(k8sDir, "*.y*ml"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, r := range k.Resources {
		listed[r] = true
	}
	for _, f := range files {
		name := filepath.Base(f)
		if name == "kustomization.yaml" {
			continue
		}
		if !listed[name] {
			t.Errorf("%s is not among kustomization.yaml's resources: kubectl apply -k would leave it out", name)
		}
		delete(listed, name)
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs, err := documents(data)
		if err != nil || len(docs) == 0 {
			t.Errorf("%s: no manifest (%v)", name, err)
			continue
		}
		for i, doc := range docs {
			if _, err := decodeStrict(doc); err != nil {
				t.Errorf("%s, document %d: %v", name, i+1, err)
			}
		}
	}
	for r := range listed {
		t.Errorf("kustomization.yaml lists %s, which is not a file in deploy/k8s", r)
	}
}

// cluster is what `kubectl apply -k deploy/k8s` would send, decoded.
type cluster struct {
	namespaces   map[string]*corev1.Namespace
	configMaps   map[string]*corev1.ConfigMap
	secrets      map[string]*corev1.Secret
	services     map[string]*corev1.Service
	deployments  map[string]*appsv1.Deployment
	statefulSets map[string]*appsv1.StatefulSet
	policies     map[string]*networkingv1.NetworkPolicy
	all          []metav1.Object
}

// build runs kustomize on deploy/k8s as kubectl does (the same library, in memory) and decodes every object strictly.
func build(t *testing.T) *cluster {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), k8sDir)
	if err != nil {
		t.Fatalf("kustomize build deploy/k8s: %v", err)
	}
	c := &cluster{
		namespaces: map[string]*corev1.Namespace{}, configMaps: map[string]*corev1.ConfigMap{},
		secrets: map[string]*corev1.Secret{}, services: map[string]*corev1.Service{},
		deployments: map[string]*appsv1.Deployment{}, statefulSets: map[string]*appsv1.StatefulSet{},
		policies: map[string]*networkingv1.NetworkPolicy{},
	}
	for _, r := range m.Resources() {
		data, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		obj, err := decodeStrict(data)
		if err != nil {
			t.Fatalf("built %s/%s: %v", r.GetKind(), r.GetName(), err)
		}
		c.all = append(c.all, obj)
		switch o := obj.(type) {
		case *corev1.Namespace:
			c.namespaces[o.Name] = o
		case *corev1.ConfigMap:
			c.configMaps[o.Name] = o
		case *corev1.Secret:
			c.secrets[o.Name] = o
		case *corev1.Service:
			c.services[o.Name] = o
		case *appsv1.Deployment:
			c.deployments[o.Name] = o
		case *appsv1.StatefulSet:
			c.statefulSets[o.Name] = o
		case *networkingv1.NetworkPolicy:
			c.policies[o.Name] = o
		}
	}
	return c
}

func get[T any](t *testing.T, m map[string]*T, kind, name string) *T {
	t.Helper()
	o, ok := m[name]
	if !ok {
		t.Fatalf("deploy/k8s has no %s %s", kind, name)
	}
	return o
}

func (c *cluster) config(t *testing.T) map[string]string {
	return get(t, c.configMaps, "ConfigMap", "orch-config").Data
}

func container(t *testing.T, spec *corev1.PodSpec, name string) *corev1.Container {
	t.Helper()
	for i := range spec.Containers {
		if spec.Containers[i].Name == name {
			return &spec.Containers[i]
		}
	}
	t.Fatalf("no container %s", name)
	return nil
}

// port resolves a probe's or Service's target port against the container's ports.
func port(t *testing.T, c *corev1.Container, p intstr.IntOrString) int32 {
	t.Helper()
	for _, cp := range c.Ports {
		if (p.Type == intstr.String && cp.Name == p.StrVal) || (p.Type == intstr.Int && cp.ContainerPort == p.IntVal) {
			return cp.ContainerPort
		}
	}
	t.Errorf("container %s has no port %s", c.Name, p.String())
	return 0
}

func selects(t *testing.T, sel *metav1.LabelSelector, podLabels map[string]string) bool {
	t.Helper()
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Fatal(err)
	}
	return !s.Empty() && s.Matches(labels.Set(podLabels))
}

func healthProbes(t *testing.T, c *corev1.Container, want int32) {
	t.Helper()
	for what, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		if p == nil || p.HTTPGet == nil {
			t.Errorf("container %s: no HTTP %s probe", c.Name, what)
			continue
		}
		if p.HTTPGet.Path != "/healthz" || port(t, c, p.HTTPGet.Port) != want {
			t.Errorf("container %s: %s probe GET %s on %s, want /healthz on %d", c.Name, what, p.HTTPGet.Path, p.HTTPGet.Port.String(), want)
		}
	}
}

func scrapeAnnotations(t *testing.T, name string, tmpl *corev1.PodTemplateSpec, port int32) {
	t.Helper()
	a := tmpl.Annotations
	if a["prometheus.io/scrape"] != "true" || a["prometheus.io/port"] != fmt.Sprint(port) || a["prometheus.io/path"] != "/metrics" {
		t.Errorf("%s: prometheus.io annotations %v, want scrape true, port %d, path /metrics", name, a, port)
	}
}

// samePathHostMount checks a hostPath volume mounted at its own path: what the Docker sandbox needs, because the
// engine resolves bind mounts on the node.
func samePathHostMount(t *testing.T, spec *corev1.PodSpec, c *corev1.Container, path string, readOnly bool) {
	t.Helper()
	for _, m := range c.VolumeMounts {
		if m.MountPath != path {
			continue
		}
		for _, v := range spec.Volumes {
			if v.Name == m.Name {
				if v.HostPath == nil || v.HostPath.Path != path {
					t.Errorf("container %s: %s must be the node's %s (hostPath), got %+v", c.Name, path, path, v.VolumeSource)
				}
				if m.ReadOnly != readOnly {
					t.Errorf("container %s: %s readOnly = %v, want %v", c.Name, path, m.ReadOnly, readOnly)
				}
				return
			}
		}
		t.Errorf("container %s mounts undeclared volume %s", c.Name, m.Name)
		return
	}
	t.Errorf("container %s mounts nothing at %s", c.Name, path)
}

func TestK8sObjects(t *testing.T) {
	c := build(t)
	get(t, c.namespaces, "Namespace", namespace)
	for _, o := range c.all {
		if _, isNS := o.(*corev1.Namespace); !isNS && o.GetNamespace() != namespace {
			t.Errorf("%s is in namespace %q, want %s", o.GetName(), o.GetNamespace(), namespace)
		}
	}
	read := orchEnv(t)
	cfg := c.config(t)
	for k := range cfg {
		if !read[k] {
			t.Errorf("ConfigMap orch-config sets %s, which orch does not read", k)
		}
		if slices.Contains(secretEnv, k) {
			t.Errorf("ConfigMap orch-config holds the secret %s: it belongs in the Secret", k)
		}
	}
	if cfg["ORCH_SANDBOX"] != "docker" {
		t.Errorf("ORCH_SANDBOX = %q, want docker", cfg["ORCH_SANDBOX"])
	}
	if !filepath.IsAbs(cfg["ORCH_WORKSPACE"]) {
		t.Errorf("ORCH_WORKSPACE %q is not an absolute path", cfg["ORCH_WORKSPACE"])
	}
	sec := get(t, c.secrets, "Secret", "orch-secrets")
	for _, s := range []string{"SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "ANTHROPIC_API_KEY"} {
		if _, ok := sec.StringData[s]; !ok {
			t.Errorf("Secret orch-secrets has no %s placeholder", s)
		}
	}
	for k, v := range sec.StringData {
		if !read[k] {
			t.Errorf("Secret orch-secrets sets %s, which orch does not read", k)
		}
		if v != "" {
			t.Errorf("Secret orch-secrets has a value for %s: the committed file holds empty placeholders only", k)
		}
	}
	for n, svc := range c.services {
		switch svc.Spec.Type {
		case "", corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeExternalName:
		default:
			t.Errorf("Service %s: type %q", n, svc.Spec.Type)
		}
		for _, p := range svc.Spec.Ports {
			checkProtocol(t, "Service "+n, p.Protocol)
		}
	}
	for n, d := range c.deployments {
		switch d.Spec.Strategy.Type {
		case "", appsv1.RecreateDeploymentStrategyType, appsv1.RollingUpdateDeploymentStrategyType:
		default:
			t.Errorf("Deployment %s: strategy %q", n, d.Spec.Strategy.Type)
		}
	}
	if len(sec.Data) != 0 {
		t.Errorf("Secret orch-secrets has data %v: the committed file holds empty placeholders only", sorted(keys(sec.Data)))
	}

	// Every workload: resources, a locked-down container, non-root, known environment.
	type workload struct {
		name string
		spec *corev1.PodTemplateSpec
		sel  *metav1.LabelSelector
	}
	var workloads []workload
	for n, d := range c.deployments {
		workloads = append(workloads, workload{"Deployment " + n, &d.Spec.Template, d.Spec.Selector})
	}
	for n, s := range c.statefulSets {
		workloads = append(workloads, workload{"StatefulSet " + n, &s.Spec.Template, s.Spec.Selector})
	}
	for _, w := range workloads {
		if !selects(t, w.sel, w.spec.Labels) {
			t.Errorf("%s: selector %v does not match its pods' labels %v", w.name, w.sel, w.spec.Labels)
		}
		pod := &w.spec.Spec
		if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
			t.Errorf("%s: automountServiceAccountToken should be false (nothing here talks to the API server)", w.name)
		}
		for _, ctr := range pod.Containers {
			checkContainer(t, w.name, pod, &ctr, c, read)
		}
	}
}

func keys[V any](m map[string]V) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}

// Strict decoding catches unknown fields and wrong types, not values; the API server validates those. These are the
// enumerations used here that a typo would break at apply time.
func checkEnums(t *testing.T, where string, pod *corev1.PodSpec, ctr *corev1.Container) {
	t.Helper()
	switch ctr.ImagePullPolicy {
	case "", corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	default:
		t.Errorf("%s/%s: imagePullPolicy %q", where, ctr.Name, ctr.ImagePullPolicy)
	}
	for _, p := range ctr.Ports {
		checkProtocol(t, where+"/"+ctr.Name, p.Protocol)
	}
	for _, v := range pod.Volumes {
		if v.HostPath != nil && v.HostPath.Type != nil {
			switch *v.HostPath.Type {
			case corev1.HostPathUnset, corev1.HostPathDirectoryOrCreate, corev1.HostPathDirectory, corev1.HostPathFileOrCreate,
				corev1.HostPathFile, corev1.HostPathSocket, corev1.HostPathCharDev, corev1.HostPathBlockDev:
			default:
				t.Errorf("%s: hostPath %s type %q", where, v.HostPath.Path, *v.HostPath.Type)
			}
		}
	}
}

func checkProtocol(t *testing.T, where string, p corev1.Protocol) {
	t.Helper()
	switch p {
	case "", corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
	default:
		t.Errorf("%s: protocol %q", where, p)
	}
}

func checkContainer(t *testing.T, where string, pod *corev1.PodSpec, ctr *corev1.Container, c *cluster, read map[string]bool) {
	t.Helper()
	checkEnums(t, where, pod, ctr)
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, okReq := ctr.Resources.Requests[r]
		lim, okLim := ctr.Resources.Limits[r]
		if !okReq || !okLim {
			t.Errorf("%s/%s: no %s request and limit", where, ctr.Name, r)
		} else if req.Cmp(lim) > 0 {
			t.Errorf("%s/%s: %s request %s above limit %s", where, ctr.Name, r, req.String(), lim.String())
		}
	}
	sc := ctr.SecurityContext
	if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) != 0 ||
		(sc.Privileged != nil && *sc.Privileged) {
		t.Errorf("%s/%s: want allowPrivilegeEscalation false, readOnlyRootFilesystem true, capabilities drop ALL, got %+v", where, ctr.Name, sc)
	}
	nonRoot, uid := false, int64(-1)
	if ps := pod.SecurityContext; ps != nil {
		nonRoot = ps.RunAsNonRoot != nil && *ps.RunAsNonRoot
		if ps.RunAsUser != nil {
			uid = *ps.RunAsUser
		}
	}
	if sc != nil && sc.RunAsNonRoot != nil {
		nonRoot = *sc.RunAsNonRoot
	}
	if sc != nil && sc.RunAsUser != nil {
		uid = *sc.RunAsUser
	}
	if !nonRoot || uid <= 0 {
		t.Errorf("%s/%s: want runAsNonRoot and a non-zero runAsUser, got %v %d", where, ctr.Name, nonRoot, uid)
	}
	for _, e := range ctr.Env {
		if strings.HasPrefix(e.Name, "ORCH_") || strings.HasPrefix(e.Name, "SLACK_") {
			if !read[e.Name] {
				t.Errorf("%s/%s sets %s, which orch does not read", where, ctr.Name, e.Name)
			}
		}
	}
	for _, ef := range ctr.EnvFrom {
		if ef.ConfigMapRef != nil {
			get(t, c.configMaps, "ConfigMap", ef.ConfigMapRef.Name)
		}
		if ef.SecretRef != nil {
			get(t, c.secrets, "Secret", ef.SecretRef.Name)
		}
	}
}

func TestK8sBot(t *testing.T) {
	c := build(t)
	cfg := c.config(t)
	d := get(t, c.deployments, "Deployment", "orch-bot")
	pod := &d.Spec.Template.Spec
	bot := container(t, pod, "bot")
	if len(bot.Command) != 0 || !slices.Equal(bot.Args, []string{"bot"}) {
		t.Errorf("bot runs %v %v, want the image's /orch with [bot]", bot.Command, bot.Args)
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 {
		t.Errorf("bot replicas %v, want 1", d.Spec.Replicas)
	}
	want := int32(atoi(t, addrPort(t, cfg["ORCH_HTTP_ADDR"])))
	if len(bot.Ports) != 1 || bot.Ports[0].ContainerPort != want {
		t.Errorf("bot ports %+v; ORCH_HTTP_ADDR says %d", bot.Ports, want)
	}
	healthProbes(t, bot, want)
	scrapeAnnotations(t, "bot", &d.Spec.Template, want)
	samePathHostMount(t, pod, bot, cfg["ORCH_WORKSPACE"], true)

	svc := get(t, c.services, "Service", "orch-bot")
	if !selects(t, &metav1.LabelSelector{MatchLabels: svc.Spec.Selector}, d.Spec.Template.Labels) {
		t.Errorf("Service orch-bot selector %v does not select the bot's pods %v", svc.Spec.Selector, d.Spec.Template.Labels)
	}
	if w, ok := c.deployments["orch-worker"]; ok && selects(t, &metav1.LabelSelector{MatchLabels: svc.Spec.Selector}, w.Spec.Template.Labels) {
		t.Errorf("Service orch-bot selector %v also selects the workers", svc.Spec.Selector)
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != want || port(t, bot, svc.Spec.Ports[0].TargetPort) != want {
		t.Errorf("Service orch-bot ports %+v, want %d to the bot's %d", svc.Spec.Ports, want, want)
	}
}

func TestK8sWorkers(t *testing.T) {
	c := build(t)
	cfg := c.config(t)
	d := get(t, c.deployments, "Deployment", "orch-worker")
	pod := &d.Spec.Template.Spec
	w := container(t, pod, "worker")
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("worker replicas %v, want 2", d.Spec.Replicas)
	}
	bot := container(t, &get(t, c.deployments, "Deployment", "orch-bot").Spec.Template.Spec, "bot")
	if w.Image != bot.Image {
		t.Errorf("worker image %q differs from the bot's %q", w.Image, bot.Image)
	}
	if len(w.Command) != 1 || !filepath.IsAbs(w.Command[0]) || !slices.Equal(w.Args, []string{"worker"}) {
		t.Fatalf("worker runs %v %v, want [NODE'S ORCH BINARY] [worker]", w.Command, w.Args)
	}
	samePathHostMount(t, pod, w, w.Command[0], true)
	samePathHostMount(t, pod, w, cfg["ORCH_WORKSPACE"], false)
	samePathHostMount(t, pod, w, "/var/run/docker.sock", false)
	for _, v := range pod.Volumes {
		if v.HostPath == nil {
			continue
		}
		want := map[string]corev1.HostPathType{
			"/var/run/docker.sock": corev1.HostPathSocket, cfg["ORCH_WORKSPACE"]: corev1.HostPathDirectory, w.Command[0]: corev1.HostPathFile,
		}[v.HostPath.Path]
		if v.HostPath.Type == nil || *v.HostPath.Type != want {
			t.Errorf("worker hostPath %s: type %v, want %s (a missing path must fail, not be created empty)", v.HostPath.Path, v.HostPath.Type, want)
		}
	}
	if pod.SecurityContext == nil || len(pod.SecurityContext.SupplementalGroups) == 0 {
		t.Error("worker: no supplementalGroups: a non-root worker cannot use the Docker socket")
	}
	blank := map[string]bool{}
	for _, e := range w.Env {
		if e.Value == "" && e.ValueFrom == nil {
			blank[e.Name] = true
		}
	}
	for _, s := range []string{"SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_APP_TOKEN"} {
		if !blank[s] {
			t.Errorf("worker: %s must be set empty (workers do not talk to Slack)", s)
		}
	}
	want := int32(atoi(t, addrPort(t, cfg["ORCH_HTTP_ADDR"])))
	healthProbes(t, w, want)
	scrapeAnnotations(t, "worker", &d.Spec.Template, want)
}

func TestK8sRedis(t *testing.T) {
	c := build(t)
	cfg := c.config(t)
	ss := get(t, c.statefulSets, "StatefulSet", "redis")
	svc := get(t, c.services, "Service", ss.Spec.ServiceName)
	if svc.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("Service %s must be headless (clusterIP: None), got %q", svc.Name, svc.Spec.ClusterIP)
	}
	if !selects(t, &metav1.LabelSelector{MatchLabels: svc.Spec.Selector}, ss.Spec.Template.Labels) {
		t.Errorf("Service %s does not select the Redis pods", svc.Name)
	}
	if ss.Spec.Replicas == nil || *ss.Spec.Replicas != 1 {
		t.Errorf("redis replicas %v, want 1 (the replicas would not be a cluster)", ss.Spec.Replicas)
	}
	r := container(t, &ss.Spec.Template.Spec, "redis")
	if !strings.HasPrefix(r.Image, "redis:7") {
		t.Errorf("redis image %q, want redis:7", r.Image)
	}
	args := append(slices.Clone(r.Command), r.Args...)
	if len(args) == 0 || args[0] != "redis-server" || len(args)%2 != 1 {
		t.Fatalf("redis runs %v: want redis-server --name value...", args)
	}
	settings := map[string]string{}
	for i := 1; i < len(args); i += 2 {
		settings[strings.TrimPrefix(args[i], "--")] = args[i+1]
	}
	for k, want := range productionRedis {
		if settings[k] != want {
			t.Errorf("redis %s = %q, want %q", k, settings[k], want)
		}
	}
	// A password, always: the Secret's ORCH_REDIS_PASSWORD, which the bot and the workers read as well (envFrom), and
	// the probes' redis-cli sends (REDISCLI_AUTH).
	if settings["requirepass"] != "$(REDISCLI_AUTH)" {
		t.Errorf("redis --requirepass %q, want $(REDISCLI_AUTH)", settings["requirepass"])
	}
	authed := false
	for _, e := range r.Env {
		if e.Name == "REDISCLI_AUTH" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil &&
			e.ValueFrom.SecretKeyRef.Name == "orch-secrets" && e.ValueFrom.SecretKeyRef.Key == "ORCH_REDIS_PASSWORD" {
			authed = true
		}
	}
	if !authed {
		t.Error("redis: REDISCLI_AUTH must come from the Secret orch-secrets, key ORCH_REDIS_PASSWORD")
	}
	// The same settings as deploy/redis.conf (compose's).
	conf, err := os.ReadFile(filepath.Join(deployDir, "redis.conf"))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range redisSettings(t, conf) {
		if settings[k] != v {
			t.Errorf("redis %s = %q here and %q in deploy/redis.conf", k, settings[k], v)
		}
	}
	dataMounted := false
	for _, m := range r.VolumeMounts {
		for _, pvc := range ss.Spec.VolumeClaimTemplates {
			if m.Name == pvc.Name && m.MountPath == settings["dir"] {
				dataMounted = true
				if _, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; !ok {
					t.Errorf("redis volume claim %s requests no storage", pvc.Name)
				}
			}
		}
	}
	if !dataMounted {
		t.Errorf("redis --dir %q is not a volume claim template's mount: the data would die with the pod", settings["dir"])
	}
	var redisPort int32
	for _, p := range svc.Spec.Ports {
		redisPort = port(t, r, p.TargetPort)
	}
	for what, p := range map[string]*corev1.Probe{"readiness": r.ReadinessProbe, "liveness": r.LivenessProbe} {
		if p == nil || p.Exec == nil || !slices.Equal(p.Exec.Command, []string{"redis-cli", "ping"}) {
			t.Errorf("redis %s probe: want exec redis-cli ping", what)
		}
	}
	// ORCH_REDIS_URL points at this Service.
	url, ok := strings.CutPrefix(cfg["ORCH_REDIS_URL"], "redis://")
	host, p, _ := strings.Cut(strings.SplitN(url, "/", 2)[0], ":")
	if !ok || host != svc.Name || p != fmt.Sprint(redisPort) {
		t.Errorf("ORCH_REDIS_URL %q, want redis://%s:%d/0", cfg["ORCH_REDIS_URL"], svc.Name, redisPort)
	}
	// Only orch's pods reach it.
	np := get(t, c.policies, "NetworkPolicy", "redis")
	if !selects(t, &np.Spec.PodSelector, ss.Spec.Template.Labels) {
		t.Error("NetworkPolicy redis does not select the Redis pods")
	}
	for _, name := range []string{"orch-bot", "orch-worker"} {
		podLabels := get(t, c.deployments, "Deployment", name).Spec.Template.Labels
		allowed := false
		for _, rule := range np.Spec.Ingress {
			for _, from := range rule.From {
				if from.PodSelector != nil && selects(t, from.PodSelector, podLabels) {
					allowed = true
				}
			}
		}
		if !allowed {
			t.Errorf("NetworkPolicy redis keeps %s out", name)
		}
	}
}

// The checks above are only worth something if a mistake in a manifest fails them.
func TestK8sRejectsMistakes(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(k8sDir, "bot-deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string][2]string{
		"misspelled field": {"readinessProbe:", "readinesProbe:"},
		"misplaced field":  {"      automountServiceAccountToken: false", "      automountServiceAccountToken: false\n      replicas: 1"},
		"wrong type":       {"replicas: 1", "replicas: one"},
		"wrong apiVersion": {"apiVersion: apps/v1", "apiVersion: apps/v1beta3"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			bad := strings.Replace(string(data), c[0], c[1], 1)
			if bad == string(data) {
				t.Fatalf("bot-deployment.yaml has no %q to change", c[0])
			}
			if _, err := decodeStrict([]byte(bad)); err == nil {
				t.Error("the mistaken manifest decoded without error")
			}
		})
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatalf("%q is not a number", s)
	}
	return n
}
