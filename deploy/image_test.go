package deploy_test

import (
	"bufio"
	"encoding/json"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// finalStage is what the Dockerfile's last stage says the image is.
type finalStage struct {
	from        string
	user        string
	workdir     string
	volumes     []string
	expose      []string
	healthcheck []string // after CMD, in JSON form
	entrypoint  []string
	cmd         []string
}

// readDockerfile reads ../Dockerfile: its build command, and the
// directives of its final stage. Only the forms the Dockerfile uses are
// read (JSON arrays for commands, one value for VOLUME).
func readDockerfile(t *testing.T) (build string, st finalStage) {
	t.Helper()
	data, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(data), "\\\n", " ")
	jsonList := func(directive, s string) []string {
		var out []string
		if err := json.Unmarshal([]byte(s), &out); err != nil {
			t.Fatalf("Dockerfile: %s %s: want the JSON form: %v", directive, s, err)
		}
		return out
	}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		directive, rest, _ := strings.Cut(line, " ")
		rest = strings.TrimSpace(rest)
		switch strings.ToUpper(directive) {
		case "FROM":
			st = finalStage{from: strings.Fields(rest)[0]}
		case "RUN":
			if strings.Contains(rest, "go build") {
				build = rest
			}
		case "USER":
			st.user = rest
		case "WORKDIR":
			st.workdir = rest
		case "VOLUME":
			st.volumes = append(st.volumes, rest)
		case "EXPOSE":
			st.expose = append(st.expose, strings.Fields(rest)...)
		case "HEALTHCHECK":
			_, cmd, ok := strings.Cut(rest, "CMD ")
			if !ok {
				t.Fatalf("Dockerfile: HEALTHCHECK %s: no CMD", rest)
			}
			st.healthcheck = jsonList("HEALTHCHECK CMD", strings.TrimSpace(cmd))
		case "ENTRYPOINT":
			st.entrypoint = jsonList("ENTRYPOINT", rest)
		case "CMD":
			st.cmd = jsonList("CMD", rest)
		}
	}
	return build, st
}

// TestDockerfile checks what issue 21 asks of the image and what the
// test machine cannot build: a static, trimmed, stamped binary, and a
// final stage with nothing else in it that runs as a numeric non-root
// user and answers its own healthcheck.
func TestDockerfile(t *testing.T) {
	build, st := readDockerfile(t)
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "-X github.com/hookgate/hookgate/internal/cli.version=${VERSION}", "./cmd/hookgate"} {
		if !strings.Contains(build, want) {
			t.Errorf("the build stage's go build lacks %q: %s", want, build)
		}
	}
	if st.from != "scratch" && !strings.HasPrefix(st.from, "gcr.io/distroless/static") {
		t.Errorf("final stage FROM %s, want scratch or distroless static", st.from)
	}
	uid, _, _ := strings.Cut(st.user, ":")
	if n, err := strconv.Atoi(uid); err != nil || n == 0 {
		t.Errorf("USER %q, want a numeric non-root uid (a name needs /etc/passwd, and runAsNonRoot a number)", st.user)
	}
	if st.workdir != "/var/lib/hookgate" || !slices.Equal(st.volumes, []string{"/var/lib/hookgate"}) {
		t.Errorf("WORKDIR %q, VOLUME %q: want the SQLite file's directory, /var/lib/hookgate, for both", st.workdir, st.volumes)
	}
	if !slices.Equal(st.expose, []string{"8080"}) {
		t.Errorf("EXPOSE %v, want 8080", st.expose)
	}
	if !slices.Equal(st.healthcheck, []string{"/hookgate", "healthcheck"}) {
		t.Errorf("HEALTHCHECK CMD %q, want /hookgate healthcheck", st.healthcheck)
	}
	if !slices.Equal(st.entrypoint, []string{"/hookgate"}) || len(st.cmd) == 0 || st.cmd[0] != "serve" {
		t.Errorf("ENTRYPOINT %q CMD %q, want /hookgate serve …", st.entrypoint, st.cmd)
	}
	// serve's own default, 127.0.0.1, is unreachable from outside a container.
	if i := slices.Index(st.cmd, "--listen"); i < 0 || i+1 >= len(st.cmd) || !strings.HasPrefix(st.cmd[i+1], "0.0.0.0:") {
		t.Errorf("CMD %q does not listen on every interface", st.cmd)
	}
}

// imageConfig is the part of `buildah inspect --type image` read here:
// the image's Docker config.
type imageConfig struct {
	Docker struct {
		Config struct {
			User         string
			WorkingDir   string
			Volumes      map[string]struct{}
			ExposedPorts map[string]struct{}
			Entrypoint   []string
			Cmd          []string
			Env          []string
			Healthcheck  *struct{ Test []string }
		} `json:"config"`
	}
}

// TestImage runs the binary of an image built by deploy/image.sh from its
// exported filesystem: chrooted there, as the image's user, in its
// working directory, with its entrypoint and command, as a runtime
// would, but on this machine's network. Only image.sh sets its inputs.
func TestImage(t *testing.T) {
	rootfs, inspect := os.Getenv("HOOKGATE_IMAGE_ROOTFS"), os.Getenv("HOOKGATE_IMAGE_INSPECT")
	if rootfs == "" || inspect == "" {
		t.Skip("no image: deploy/image.sh builds one and runs this test on it")
	}
	if os.Geteuid() != 0 {
		t.Fatal("running the image's binary chrooted needs root")
	}
	data, err := os.ReadFile(inspect)
	if err != nil {
		t.Fatal(err)
	}
	var img imageConfig
	if err := json.Unmarshal(data, &img); err != nil {
		t.Fatalf("%s: %v", inspect, err)
	}
	cfg := img.Docker.Config

	// The image is the Dockerfile's final stage.
	_, st := readDockerfile(t)
	if cfg.User != st.user || cfg.WorkingDir != st.workdir ||
		!slices.Equal(cfg.Entrypoint, st.entrypoint) || !slices.Equal(cfg.Cmd, st.cmd) {
		t.Errorf("image user %q workdir %q entrypoint %q cmd %q; the Dockerfile says %q %q %q %q",
			cfg.User, cfg.WorkingDir, cfg.Entrypoint, cfg.Cmd, st.user, st.workdir, st.entrypoint, st.cmd)
	}
	if _, ok := cfg.Volumes[st.workdir]; !ok || len(cfg.Volumes) != 1 {
		t.Errorf("image volumes %v, want %s", cfg.Volumes, st.workdir)
	}
	if _, ok := cfg.ExposedPorts["8080/tcp"]; !ok || len(cfg.ExposedPorts) != 1 {
		t.Errorf("image exposes %v, want 8080/tcp", cfg.ExposedPorts)
	}
	if cfg.Healthcheck == nil || !slices.Equal(cfg.Healthcheck.Test, append([]string{"CMD"}, st.healthcheck...)) {
		t.Fatalf("image healthcheck %+v, want CMD %q", cfg.Healthcheck, st.healthcheck)
	}

	// Nothing in it but the binary, the CA certificates and the two
	// directories, the state one owned by the image's user.
	var files []string
	err = filepath.WalkDir(rootfs, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(rootfs, path)
		if !d.IsDir() {
			files = append(files, "/"+rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/etc/ssl/certs/ca-certificates.crt", "/hookgate"}
	if !slices.Equal(files, want) {
		t.Errorf("the image's files are %q, want %q", files, want)
	}
	uid, gid := ids(t, cfg.User)
	if info, err := os.Stat(filepath.Join(rootfs, cfg.WorkingDir)); err != nil {
		t.Fatal(err)
	} else if s := info.Sys().(*syscall.Stat_t); s.Uid != uid || s.Gid != gid {
		t.Errorf("%s is owned by %d:%d, want the image's user %s", cfg.WorkingDir, s.Uid, s.Gid, cfg.User)
	}

	run := func(args ...string) *exec.Cmd {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir = cfg.WorkingDir // after the chroot, as a runtime does
		cmd.Env = cfg.Env
		cmd.SysProcAttr = &syscall.SysProcAttr{
			Chroot:     rootfs,
			Credential: &syscall.Credential{Uid: uid, Gid: gid, Groups: []uint32{}},
		}
		return cmd
	}

	// serve, as the image starts it: the demo on SQLite in the volume.
	serve := run(append(slices.Clone(cfg.Entrypoint), cfg.Cmd...)...)
	stdout, err := serve.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	serve.Stderr = &stderr
	if err := serve.Start(); err != nil {
		t.Fatalf("start %q in %s: %v", serve.Args, rootfs, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- serve.Wait() }()
	t.Cleanup(func() {
		serve.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			serve.Process.Kill()
			<-exited
		}
	})
	listening := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "hookgate listening on ") {
				listening <- sc.Text()
			}
		}
	}()
	select {
	case line := <-listening:
		t.Log(line)
	case err := <-exited:
		t.Fatalf("serve exited: %v\n%s", err, stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("serve printed no listening line in 30 s\n%s", stderr.String())
	}

	resp, err := http.Get("http://127.0.0.1:8080/healthz")
	if err != nil {
		t.Fatalf("GET /healthz: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /healthz: %s", resp.Status)
	}

	// The image's HEALTHCHECK, run as the runtime runs it.
	hc := run(cfg.Healthcheck.Test[1:]...)
	if out, err := hc.CombinedOutput(); err != nil {
		t.Errorf("HEALTHCHECK %q: %v\n%s", hc.Args, err, out)
	} else {
		t.Logf("HEALTHCHECK %q: %s", hc.Args, strings.TrimSpace(string(out)))
	}

	// The SQLite file is in the volume, written by the image's user.
	db := filepath.Join(rootfs, cfg.WorkingDir, "hookgate.db")
	if info, err := os.Stat(db); err != nil {
		t.Errorf("serve made no database in the volume: %v", err)
	} else if s := info.Sys().(*syscall.Stat_t); s.Uid != uid {
		t.Errorf("%s is owned by uid %d, want %d", db, s.Uid, uid)
	}
}

// ids reads a numeric USER, uid:gid or uid alone (gid the same).
func ids(t *testing.T, user string) (uid, gid uint32) {
	t.Helper()
	u, g, ok := strings.Cut(user, ":")
	if !ok {
		g = u
	}
	un, err1 := strconv.ParseUint(u, 10, 32)
	gn, err2 := strconv.ParseUint(g, 10, 32)
	if err1 != nil || err2 != nil || un == 0 {
		t.Fatalf("image user %q: want a numeric non-root uid[:gid]", user)
	}
	return uint32(un), uint32(gn)
}
