package main

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/moby/moby/client"

	"github.com/orchrun/orch/sandbox"
)

// benchLabel marks everything the Docker measurement creates, so that it removes all of it at the end.
const benchLabel = "orch.bench"

type dockerResult struct {
	cold, warm, repo *float64 // p50 in ms; nil without an engine
	note             string
}

// measureDocker times a new run's first process in the Docker sandbox, p50 of samples each: a cold start (create and
// start the run's container, then exec `true` in it) and a warm one (claim a paused container from the warm pool,
// then the same exec). Without an engine both are null.
func measureDocker(ctx context.Context, r *rig, samples int) (dockerResult, error) {
	host := os.Getenv("DOCKER_HOST")
	cli, err := dockerClient(ctx, host)
	if err != nil {
		return dockerResult{note: "No Docker engine answered (" + err.Error() + "): not measured."}, nil
	}
	defer cli.Close()
	session := randomHex(4)
	defer removeLabelled(cli, session)
	image, err := buildImage(ctx, cli, session)
	if err != nil {
		if errors.Is(err, errNoBusybox) {
			return dockerResult{note: err.Error() + ": not measured."}, nil
		}
		return dockerResult{}, err
	}
	labels := map[string]string{benchLabel: session}
	root, err := os.MkdirTemp(r.tmp, "docker-")
	if err != nil {
		return dockerResult{}, err
	}
	// A plain workspace: a directory of its own per run.
	plain := func() (string, []string, error) {
		ws, err := os.MkdirTemp(root, "ws-")
		return ws, nil, err
	}
	// A run in a repository: its worktree, and the repository's objects, mounted read-only beside it.
	objects := filepath.Join(root, "repo.git", "objects")
	if err := os.MkdirAll(objects, 0o755); err != nil {
		return dockerResult{}, err
	}
	inRepo := func() (string, []string, error) {
		ws, err := os.MkdirTemp(root, "worktree-")
		return ws, []string{objects}, err
	}
	// The pool serves the one workspace its containers were made for: a plain directory used in place.
	inPlace := func() (string, []string, error) { return root, nil, nil }

	coldBackend, err := sandbox.NewDocker(ctx, sandbox.DockerConfig{Host: host, Image: image, Labels: labels})
	if err != nil {
		return dockerResult{}, err
	}
	defer coldBackend.Close()
	cold, err := firstExecs(ctx, coldBackend, plain, samples, func() error { return nil })
	if err != nil {
		return dockerResult{}, fmt.Errorf("cold start: %w", err)
	}
	repo, err := firstExecs(ctx, coldBackend, inRepo, samples, func() error { return nil })
	if err != nil {
		return dockerResult{}, fmt.Errorf("a repository run's start: %w", err)
	}

	const poolSize = 2
	warmBackend, err := sandbox.NewDocker(ctx, sandbox.DockerConfig{Host: host, Image: image, Labels: labels,
		WarmPool: poolSize, WorkspaceRoot: root})
	if err != nil {
		return dockerResult{}, err
	}
	defer warmBackend.Close()
	warm, err := firstExecs(ctx, warmBackend, inPlace, samples, func() error { return waitPool(ctx, cli, session, poolSize) })
	if err != nil {
		return dockerResult{}, fmt.Errorf("warm start: %w", err)
	}

	c, w, rp := percentileMs(cold, 0.5), percentileMs(warm, 0.5), percentileMs(repo, 0.5)
	note := fmt.Sprintf("%d samples each, p50 (p90: cold %.0f ms, warm %.0f ms, repository %.0f ms), on a busybox image "+
		"FROM scratch with the sandbox's production settings; each sample is a new run's first Exec of `true`, "+
		"released after. Cold: create + start the run's container (a plain workspace) + exec. Repository: the same for a "+
		"run in a repository, whose container mounts its worktree and the repository's objects read-only; the warm pool "+
		"never serves these runs, since a container made before its run could only show it more than its worktree. "+
		"Warm: claim one of %d paused pool containers (unpause, rename) + exec, for a run in the plain workspace the "+
		"pool's containers were made for, with the pool refilled before each sample.", samples, percentileMs(cold, 0.9),
		percentileMs(warm, 0.9), percentileMs(repo, 0.9), poolSize)
	return dockerResult{cold: &c, warm: &w, repo: &rp, note: note}, nil
}

func dockerClient(ctx context.Context, host string) (*client.Client, error) {
	var opts []client.Opt
	if host != "" {
		opts = append(opts, client.WithHost(host))
	}
	cli, err := client.New(opts...)
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := cli.Ping(pctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		cli.Close()
		return nil, err
	}
	return cli, nil
}

// firstExecs times samples first Execs of new runs, each in the workspace (and with the read-only directories) that
// where gives; before runs (unmeasured) ahead of each.
func firstExecs(ctx context.Context, d *sandbox.Docker, where func() (string, []string, error), samples int,
	before func() error) ([]time.Duration, error) {
	var out []time.Duration
	for i := range samples {
		if err := before(); err != nil {
			return nil, err
		}
		ws, ro, err := where()
		if err != nil {
			return nil, err
		}
		run := fmt.Sprintf("bench-%s-%d", randomHex(3), i)
		start := time.Now()
		res, err := d.Exec(ctx, sandbox.Spec{RunID: run, Dir: ws, ReadOnly: ro, Args: []string{"true"}}, nil)
		elapsed := time.Since(start)
		if err != nil || res.ExitCode != 0 {
			return nil, fmt.Errorf("exec true: exit %d, %v, %s", res.ExitCode, err, res.Stderr)
		}
		out = append(out, elapsed)
		if err := d.Release(ctx, run, true); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// waitPool waits until the pool holds n paused, unclaimed containers of this session.
func waitPool(ctx context.Context, cli *client.Client, session string, n int) error {
	f := client.Filters{}.Add("label", benchLabel+"="+session).Add("label", sandbox.LabelPool+"=1").Add("status", "paused")
	for deadline := time.Now().Add(time.Minute); ; {
		list, err := cli.ContainerList(ctx, client.ContainerListOptions{Filters: f})
		if err != nil {
			return err
		}
		idle := 0
		for _, c := range list.Items {
			for _, name := range c.Names {
				if strings.HasPrefix(strings.TrimPrefix(name, "/"), "orch-pool-") {
					idle++
				}
			}
		}
		if idle >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the warm pool holds %d idle containers after a minute, want %d", idle, n)
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
}

var errNoBusybox = errors.New("the image needs a static busybox at /bin/busybox (Debian: busybox-static)")

// imageApplets are the busybox commands the image has: a shell for the container's keep-alive process, and true.
var imageApplets = []string{"sh", "sleep", "true"}

// buildImage builds a tiny image, busybox FROM scratch, labelled with the session so that it is removed after.
func buildImage(ctx context.Context, cli *client.Client, session string) (string, error) {
	bb, err := os.ReadFile("/bin/busybox")
	if err != nil {
		return "", errNoBusybox
	}
	const dockerfile = "FROM scratch\nCOPY bin /bin\n"
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(hdr *tar.Header, body []byte) {
		hdr.ModTime = time.Unix(0, 0)
		if err == nil {
			err = tw.WriteHeader(hdr)
		}
		if err == nil && body != nil {
			_, err = tw.Write(body)
		}
	}
	add(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(dockerfile))}, []byte(dockerfile))
	add(&tar.Header{Name: "bin/", Typeflag: tar.TypeDir, Mode: 0o755}, nil)
	add(&tar.Header{Name: "bin/busybox", Mode: 0o755, Size: int64(len(bb))}, bb)
	for _, a := range imageApplets {
		add(&tar.Header{Name: "bin/" + a, Typeflag: tar.TypeSymlink, Linkname: "busybox", Mode: 0o777}, nil)
	}
	if err == nil {
		err = tw.Close()
	}
	if err != nil {
		return "", err
	}
	tag := "orch-bench-sandbox:" + session
	res, err := cli.ImageBuild(ctx, &buf, client.ImageBuildOptions{Tags: []string{tag}, Remove: true, ForceRemove: true,
		Labels: map[string]string{benchLabel: session}, Dockerfile: "Dockerfile"})
	if err != nil {
		return "", fmt.Errorf("building the image: %w", err)
	}
	defer res.Body.Close()
	dec := json.NewDecoder(res.Body)
	for {
		var msg struct {
			Error string `json:"error"`
		}
		if err := dec.Decode(&msg); errors.Is(err, io.EOF) {
			return tag, nil
		} else if err != nil {
			return "", fmt.Errorf("building the image: %w", err)
		}
		if msg.Error != "" {
			return "", fmt.Errorf("building the image: %s", msg.Error)
		}
	}
}

// removeLabelled removes the containers and the image of a session, whatever happened.
func removeLabelled(cli *client.Client, session string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true,
		Filters: client.Filters{}.Add("label", benchLabel+"="+session)})
	if err == nil {
		for _, c := range list.Items {
			_, _ = cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		}
	}
	_, _ = cli.ImageRemove(ctx, "orch-bench-sandbox:"+session, client.ImageRemoveOptions{PruneChildren: true})
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
