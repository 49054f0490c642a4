package deploy_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
)

// configTarget is where the nodes find their config, as HOOKGATE_CONFIG.
const configTarget = "/etc/hookgate/hookgate.yaml"

// testEnv is the environment compose.yaml asks of whoever runs it, with
// values every field accepts: tokens of 64 characters, Standard Webhooks
// secrets of 32 bytes.
var testEnv = map[string]string{
	"POSTGRES_PASSWORD":      "compose-test-password",
	"HOOKGATE_ADMIN_TOKEN":   strings.Repeat("a1", 32),
	"HOOKGATE_METRICS_TOKEN": strings.Repeat("b2", 32),
	"HOOKGATE_SOURCE_SECRET": "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
	"HOOKGATE_APP_SECRET":    "whsec_ZmVkY2JhOTg3NjU0MzIxMGZlZGNiYTk4NzY1NDMyMTA=",
}

// load loads compose.yaml as `docker compose -f deploy/compose.yaml`
// does, with env as the environment, failing the test on any error.
func load(t *testing.T, env map[string]string) *types.Project {
	t.Helper()
	p, err := loadProject(env)
	if err != nil {
		t.Fatalf("load compose.yaml: %v", err)
	}
	return p
}

func loadProject(env map[string]string) (*types.Project, error) {
	var list []string
	for k, v := range env {
		list = append(list, k+"="+v)
	}
	opts, err := cli.NewProjectOptions([]string{"compose.yaml"},
		cli.WithWorkingDirectory("."),
		cli.WithEnv(list),
		cli.WithConsistency(true),
		cli.WithResolvedPaths(true),
	)
	if err != nil {
		return nil, err
	}
	return opts.LoadProject(context.Background())
}

// nodes are the services that run `hookgate serve`.
func nodes(p *types.Project) []types.ServiceConfig {
	var out []types.ServiceConfig
	for _, name := range p.ServiceNames() {
		s := p.Services[name]
		if s.Image == "hookgate:latest" && slices.Equal(s.Command, types.ShellCommand{"serve"}) {
			out = append(out, s)
		}
	}
	return out
}

func TestComposeStructure(t *testing.T) {
	p := load(t, testEnv)

	ns := nodes(p)
	if len(ns) != 2 {
		t.Fatalf("%d services run `hookgate serve`, want 2", len(ns))
	}
	migrate, ok := p.Services["migrate"]
	if !ok {
		t.Fatal("no migrate service")
	}
	if !slices.Equal(migrate.Command, types.ShellCommand{"migrate"}) || migrate.Image != "hookgate:latest" {
		t.Errorf("migrate runs %s %v, want hookgate:latest migrate", migrate.Image, migrate.Command)
	}
	if migrate.Restart != "no" {
		t.Errorf("migrate restart = %q, want \"no\": a one-shot job", migrate.Restart)
	}
	if c := migrate.DependsOn["postgres"].Condition; c != types.ServiceConditionHealthy {
		t.Errorf("migrate waits for postgres with condition %q, want %s", c, types.ServiceConditionHealthy)
	}

	for _, n := range ns {
		want := map[string]string{
			"migrate":  types.ServiceConditionCompletedSuccessfully,
			"postgres": types.ServiceConditionHealthy,
			"redis":    types.ServiceConditionHealthy,
		}
		for dep, cond := range want {
			if got := n.DependsOn[dep].Condition; got != cond {
				t.Errorf("%s depends on %s with condition %q, want %q", n.Name, dep, got, cond)
			}
		}
		hc := n.HealthCheck
		if hc == nil || hc.Disable || !slices.Equal([]string(hc.Test), []string{"CMD", "/hookgate", "healthcheck"}) {
			t.Errorf("%s healthcheck = %+v, want CMD /hookgate healthcheck", n.Name, hc)
		}
		if got := n.Environment["HOOKGATE_CONFIG"]; got == nil || *got != configTarget {
			t.Errorf("%s HOOKGATE_CONFIG = %v, want %s (serve and healthcheck read it)", n.Name, got, configTarget)
		}
		if configSource(t, n) == "" {
			t.Errorf("%s does not mount a config at %s", n.Name, configTarget)
		}
	}

	pg, ok := p.Services["postgres"]
	if !ok {
		t.Fatal("no postgres service")
	}
	if pg.HealthCheck == nil || pg.HealthCheck.Disable || len(pg.HealthCheck.Test) == 0 {
		t.Errorf("postgres has no healthcheck")
	}
	var dataVolume bool
	for _, v := range pg.Volumes {
		if v.Type == types.VolumeTypeVolume && v.Target == "/var/lib/postgresql/data" {
			if _, ok := p.Volumes[v.Source]; !ok {
				t.Errorf("postgres mounts volume %q, which is not declared", v.Source)
			}
			dataVolume = true
		}
	}
	if !dataVolume {
		t.Errorf("postgres keeps its data in no named volume (want one at /var/lib/postgresql/data)")
	}

	if _, ok := p.Services["redis"]; !ok {
		t.Error("no redis service (the nodes' dedupe.front)")
	}

	// One port for providers: the proxy publishes it and sends to both
	// nodes; no node publishes its public listener itself.
	proxy, ok := p.Services["proxy"]
	if !ok {
		t.Fatal("no proxy service")
	}
	if len(proxy.Ports) != 1 || proxy.Ports[0].Published != "8080" || proxy.Ports[0].Target != 8080 {
		t.Errorf("proxy ports = %+v, want 8080:8080", proxy.Ports)
	}
	conf := p.Configs["nginx"].Content
	for _, n := range ns {
		if !strings.Contains(conf, "server "+n.Name+":8080") {
			t.Errorf("the proxy's nginx config sends nothing to %s:8080", n.Name)
		}
		if c := proxy.DependsOn[n.Name].Condition; c != types.ServiceConditionHealthy {
			t.Errorf("proxy depends on %s with condition %q, want %s", n.Name, c, types.ServiceConditionHealthy)
		}
		for _, port := range n.Ports {
			if port.Target == 8080 {
				t.Errorf("%s publishes its public listener %+v itself; providers go through the proxy", n.Name, port)
			}
			if port.HostIP != "127.0.0.1" {
				t.Errorf("%s publishes %+v beyond the host's loopback (the operator's routes)", n.Name, port)
			}
		}
	}
}

// TestComposeNeedsSecrets: without its secrets in the environment the
// file does not load, and the error says which is missing.
func TestComposeNeedsSecrets(t *testing.T) {
	for name := range testEnv {
		env := map[string]string{}
		for k, v := range testEnv {
			if k != name {
				env[k] = v
			}
		}
		_, err := loadProject(env)
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("without %s: err = %v, want one naming it", name, err)
		}
	}
}

// TestComposeConfigChecks runs the real `hookgate check-config` on the
// file the nodes mount, with exactly the environment compose gives them,
// so a secret the config names and compose does not pass fails here.
func TestComposeConfigChecks(t *testing.T) {
	p := load(t, testEnv)
	bin := buildHookgate(t)
	for _, n := range nodes(p) {
		src := configSource(t, n)
		var env []string
		for k, v := range n.Environment {
			if v != nil {
				env = append(env, k+"="+*v)
			}
		}
		cmd := exec.Command(bin, "check-config", "--config", src)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: hookgate check-config --config %s: %v\n%s", n.Name, src, err, out)
		}
		if !strings.Contains(string(out), "valid, 1 source(s)") {
			t.Errorf("%s: check-config said:\n%s", n.Name, out)
		}
		if strings.Contains(string(out), "warning:") {
			t.Errorf("%s: check-config warns:\n%s", n.Name, out)
		}
	}
}

// configSource is the file on this machine that n mounts as its config.
func configSource(t *testing.T, n types.ServiceConfig) string {
	t.Helper()
	for _, v := range n.Volumes {
		if v.Type == types.VolumeTypeBind && v.Target == configTarget {
			if !v.ReadOnly {
				t.Errorf("%s mounts its config writable", n.Name)
			}
			return v.Source
		}
	}
	return ""
}

// buildHookgate builds the gateway from the root module into a temporary
// directory.
func buildHookgate(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "hookgate")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/hookgate")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/hookgate: %v\n%s", err, out)
	}
	return bin
}
