package cli_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/cli"
	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/pgtest"
	"github.com/hookgate/hookgate/internal/source"
	"github.com/hookgate/hookgate/internal/spool"
	"github.com/hookgate/hookgate/internal/sqlitedb"
)

const githubSecret = "github-secret-for-spool-tests"

// spoolNodeConfig writes the configuration of a node on db that spools to
// spoolPath, with a GitHub source (whose replay guard is on: the delivery
// id is not signed) and the standard app source, and returns its path.
func spoolNodeConfig(t *testing.T, db, spoolPath string, i int) string {
	t.Helper()
	dir := t.TempDir()
	secrets := map[string]string{"app": crashSecret, "gh": githubSecret}
	for name, secret := range secrets {
		if err := os.WriteFile(dir+"/"+name+".secret", []byte(secret), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg := fmt.Sprintf(`listen: 127.0.0.1:0
%sworkers: 2
metrics:
  public: true
dedupe:
  on_store_error: spool
  spool: %s
sources:
  - name: app
    provider: standard
    secret: file:%s/app.secret
  - name: gh
    provider: github
    secret: file:%s/gh.secret
`, nodeDatabase(t, db, i), spoolPath, dir, dir)
	path := dir + "/node.yaml"
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// sendGitHub sends body to the gh source of the node at base, signed, as
// delivery id; it returns the status.
func sendGitHub(t *testing.T, base string, body []byte, id string) int {
	t.Helper()
	src, err := source.New(config.Source{Name: "gh", Provider: "github", Secret: config.NewSecret(githubSecret)}, config.Default().Dedupe)
	if err != nil {
		t.Fatal(err)
	}
	return postSigned(t, src.Signer(), base+"/in/gh", body, http.Header{
		"X-Github-Delivery": {id}, "X-Github-Event": {"issues"}})
}

// spoolReports are `hookgate reconcile --json` of the spools at paths.
type spoolReports struct {
	Spools []struct {
		Path                                   string
		Spooled, Drained, Waiting, Quarantined int64
		Duplicates                             int64 `json:"duplicates_at_drain"`
		Rows                                   []struct {
			Seq    int64
			Reason string
			Bytes  []byte
		} `json:"quarantined_rows"`
	}
}

func reconcile(t *testing.T, paths ...string) spoolReports {
	t.Helper()
	args := []string{"reconcile", "--json"}
	for _, p := range paths {
		args = append(args, "--spool", p)
	}
	var out, errb bytes.Buffer
	if err := cli.Run(t.Context(), args, strings.NewReader(""), &out, &errb); err != nil {
		t.Fatalf("reconcile: %v\n%s", err, errb.String())
	}
	var rep spoolReports
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("reconcile --json: %v\n%s", err, out.Bytes())
	}
	return rep
}

// G2 through the spool: PostgreSQL is cut, and one signed GitHub body is
// replayed under new X-GitHub-Delivery ids (the delivery id is not
// signed), five times to one node and once to another. The first node
// answers its first copy 202 and the replays 200 (its spool holds the
// digest, as the database would); the second node's spool cannot know
// the first's, and answers 202. Once the database is back both spools
// drain and exactly one event is stored: the second copy is a duplicate
// at drain, as `hookgate reconcile` reports.
func TestSpoolKeepsTheReplayGuard(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts hookgate processes")
	}
	db := pgtest.New(t)
	proxy, viaProxy := pgtest.NewProxy(t, db)
	dir := t.TempDir()
	spools := []string{dir + "/spool0.db", dir + "/spool1.db"}
	ps := []*process{
		startServe(t, "--config", spoolNodeConfig(t, viaProxy, spools[0], 0)),
		startServe(t, "--config", spoolNodeConfig(t, viaProxy, spools[1], 1)),
	}
	store := openDB(t, db)

	proxy.Cut()
	body := []byte(`{"action":"opened","issue":{"number":7,"title":"replayed"}}`)
	for i := range 5 {
		want := http.StatusOK
		if i == 0 {
			want = http.StatusAccepted
		}
		if st := sendGitHub(t, ps[0].addr, body, fmt.Sprintf("delivery-%d", i)); st != want {
			t.Fatalf("copy %d to node 0 while spooling: %d, want %d", i, st, want)
		}
	}
	if st, body := readyz(t, ps[0].addr); st != http.StatusOK || !strings.HasPrefix(body, "degraded: spooling") {
		t.Fatalf("node 0 /readyz: %d %q, want 200 degraded: spooling", st, body)
	}
	if st := sendGitHub(t, ps[1].addr, body, "delivery-5"); st != http.StatusAccepted {
		t.Fatalf("the copy to node 1 while spooling: %d, want 202", st)
	}

	proxy.Restore()
	var rep spoolReports
	eventually(t, "both spools to drain", func() bool {
		rep = reconcile(t, spools...)
		return rep.Spools[0].Waiting == 0 && rep.Spools[1].Waiting == 0
	})
	var spooled, drained, dupes int64
	for _, s := range rep.Spools {
		spooled, drained, dupes = spooled+s.Spooled, drained+s.Drained, dupes+s.Duplicates
	}
	if spooled != 2 || drained != 2 || dupes != 1 {
		t.Fatalf("reconcile: %+v; want 2 spooled (one per node), 2 drained, 1 duplicate at drain", rep)
	}
	var stored []inbox.Event
	eachStored(t, store, func(e inbox.Event) {
		if e.Source == "gh" {
			stored = append(stored, e)
		}
	})
	if len(stored) != 1 {
		t.Fatalf("%d GitHub events stored, want 1", len(stored))
	}
	for _, p := range ps {
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		p.cmd.Wait()
	}
}

// G4: a spooled event that cannot be decoded (a damaged spool file) does
// not stop the drain. A node started on such a file with its database up
// quarantines the row and drains the others; /readyz answers 200
// "degraded: spool quarantine", hookgate_spool_quarantined is 1, and
// `hookgate reconcile` lists the row with its bytes.
func TestSpoolQuarantinesACorruptRow(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts hookgate processes")
	}
	db := pgtest.New(t)
	path := t.TempDir() + "/spool.db"
	sp, err := spool.Open(t.Context(), path, spool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"evt_1", "evt_damaged", "evt_2", "evt_3"} {
		if _, err := sp.Put(t.Context(), []inbox.Item{spoolItem(id)}); err != nil {
			t.Fatal(err)
		}
	}
	sp.Close()
	raw, err := sqlitedb.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	garbage := []byte("\x13\x7fdamaged on disk\x00")
	h := spoolItem("evt_damaged").Event.Hash
	if _, err := raw.Exec(`UPDATE spool SET item = ? WHERE hash = ?`, garbage, h[:]); err != nil {
		t.Fatal(err)
	}
	raw.Close()

	p := startServe(t, "--config", spoolNodeConfig(t, db, path, 0))
	store := openDB(t, db)
	eventually(t, "the readable events to drain", func() bool { return storedRows(t, store) == 3 })
	if st, body := readyz(t, p.addr); st != http.StatusOK || !strings.HasPrefix(body, "degraded: spool quarantine") {
		t.Fatalf("/readyz: %d %q, want 200 degraded: spool quarantine", st, body)
	}
	if v := metric(t, p.addr, "hookgate_spool_quarantined"); v != "1" {
		t.Fatalf("hookgate_spool_quarantined %q, want 1", v)
	}
	rep := reconcile(t, path)
	if r := rep.Spools[0]; r.Quarantined != 1 || r.Drained != 3 || r.Waiting != 0 || len(r.Rows) != 1 || !bytes.Equal(r.Rows[0].Bytes, garbage) {
		t.Fatalf("reconcile: %+v; want 3 drained, the damaged row quarantined with its bytes", r)
	}
	var out bytes.Buffer
	if err := cli.Run(t.Context(), []string{"reconcile", "--spool", path}, strings.NewReader(""), &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("bytes %q", garbage); !strings.Contains(out.String(), want) {
		t.Fatalf("reconcile text does not show the row's bytes (%s):\n%s", want, out.String())
	}
}

// One node per spool file: a second `hookgate serve` on a spool file
// that a running node holds refuses to start, naming the file and the
// holder's pid; the first goes on serving.
func TestSpoolFileHasOneNode(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts hookgate processes")
	}
	db := pgtest.New(t)
	path := t.TempDir() + "/spool.db"
	first := startServe(t, "--config", spoolNodeConfig(t, db, path, 0))
	second := command(t, "serve", "--config", spoolNodeConfig(t, db, path, 1))
	var stderr bytes.Buffer
	second.Stderr = &stderr
	stdout, err := second.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := second.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { second.Process.Kill() }) // were it to start
	listening := make(chan bool, 1)
	go func() {
		lines := bufio.NewScanner(stdout)
		for lines.Scan() {
			if listenLine.MatchString(lines.Text()) {
				listening <- true
				io.Copy(io.Discard, stdout)
				return
			}
		}
		listening <- false
	}()
	select {
	case started := <-listening:
		if started {
			t.Fatal("a second node on the spool file started listening")
		}
		if err := second.Wait(); err == nil {
			t.Fatal("a second node on the spool file exited 0")
		}
	case <-time.After(60 * time.Second):
		t.Fatal("a second node on the spool file neither failed nor stopped within 60s")
	}
	msg := stderr.String()
	if !strings.Contains(msg, path) || !strings.Contains(msg, fmt.Sprintf("pid %d", first.cmd.Process.Pid)) {
		t.Fatalf("second node's error does not name %s and pid %d:\n%s", path, first.cmd.Process.Pid, msg)
	}
	if st, body := readyz(t, first.addr); st != http.StatusOK {
		t.Fatalf("first node after the refusal: %d %q", st, body)
	}
}
