package deploy_test

import (
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	release "helm.sh/helm/v4/pkg/release/v1"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"
	sigsyaml "sigs.k8s.io/yaml"
)

// chartDir is the chart, as `helm install hookgate deploy/helm/hookgate`
// names it from the repository's root.
const chartDir = "helm/hookgate"

// kubeVersion is the cluster the chart is rendered for: Helm's own
// default in a test build (1.20) is older than the chart's kubeVersion.
var kubeVersion = &common.KubeVersion{Version: "v1.31.0", Major: "1", Minor: "31"}

// strictDecoder decodes a manifest into the Kubernetes API's own types and
// refuses unknown or duplicate fields, as the API server's strict field
// validation does.
var strictDecoder = serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()

// object is one rendered Kubernetes object.
type object struct {
	kind, name string
	hook       *release.Hook // nil: a resource of the release, not a hook
	typed      runtime.Object
	fields     map[string]any // the manifest as YAML, for kinds outside client-go's scheme
}

// rendering is what `helm install --dry-run=client` would send.
type rendering struct {
	objects []object
}

// render renders the chart as `helm install hookgate deploy/helm/hookgate
// -f values.yaml --dry-run=client` does: values merged over the chart's,
// the chart's kubeVersion checked, hooks split from the release's
// resources. No cluster is asked.
func render(valuesYAML string) (*rendering, error) {
	ch, err := loader.Load(chartDir)
	if err != nil {
		return nil, fmt.Errorf("load chart: %w", err)
	}
	vals, err := common.ReadValues([]byte(valuesYAML))
	if err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	inst := action.NewInstall(action.NewConfiguration(action.ConfigurationSetLogger(slog.DiscardHandler)))
	inst.DryRunStrategy = action.DryRunClient
	inst.ReleaseName = "hookgate"
	inst.Namespace = "webhooks"
	inst.KubeVersion = kubeVersion
	r, err := inst.Run(ch, vals)
	if err != nil {
		return nil, err
	}
	rel, ok := r.(*release.Release)
	if !ok {
		return nil, fmt.Errorf("install returned a %T", r)
	}
	out := &rendering{}
	for _, m := range releaseutil.SplitManifests(rel.Manifest) {
		o, err := decode(m)
		if err != nil {
			return nil, err
		}
		out.objects = append(out.objects, o)
	}
	for _, h := range rel.Hooks {
		o, err := decode(h.Manifest)
		if err != nil {
			return nil, fmt.Errorf("hook %s: %w", h.Path, err)
		}
		o.hook = h
		out.objects = append(out.objects, o)
	}
	return out, nil
}

// decode parses one manifest: into its client-go type, strictly, when the
// kind is one of Kubernetes' own, and always as plain YAML.
func decode(manifest string) (object, error) {
	var fields map[string]any
	if err := sigsyaml.Unmarshal([]byte(manifest), &fields); err != nil {
		return object{}, fmt.Errorf("not YAML: %w\n%s", err, manifest)
	}
	o := object{fields: fields}
	o.kind, _ = fields["kind"].(string)
	if md, ok := fields["metadata"].(map[string]any); ok {
		o.name, _ = md["name"].(string)
	}
	if o.kind == "" || o.name == "" {
		return object{}, fmt.Errorf("an object without kind or name:\n%s", manifest)
	}
	typed, _, err := strictDecoder.Decode([]byte(manifest), nil, nil)
	switch {
	case err == nil:
		o.typed = typed
	case runtime.IsNotRegisteredError(err):
	default:
		return object{}, fmt.Errorf("%s %s: %w", o.kind, o.name, err)
	}
	return o, nil
}

// mustRender renders valuesYAML and fails the test on any error.
func mustRender(t *testing.T, valuesYAML string) *rendering {
	t.Helper()
	r, err := render(valuesYAML)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	return r
}

// all are the objects of kind, hooks included.
func (r *rendering) all(kind string) []object {
	var out []object
	for _, o := range r.objects {
		if o.kind == kind {
			out = append(out, o)
		}
	}
	return out
}

// one is the only object of kind that is (hook) or is not (!hook) a hook.
func (r *rendering) one(t *testing.T, kind string, hook bool) object {
	t.Helper()
	var found []object
	for _, o := range r.all(kind) {
		if (o.hook != nil) == hook {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d %s objects (hook: %t), want 1", len(found), kind, hook)
	}
	return found[0]
}

func (r *rendering) kinds() []string {
	var out []string
	for _, o := range r.objects {
		k := o.kind
		if o.hook != nil {
			k += " (hook)"
		}
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func (r *rendering) deployment(t *testing.T) *appsv1.Deployment {
	t.Helper()
	return r.one(t, "Deployment", false).typed.(*appsv1.Deployment)
}

// configMap is the nodes' ConfigMap (!hook) or, on PostgreSQL, the
// migration hook's (hook).
func (r *rendering) configMap(t *testing.T, hook bool) *corev1.ConfigMap {
	t.Helper()
	return r.one(t, "ConfigMap", hook).typed.(*corev1.ConfigMap)
}

func TestHelmDefaultRender(t *testing.T) {
	r := mustRender(t, "")
	want := []string{"ConfigMap", "ConfigMap (hook)", "Deployment", "Job (hook)", "PodDisruptionBudget", "Service"}
	if got := r.kinds(); !slices.Equal(got, want) {
		t.Errorf("kinds = %v, want %v", got, want)
	}
	for _, o := range r.objects {
		if o.typed == nil {
			t.Errorf("%s %s did not decode as a Kubernetes type", o.kind, o.name)
		}
	}
	d := r.deployment(t)
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("replicas = %v, want 2", d.Spec.Replicas)
	}
	if img := d.Spec.Template.Spec.Containers[0].Image; !strings.HasPrefix(img, "ghcr.io/hookgate/hookgate:") ||
		strings.TrimPrefix(img, "ghcr.io/hookgate/hookgate:") != chartAppVersion(t) {
		t.Errorf("image = %q, want ghcr.io/hookgate/hookgate:<appVersion %s>", img, chartAppVersion(t))
	}
	pdb := r.one(t, "PodDisruptionBudget", false).typed.(*policyv1.PodDisruptionBudget)
	if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() != 1 {
		t.Errorf("PodDisruptionBudget minAvailable = %v, want 1", pdb.Spec.MinAvailable)
	}
	if !reflect.DeepEqual(pdb.Spec.Selector.MatchLabels, d.Spec.Selector.MatchLabels) {
		t.Errorf("PodDisruptionBudget selects %v, the Deployment's pods are %v", pdb.Spec.Selector.MatchLabels, d.Spec.Selector.MatchLabels)
	}
}

// chartAppVersion is Chart.yaml's appVersion.
func chartAppVersion(t *testing.T) string {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	if ch.Metadata.AppVersion == "" || ch.Metadata.Version == "" || ch.Metadata.APIVersion != "v2" {
		t.Fatalf("Chart.yaml: apiVersion %q, version %q, appVersion %q: want v2 and both versions set",
			ch.Metadata.APIVersion, ch.Metadata.Version, ch.Metadata.AppVersion)
	}
	return ch.Metadata.AppVersion
}

// listenPort is the port of a host:port listen address.
func listenPort(t *testing.T, addr string) int32 {
	t.Helper()
	i := strings.LastIndex(addr, ":")
	p, err := strconv.Atoi(addr[i+1:])
	if i < 0 || err != nil {
		t.Fatalf("listen %q: no port", addr)
	}
	return int32(p)
}

// renderedConfig is the hookgate config the nodes' ConfigMap holds.
func renderedConfig(t *testing.T, r *rendering) map[string]any {
	t.Helper()
	cm := r.configMap(t, false)
	text, ok := cm.Data["hookgate.yaml"]
	if !ok {
		t.Fatalf("ConfigMap %s has no hookgate.yaml: %v", cm.Name, cm.Data)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal([]byte(text), &cfg); err != nil {
		t.Fatalf("ConfigMap %s: hookgate.yaml: %v", cm.Name, err)
	}
	return cfg
}

// containerPort is the port a named port of c resolves to.
func containerPort(t *testing.T, c corev1.Container, name string) int32 {
	t.Helper()
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	t.Fatalf("container %s has no port %q: %+v", c.Name, name, c.Ports)
	return 0
}

func TestHelmDeploymentHardened(t *testing.T) {
	r := mustRender(t, "")
	d := r.deployment(t)
	pod := d.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	checkSecurity(t, "Deployment", pod, c)
	if !slices.Equal(c.Args, []string{"serve"}) || len(c.Command) != 0 {
		t.Errorf("command %v args %v, want the image's entrypoint with args [serve]", c.Command, c.Args)
	}

	cfg := renderedConfig(t, r)
	port := listenPort(t, cfg["listen"].(string))
	for _, p := range []struct {
		name  string
		probe *corev1.Probe
		path  string
	}{{"liveness", c.LivenessProbe, "/healthz"}, {"readiness", c.ReadinessProbe, "/readyz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil {
			t.Errorf("%s probe = %+v, want an HTTP GET of %s", p.name, p.probe, p.path)
			continue
		}
		g := p.probe.HTTPGet
		if g.Path != p.path {
			t.Errorf("%s probe path = %q, want %s", p.name, g.Path, p.path)
		}
		got := g.Port.IntVal
		if g.Port.StrVal != "" {
			got = containerPort(t, c, g.Port.StrVal)
		}
		if got != port {
			t.Errorf("%s probe asks port %d, the config listens on %d", p.name, got, port)
		}
	}

	checkConfigMount(t, pod, c, r.configMap(t, false).Name)
	writable := map[string]bool{}
	for _, m := range c.VolumeMounts {
		if v := volume(t, pod, m.Name); v.EmptyDir != nil && !m.ReadOnly {
			writable[m.MountPath] = true
		}
	}
	for _, dir := range []string{"/tmp", "/var/lib/hookgate"} {
		if !writable[dir] {
			t.Errorf("no writable emptyDir at %s (the root file system is read-only); mounts: %+v", dir, c.VolumeMounts)
		}
	}

	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("resources = %+v, want cpu and memory requests and a memory limit from values", c.Resources)
	}
	if got := d.Spec.Template.Annotations["checksum/config"]; got == "" {
		t.Error("no checksum/config annotation on the pods: a config change would not roll them")
	}

	svc := r.one(t, "Service", false).typed.(*corev1.Service)
	if svc.Spec.Type != corev1.ServiceTypeClusterIP {
		t.Errorf("Service type = %q, want ClusterIP", svc.Spec.Type)
	}
	if !reflect.DeepEqual(svc.Spec.Selector, d.Spec.Selector.MatchLabels) {
		t.Errorf("Service selects %v, the Deployment's pods are %v", svc.Spec.Selector, d.Spec.Selector.MatchLabels)
	}
	admin := cfg["admin"].(map[string]any)["listen"].(string)
	wantPorts := map[string]int32{"http": port, "admin": listenPort(t, admin)}
	if len(svc.Spec.Ports) != len(wantPorts) {
		t.Errorf("Service ports = %+v, want http and admin", svc.Spec.Ports)
	}
	for _, sp := range svc.Spec.Ports {
		want, ok := wantPorts[sp.Name]
		if !ok {
			t.Errorf("Service port %q: not expected", sp.Name)
			continue
		}
		if got := containerPort(t, c, sp.TargetPort.StrVal); got != want {
			t.Errorf("Service port %s reaches container port %d, the config listens on %d", sp.Name, got, want)
		}
	}
}

// checkSecurity checks what every hookgate container of the chart runs
// with: not root (the image's uid 65532), no privilege, nothing written
// outside its volumes.
func checkSecurity(t *testing.T, what string, pod corev1.PodSpec, c corev1.Container) {
	t.Helper()
	ps := pod.SecurityContext
	if ps == nil || ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot || ps.RunAsUser == nil || *ps.RunAsUser != 65532 ||
		ps.RunAsGroup == nil || *ps.RunAsGroup != 65532 || ps.FSGroup == nil || *ps.FSGroup != 65532 {
		t.Errorf("%s: pod securityContext = %+v, want runAsNonRoot, uid, gid and fsGroup 65532", what, ps)
	}
	sc := c.SecurityContext
	if sc == nil {
		t.Fatalf("%s: container %s has no securityContext", what, c.Name)
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("%s: readOnlyRootFilesystem = %s, want true", what, boolp(sc.ReadOnlyRootFilesystem))
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("%s: allowPrivilegeEscalation = %s, want false", what, boolp(sc.AllowPrivilegeEscalation))
	}
	if sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Errorf("%s: container runAsNonRoot = %s, want true", what, boolp(sc.RunAsNonRoot))
	}
	if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
		t.Errorf("%s: capabilities = %+v, want drop [ALL] and nothing added", what, sc.Capabilities)
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Errorf("%s: automountServiceAccountToken = %s, want false: hookgate never calls the API server", what, boolp(pod.AutomountServiceAccountToken))
	}
}

// boolp shows an optional bool of the Kubernetes API.
func boolp(p *bool) string {
	if p == nil {
		return "unset"
	}
	return strconv.FormatBool(*p)
}

// checkConfigMount checks that c reads its config from configMap, mounted
// read-only, with HOOKGATE_CONFIG naming the file.
func checkConfigMount(t *testing.T, pod corev1.PodSpec, c corev1.Container, configMap string) {
	t.Helper()
	var path string
	for _, e := range c.Env {
		if e.Name == "HOOKGATE_CONFIG" {
			path = e.Value
		}
	}
	if path == "" {
		t.Fatalf("container %s: no HOOKGATE_CONFIG", c.Name)
	}
	for _, m := range c.VolumeMounts {
		if m.MountPath != filepath.Dir(path) {
			continue
		}
		v := volume(t, pod, m.Name)
		if v.ConfigMap == nil || v.ConfigMap.Name != configMap {
			t.Errorf("container %s: %s is volume %+v, want ConfigMap %s", c.Name, m.MountPath, v.VolumeSource, configMap)
		}
		if !m.ReadOnly {
			t.Errorf("container %s: the config is mounted writable", c.Name)
		}
		if m.SubPath == "" && filepath.Base(path) != "hookgate.yaml" {
			t.Errorf("HOOKGATE_CONFIG = %s, the ConfigMap's key is hookgate.yaml", path)
		}
		return
	}
	t.Errorf("container %s: HOOKGATE_CONFIG = %s, but nothing is mounted at %s", c.Name, path, filepath.Dir(path))
}

func volume(t *testing.T, pod corev1.PodSpec, name string) corev1.Volume {
	t.Helper()
	for _, v := range pod.Volumes {
		if v.Name == name {
			return v
		}
	}
	t.Fatalf("no volume %q", name)
	return corev1.Volume{}
}

func TestHelmMigrationHook(t *testing.T) {
	r := mustRender(t, "")
	jo := r.one(t, "Job", true)
	job := jo.typed.(*batchv1.Job)
	wantEvents := []release.HookEvent{release.HookPreInstall, release.HookPreUpgrade}
	if !slices.Equal(jo.hook.Events, wantEvents) {
		t.Errorf("Job hook events = %v, want %v", jo.hook.Events, wantEvents)
	}
	wantDelete := []release.HookDeletePolicy{release.HookBeforeHookCreation, release.HookSucceeded}
	if !slices.Equal(jo.hook.DeletePolicies, wantDelete) {
		t.Errorf("Job hook delete policies = %v, want %v", jo.hook.DeletePolicies, wantDelete)
	}
	if got := job.Annotations[release.HookAnnotation]; got != "pre-install,pre-upgrade" {
		t.Errorf("Job %s = %q", release.HookAnnotation, got)
	}

	pod := job.Spec.Template.Spec
	c := pod.Containers[0]
	if !slices.Equal(c.Args, []string{"migrate"}) || len(c.Command) != 0 {
		t.Errorf("Job runs command %v args %v, want args [migrate]", c.Command, c.Args)
	}
	if pod.RestartPolicy != corev1.RestartPolicyNever && pod.RestartPolicy != corev1.RestartPolicyOnFailure {
		t.Errorf("Job restartPolicy = %q", pod.RestartPolicy)
	}
	checkSecurity(t, "Job", pod, c)
	node := r.deployment(t).Spec.Template.Spec.Containers[0]
	if c.Image != node.Image {
		t.Errorf("Job image %s, the nodes run %s", c.Image, node.Image)
	}
	if !reflect.DeepEqual(c.EnvFrom, node.EnvFrom) || !reflect.DeepEqual(c.Env, node.Env) {
		t.Errorf("Job environment %+v %+v differs from the nodes' %+v %+v", c.EnvFrom, c.Env, node.EnvFrom, node.Env)
	}

	// The Job runs before the release's resources exist: its config is a
	// hook of its own, created first, holding the nodes' config.
	cmo := r.one(t, "ConfigMap", true)
	checkConfigMount(t, pod, c, cmo.name)
	if !slices.Equal(cmo.hook.Events, wantEvents) {
		t.Errorf("the Job's ConfigMap hook events = %v, want %v", cmo.hook.Events, wantEvents)
	}
	if cmo.hook.Weight >= jo.hook.Weight {
		t.Errorf("the Job's ConfigMap has hook weight %d, the Job %d: it must be created first", cmo.hook.Weight, jo.hook.Weight)
	}
	if !slices.Contains(cmo.hook.DeletePolicies, release.HookBeforeHookCreation) {
		t.Errorf("the Job's ConfigMap delete policies = %v: an upgrade would fail on the one left by the last", cmo.hook.DeletePolicies)
	}
	if got, want := r.configMap(t, true).Data, r.configMap(t, false).Data; !reflect.DeepEqual(got, want) {
		t.Errorf("the Job's config differs from the nodes':\n%v\n%v", got, want)
	}
}

// TestHelmNoSecretValues: the chart holds no secret. No object is a
// Secret, every environment variable but HOOKGATE_CONFIG comes from a
// Secret by reference, and the config's secrets are env: references to
// the existing Secret's keys.
func TestHelmNoSecretValues(t *testing.T) {
	r := mustRender(t, `
serviceMonitor: {enabled: true}
autoscaling: {enabled: true}
`)
	for _, o := range r.objects {
		if o.kind == "Secret" {
			t.Errorf("the chart renders Secret %s", o.name)
		}
		var pod *corev1.PodSpec
		switch v := o.typed.(type) {
		case *appsv1.Deployment:
			pod = &v.Spec.Template.Spec
		case *batchv1.Job:
			pod = &v.Spec.Template.Spec
		}
		if pod == nil {
			continue
		}
		for _, c := range slices.Concat(pod.InitContainers, pod.Containers) {
			for _, e := range c.Env {
				if e.Name != "HOOKGATE_CONFIG" && (e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil) {
					t.Errorf("%s %s: env %s = %q, want a secretKeyRef", o.kind, o.name, e.Name, e.Value)
				}
			}
			if len(c.EnvFrom) != 1 || c.EnvFrom[0].SecretRef == nil || c.EnvFrom[0].SecretRef.Name != "hookgate" {
				t.Errorf("%s %s: envFrom = %+v, want the existing Secret hookgate", o.kind, o.name, c.EnvFrom)
			}
		}
	}
	cfg := renderedConfig(t, r)
	refs := []any{
		cfg["admin"].(map[string]any)["token"],
		cfg["metrics"].(map[string]any)["token"],
	}
	for _, s := range cfg["sources"].([]any) {
		src := s.(map[string]any)
		refs = append(refs, src["secret"])
		for _, d := range src["destinations"].([]any) {
			refs = append(refs, d.(map[string]any)["secret"])
		}
	}
	for _, ref := range refs {
		if s, _ := ref.(string); !strings.HasPrefix(s, "env:") {
			t.Errorf("config secret %v: want an env: reference", ref)
		}
	}
}

// TestHelmConfigChecks runs the real `hookgate check-config` on the
// config the chart renders, with every env: reference it makes set to a
// valid value, as the existing Secret would set them.
func TestHelmConfigChecks(t *testing.T) {
	r := mustRender(t, "")
	bin := buildHookgate(t)
	for _, hook := range []bool{false, true} {
		cm := r.configMap(t, hook)
		text := cm.Data["hookgate.yaml"]
		path := filepath.Join(t.TempDir(), "hookgate.yaml")
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		var env []string
		for _, m := range regexp.MustCompile(`env:([A-Za-z_][A-Za-z0-9_]*)`).FindAllStringSubmatch(text, -1) {
			v, ok := testEnv[m[1]]
			if !ok {
				t.Fatalf("ConfigMap %s names env:%s, which the test has no value for", cm.Name, m[1])
			}
			env = append(env, m[1]+"="+v)
		}
		cmd := exec.Command(bin, "check-config", "--config", path)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("ConfigMap %s: hookgate check-config: %v\n%s\n%s", cm.Name, err, out, text)
		}
		if !strings.Contains(string(out), "valid, 1 source(s)") || strings.Contains(string(out), "warning:") {
			t.Errorf("ConfigMap %s: check-config said:\n%s", cm.Name, out)
		}
	}
}

// TestHelmConfigMatchesCompose: the chart's default config is compose's
// deploy/hookgate.yaml, but for where the one destination is.
func TestHelmConfigMatchesCompose(t *testing.T) {
	helmCfg := renderedConfig(t, mustRender(t, ""))
	data, err := os.ReadFile("hookgate.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var composeCfg map[string]any
	if err := yaml.Unmarshal(data, &composeCfg); err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []map[string]any{helmCfg, composeCfg} {
		for _, s := range cfg["sources"].([]any) {
			for _, d := range s.(map[string]any)["destinations"].([]any) {
				delete(d.(map[string]any), "url")
			}
		}
	}
	if !reflect.DeepEqual(helmCfg, composeCfg) {
		h, _ := yaml.Marshal(helmCfg)
		c, _ := yaml.Marshal(composeCfg)
		t.Errorf("the chart's default config differs from deploy/hookgate.yaml:\n--- chart\n%s--- compose\n%s", h, c)
	}
}

// sqliteValues turn the default PostgreSQL config into one node's SQLite
// config, as a user's values file would: Helm merges config key by key,
// so the Redis front is removed with null.
const sqliteValues = `
config:
  database: sqlite:/var/lib/hookgate/hookgate.db
  dedupe:
    front: null
`

func TestHelmSQLiteOneNode(t *testing.T) {
	r := mustRender(t, sqliteValues+`
replicaCount: 1
persistence:
  enabled: true
`)
	want := []string{"ConfigMap", "Deployment", "PersistentVolumeClaim", "Service"}
	if got := r.kinds(); !slices.Equal(got, want) {
		t.Errorf("kinds = %v, want %v (no migration hook: serve migrates its own file; no PodDisruptionBudget for one pod)", got, want)
	}
	d := r.deployment(t)
	if *d.Spec.Replicas != 1 {
		t.Errorf("replicas = %d, want 1", *d.Spec.Replicas)
	}
	if d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("strategy = %q, want Recreate: two pods must never share the SQLite file", d.Spec.Strategy.Type)
	}
	pvc := r.one(t, "PersistentVolumeClaim", false)
	pod := d.Spec.Template.Spec
	for _, m := range pod.Containers[0].VolumeMounts {
		if m.MountPath == "/var/lib/hookgate" {
			if v := volume(t, pod, m.Name); v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != pvc.name {
				t.Errorf("/var/lib/hookgate is %+v, want the claim %s", v.VolumeSource, pvc.name)
			}
		}
	}
}

// TestHelmSpoolVolume: a spool file outside the data directory gets a
// writable emptyDir of its own (the root file system is read-only); one
// inside it is on the data volume already.
func TestHelmSpoolVolume(t *testing.T) {
	for _, c := range []struct {
		spool, wantDir string
	}{
		{"/var/spool/hookgate/spool.db", "/var/spool/hookgate"},
		{"/var/lib/hookgate/spool.db", "/var/lib/hookgate"},
		{"spool.db", "/var/lib/hookgate"},
	} {
		r := mustRender(t, "config: {dedupe: {on_store_error: spool, spool: "+c.spool+"}}\n")
		pod := r.deployment(t).Spec.Template.Spec
		var found bool
		for _, m := range pod.Containers[0].VolumeMounts {
			if m.MountPath == c.wantDir {
				found = true
				if v := volume(t, pod, m.Name); v.EmptyDir == nil || m.ReadOnly {
					t.Errorf("spool %s: %s is %+v (read-only %t), want a writable emptyDir", c.spool, c.wantDir, v.VolumeSource, m.ReadOnly)
				}
			}
		}
		if !found {
			t.Errorf("spool %s: nothing mounted at %s", c.spool, c.wantDir)
		}
		if n := len(pod.Volumes); n != 3 && c.wantDir == "/var/lib/hookgate" {
			t.Errorf("spool %s: %d volumes, want the config, data and tmp alone", c.spool, n)
		}
	}
}

// TestHelmRefuses: values that cannot work fail the render, with a
// message that says why.
func TestHelmRefuses(t *testing.T) {
	for _, c := range []struct {
		name, values, want string
	}{
		{"SQLite on two replicas", sqliteValues + "replicaCount: 2\n",
			"SQLite (config.database sqlite:/var/lib/hookgate/hookgate.db) runs on one node: set replicaCount: 1"},
		{"SQLite autoscaled", sqliteValues + "replicaCount: 1\nautoscaling: {enabled: true}\n",
			"SQLite (config.database sqlite:/var/lib/hookgate/hookgate.db) runs on one node: autoscaling needs PostgreSQL"},
		{"a literal token", "config: {admin: {token: " + strings.Repeat("a1", 32) + "}}\n",
			"config.admin.token must be a reference (env:NAME or file:PATH)"},
		{"a literal source secret", "config: {sources: [{name: app, provider: standard, secret: whsec_abc}]}\n",
			"config.sources[0].secret must be a reference (env:NAME or file:PATH)"},
		{"a literal destination secret", "config: {sources: [{name: app, provider: standard, secret: env:S, destinations: [{name: d, url: 'http://d', secret: whsec_abc}]}]}\n",
			"config.sources[0].destinations[0].secret must be a reference (env:NAME or file:PATH)"},
		{"a password in the database URL", "config: {database: 'postgres://hookgate:hunter2@db:5432/hookgate'}\n",
			"config.database holds a password: put it in the existing Secret as PGPASSWORD"},
		{"no existing Secret", "existingSecret: ''\n",
			"config names env:HOOKGATE_ADMIN_TOKEN: set existingSecret"},
		{"listening on loopback", "config: {listen: '127.0.0.1:8080'}\n",
			"config.listen 127.0.0.1:8080: listen on every interface (0.0.0.0:PORT)"},
		{"metrics not served", "config: {admin: {listen: null}, metrics: null}\nserviceMonitor: {enabled: true}\n",
			"serviceMonitor.enabled, but the config serves no /metrics"},
		{"one volume for two nodes", "persistence: {enabled: true}\n",
			"persistence.enabled with 2 replicas"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := render(c.values)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("render: %v, want an error containing %q", err, c.want)
			}
		})
	}
}

func TestHelmAutoscaling(t *testing.T) {
	if n := len(mustRender(t, "").all("HorizontalPodAutoscaler")); n != 0 {
		t.Errorf("%d HorizontalPodAutoscalers by default, want none", n)
	}
	r := mustRender(t, "autoscaling: {enabled: true, minReplicas: 2, maxReplicas: 5}\n")
	hpa := r.one(t, "HorizontalPodAutoscaler", false).typed.(*autoscalingv2.HorizontalPodAutoscaler)
	d := r.deployment(t)
	if ref := hpa.Spec.ScaleTargetRef; ref.Kind != "Deployment" || ref.Name != d.Name || ref.APIVersion != "apps/v1" {
		t.Errorf("HPA scales %+v, want the Deployment %s", ref, d.Name)
	}
	if hpa.Spec.MinReplicas == nil || *hpa.Spec.MinReplicas != 2 || hpa.Spec.MaxReplicas != 5 {
		t.Errorf("HPA replicas %v..%d, want 2..5", hpa.Spec.MinReplicas, hpa.Spec.MaxReplicas)
	}
	if len(hpa.Spec.Metrics) == 0 {
		t.Error("HPA has no metric")
	}
	if d.Spec.Replicas != nil {
		t.Errorf("the Deployment sets replicas %d beside an HPA: each upgrade would reset the scale", *d.Spec.Replicas)
	}
	if n := len(r.all("PodDisruptionBudget")); n != 1 {
		t.Errorf("%d PodDisruptionBudgets under an HPA of at least 2, want 1", n)
	}
}

func TestHelmServiceMonitor(t *testing.T) {
	if n := len(mustRender(t, "").all("ServiceMonitor")); n != 0 {
		t.Errorf("%d ServiceMonitors by default, want none", n)
	}
	r := mustRender(t, "serviceMonitor: {enabled: true}\n")
	sm := r.one(t, "ServiceMonitor", false)
	if sm.fields["apiVersion"] != "monitoring.coreos.com/v1" {
		t.Errorf("ServiceMonitor apiVersion = %v", sm.fields["apiVersion"])
	}
	var spec struct {
		Selector struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
		Endpoints []struct {
			Port          string `json:"port"`
			Path          string `json:"path"`
			Interval      string `json:"interval"`
			ScrapeTimeout string `json:"scrapeTimeout"`
			Authorization struct {
				Type        string `json:"type"`
				Credentials struct {
					Name string `json:"name"`
					Key  string `json:"key"`
				} `json:"credentials"`
			} `json:"authorization"`
		} `json:"endpoints"`
	}
	raw, _ := sigsyaml.Marshal(sm.fields["spec"])
	if err := sigsyaml.UnmarshalStrict(raw, &spec); err != nil {
		t.Fatalf("ServiceMonitor spec: %v\n%s", err, raw)
	}
	svc := r.one(t, "Service", false).typed.(*corev1.Service)
	for k, v := range spec.Selector.MatchLabels {
		if svc.Labels[k] != v {
			t.Errorf("ServiceMonitor selects %s=%s; the Service's labels are %v", k, v, svc.Labels)
		}
	}
	if len(spec.Endpoints) != 1 {
		t.Fatalf("ServiceMonitor endpoints = %+v, want 1", spec.Endpoints)
	}
	e := spec.Endpoints[0]
	if e.Port != "admin" || e.Path != "/metrics" {
		t.Errorf("ServiceMonitor scrapes port %q path %q, want admin /metrics (admin.listen is set)", e.Port, e.Path)
	}
	a := e.Authorization
	if a.Type != "Bearer" || a.Credentials.Name != "hookgate" || a.Credentials.Key != "HOOKGATE_METRICS_TOKEN" {
		t.Errorf("ServiceMonitor authorization = %+v, want Bearer from Secret hookgate key HOOKGATE_METRICS_TOKEN (metrics.token's env: name)", a)
	}

	// Without admin.listen, /metrics is on the public port, behind its token.
	r = mustRender(t, "config: {admin: {listen: null}}\nserviceMonitor: {enabled: true}\n")
	svc = r.one(t, "Service", false).typed.(*corev1.Service)
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Name != "http" {
		t.Errorf("Service ports without admin.listen = %+v, want http alone", svc.Spec.Ports)
	}
	raw, _ = sigsyaml.Marshal(r.one(t, "ServiceMonitor", false).fields["spec"])
	if err := sigsyaml.UnmarshalStrict(raw, &spec); err != nil {
		t.Fatal(err)
	}
	if spec.Endpoints[0].Port != "http" {
		t.Errorf("ServiceMonitor scrapes port %q without admin.listen, want http", spec.Endpoints[0].Port)
	}
}

// TestHelmLint runs what `helm lint --strict` runs, on the default values
// and on one SQLite node's.
func TestHelmLint(t *testing.T) {
	for name, values := range map[string]string{"default": "", "sqlite": sqliteValues + "replicaCount: 1\n"} {
		vals, err := common.ReadValues([]byte(values))
		if err != nil {
			t.Fatal(err)
		}
		l := action.NewLint()
		l.Strict = true
		l.KubeVersion = kubeVersion
		res := l.Run([]string{chartDir}, vals)
		for _, m := range res.Messages {
			t.Logf("%s: %s", name, m)
		}
		if len(res.Errors) > 0 || res.TotalChartsLinted != 1 {
			t.Errorf("%s: helm lint --strict: %d charts linted, errors %v", name, res.TotalChartsLinted, res.Errors)
		}
	}
}
