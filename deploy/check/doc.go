// Package check validates the deployment files under deploy/ without a cluster, an engine or a network: `go test
// ./...` here (make deploy-check) loads deploy/compose.yaml with compose-go and its schema (what `docker compose
// config` does), builds deploy/k8s with kustomize (what `kubectl apply -k` does) and decodes every object strictly
// into the Kubernetes API types, parses deploy/prometheus.yml, and checks that they agree with each other and with
// the environment variables orch reads (found in cmd/orch's source).
//
// It is a module of its own so that orch's go.mod does not carry compose-go, kustomize and the Kubernetes API.
package check
