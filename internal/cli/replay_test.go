package cli_test

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/cli"
	"github.com/hookgate/hookgate/internal/inbox"
)

func TestReplayRefusesWithoutFilter(t *testing.T) {
	t.Parallel()
	d := newOpsDB(t, time.Now())
	id := d.accept("stripe", "acme", "1")
	d.finish(inbox.StatusDead, "gone", id...)
	for _, args := range [][]string{
		{"replay"},
		{"replay", "--redeliver"},
		{"replay", "--page", "10"},
	} {
		out, _, err := d.run(args...)
		if err == nil || cli.ExitCode(err) != 2 || !strings.Contains(err.Error(), "--all") {
			t.Errorf("%v: %v (exit %d), want a usage error naming --all", args, err, cli.ExitCode(err))
		}
		if out != "" {
			t.Errorf("%v printed %q", args, out)
		}
	}
	if got := d.status(id[0]); got != inbox.StatusDead {
		t.Errorf("status after refused replays = %s, want dead", got)
	}
	if out := d.mustRun("replay", "--all"); out != "replayed 1 events\n" {
		t.Errorf("replay --all = %q", out)
	}
	if got := d.status(id[0]); got != inbox.StatusReceived {
		t.Errorf("status after replay --all = %s, want received", got)
	}
}

func TestReplayBadFlags(t *testing.T) {
	t.Parallel()
	d := newOpsDB(t, time.Now())
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"replay", "--id", "abc"}, `"abc" is not an event id`},
		{[]string{"replay", "--id", "0"}, `"0" is not an event id`},
		{[]string{"replay", "--dead", "--since", "-1h"}, `--since: "-1h": want a positive duration`},
		{[]string{"replay", "--dead", "--since", "1x"}, `--since: "1x": want a positive duration`},
		{[]string{"replay", "--dead", "--page", "0"}, "--page must be positive"},
		{[]string{"replay", "--dead", "extra"}, `unexpected argument "extra"`},
	} {
		_, _, err := d.run(c.args...)
		if err == nil || cli.ExitCode(err) != 2 || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%v: %v, want a usage error containing %q", c.args, err, c.msg)
		}
	}
}

func TestReplayFilters(t *testing.T) {
	t.Parallel()
	d := newOpsDB(t, time.Now().Add(-3*time.Hour))
	old := d.accept("stripe", "acme", "1", "2")
	d.clock.Advance(150 * time.Minute)
	recent := d.accept("stripe", "globex", "3")
	shop := d.accept("shop", "acme", "4")
	d.finish(inbox.StatusDead, "410 Gone", old[0], shop[0])
	d.finish(inbox.StatusProcessed, "", old[1], recent[0])

	// Each case starts from the same statuses: it finishes what it
	// replayed again as before.
	for _, c := range []struct {
		args []string
		want []int64
	}{
		{[]string{"--dead"}, []int64{old[0], shop[0]}},
		{[]string{"--dead", "--source", "shop"}, []int64{shop[0]}},
		{[]string{"--source", "stripe"}, []int64{old[0], old[1], recent[0]}},
		{[]string{"--tenant", "globex"}, []int64{recent[0]}},
		{[]string{"--since", "1h"}, []int64{recent[0], shop[0]}},
		{[]string{"--id", strconv.FormatInt(old[1], 10), "--id", strconv.FormatInt(shop[0], 10)}, []int64{old[1], shop[0]}},
		{[]string{"--dead", "--id", strconv.FormatInt(old[1], 10)}, nil},
	} {
		before := map[int64]inbox.Status{}
		for _, id := range []int64{old[0], old[1], recent[0], shop[0]} {
			before[id] = d.status(id)
		}
		out := d.mustRun(append([]string{"replay"}, c.args...)...)
		if want := "replayed " + strconv.Itoa(len(c.want)) + " events\n"; out != want {
			t.Errorf("replay %v = %q, want %q", c.args, out, want)
		}
		for id, was := range before {
			replayed := false
			for _, w := range c.want {
				replayed = replayed || w == id
			}
			got := d.status(id)
			switch {
			case replayed && got != inbox.StatusReceived:
				t.Errorf("replay %v: event %d is %s, want received", c.args, id, got)
			case !replayed && got != was:
				t.Errorf("replay %v: event %d went from %s to %s", c.args, id, was, got)
			}
			if replayed {
				d.finish(was, "restored", id)
			}
		}
	}
}

func TestReplayRedeliver(t *testing.T) {
	t.Parallel()
	d := newOpsDB(t, time.Now())
	id := d.accept("stripe", "acme", "1")[0]
	d.route(id, "app", "ledger")
	d.attempt("stripe", "app", id, inbox.DeliveryDelivered, 204, "")
	d.attempt("stripe", "ledger", id, inbox.DeliveryDelivered, 200, "")
	delivered := func() []string {
		ds, err := d.store.Deliveries(t.Context(), []int64{id})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for name, dl := range ds[id] {
			if dl.Status == inbox.DeliveryDelivered {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		return names
	}
	d.mustRun("replay", "--source", "stripe")
	if got := delivered(); !slices.Equal(got, []string{"app", "ledger"}) {
		t.Errorf("replay without --redeliver: delivered to %v, want app and ledger kept", got)
	}
	d.mustRun("replay", "--source", "stripe", "--redeliver", "--destination", "ledger")
	if got := delivered(); !slices.Equal(got, []string{"app"}) {
		t.Errorf("replay --redeliver --destination ledger: delivered to %v, want only app kept", got)
	}
	d.mustRun("replay", "--source", "stripe", "--redeliver")
	if got := delivered(); len(got) != 0 {
		t.Errorf("replay --redeliver: delivered to %v, want none kept", got)
	}
}

// TestReplayDestinationNeedsRedeliver: --destination alone would look
// like a redelivery and be none, so it is refused and nothing changes.
func TestReplayDestinationNeedsRedeliver(t *testing.T) {
	t.Parallel()
	d := newOpsDB(t, time.Now())
	id := d.accept("stripe", "acme", "1")
	d.finish(inbox.StatusDead, "gone", id...)
	out, _, err := d.run("replay", "--dead", "--destination", "ledger")
	if err == nil || cli.ExitCode(err) != 2 || !strings.Contains(err.Error(), "--destination ledger") ||
		!strings.Contains(err.Error(), "add --redeliver") {
		t.Errorf("replay --dead --destination ledger = %v (exit %d), want a usage error asking for --redeliver", err, cli.ExitCode(err))
	}
	if out != "" || d.status(id[0]) != inbox.StatusDead {
		t.Errorf("refused replay printed %q, event is %s; want nothing, dead", out, d.status(id[0]))
	}
}

// TestReplayNotTerminal: a file that is no terminal gets only the final
// count, however many pages the replay takes.
func TestReplayNotTerminal(t *testing.T) {
	t.Parallel()
	d := newOpsDB(t, time.Now())
	ids := d.accept("stripe", "acme", "1", "2", "3", "4", "5")
	d.finish(inbox.StatusDead, "gone", ids...)
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if stderr, err := d.runTo(f, "replay", "--dead", "--page", "2"); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	out, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "replay", string(out))
}

func TestReplayStoreError(t *testing.T) {
	t.Parallel()
	// A directory is no database file.
	d := &opsDB{t: t, path: t.TempDir()}
	if _, _, err := d.run("replay", "--dead"); err == nil || cli.ExitCode(err) != 1 {
		t.Errorf("replay on a directory = %v, want an error with exit code 1", err)
	}
}

// BenchmarkReplay replays every event of a filled inbox through the
// command, one page per transaction, and reports events/s.
func BenchmarkReplay(b *testing.B) {
	const n, batch = 20000, 1000
	d := newOpsDB(b, time.Now())
	for lo := 0; lo < n; lo += batch {
		ids := make([]string, batch)
		for i := range ids {
			ids[i] = strconv.Itoa(lo + i)
		}
		d.accept("stripe", "acme", ids...)
	}
	want := "replayed " + strconv.Itoa(n) + " events\n"
	for b.Loop() {
		if out := d.mustRun("replay", "--all", "--page", "500"); out != want {
			b.Fatalf("replay = %q, want %q", out, want)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
