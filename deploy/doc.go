// Package deploy holds no code, only the tests of the deployment files
// beside it: compose.yaml is loaded with compose-go as `docker compose`
// loads it, its structure checked, and the hookgate config it mounts
// checked with the real `hookgate check-config` (compose_test.go).
//
// The Helm chart helm/hookgate is rendered by helm_test.go with the Helm
// v4 SDK, as `helm install --dry-run=client` and `helm lint --strict`
// render it, without a cluster: every object is decoded strictly into
// the Kubernetes API's types, the nodes' and the migration hook's pods
// checked (non-root, read-only root, probes, the config mounted, secrets
// by reference only), the values it refuses refused with their message,
// and the config it renders checked with `hookgate check-config`.
//
// It is a module of its own so that compose-go, Helm and their
// dependencies stay out of the library's go.mod: `cd deploy && go test
// ./...`.
package deploy
