// Package deploy holds no code, only the tests of the deployment files
// beside it: compose.yaml is loaded with compose-go as `docker compose`
// loads it, its structure checked, and the hookgate config it mounts
// checked with the real `hookgate check-config`.
//
// It is a module of its own so that compose-go and its dependencies stay
// out of the library's go.mod: `cd deploy && go test ./...`.
package deploy
