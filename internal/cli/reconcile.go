package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/spool"
)

func init() {
	register("reconcile", "report what a database outage did: events spooled per node, drained, found duplicate at drain, still waiting", runReconcile)
}

// spoolFiles is the repeatable --spool flag.
type spoolFiles []string

func (s *spoolFiles) String() string     { return strings.Join(*s, ",") }
func (s *spoolFiles) Set(v string) error { *s = append(*s, v); return nil }

// reconcileReport is what `hookgate reconcile` reports: today the nodes'
// spools. A reconciliation with the providers (fetching the events a
// provider says it sent and comparing them with the inbox) would report
// beside them.
type reconcileReport struct {
	Spools []spoolReport `json:"spools"`
}

// spoolReport is one node's spool.
type spoolReport struct {
	Path string `json:"path"`
	// Spooled counts the events kept (waiting, or drained within their
	// window); Drained those moved to the database, of which Duplicates
	// were already there (not processed again); Waiting those not drained.
	Spooled       int64      `json:"spooled"`
	Drained       int64      `json:"drained"`
	Duplicates    int64      `json:"duplicates_at_drain"`
	Waiting       int64      `json:"waiting"`
	Quarantined   int64      `json:"quarantined"`
	FirstSpooled  *time.Time `json:"first_spooled,omitempty"`
	LastSpooled   *time.Time `json:"last_spooled,omitempty"`
	LastDrained   *time.Time `json:"last_drained,omitempty"`
	OldestWaiting *time.Time `json:"oldest_waiting,omitempty"`
	// Rows are the quarantined events, with their bytes (base64 in
	// JSON) for an operator to recover them.
	Rows []quarantinedRow `json:"quarantined_rows,omitempty"`
}

// quarantinedRow is a spooled event that cannot be decoded.
type quarantinedRow struct {
	Seq       int64     `json:"seq"`
	SpooledAt time.Time `json:"spooled_at"`
	Reason    string    `json:"reason"`
	Bytes     []byte    `json:"bytes"`
}

func runReconcile(ctx context.Context, args []string, std IO) error {
	fs := newFlags(doc{
		name: "reconcile",
		text: `Report what a database outage did, from the nodes' spools (dedupe.on_store_error:
spool): how many events each node spooled while the database could not be
reached, how many were drained into it since, how many of those the database
already held (another node had stored them, or they arrived before the
outage: recorded as duplicates, never processed again), how many still
wait, and the events that cannot be decoded (quarantined: kept aside with
their bytes, not drained; each needs an operator). Give one --spool per
node, or a --config whose dedupe.spool is read; a node may be running.`,
		examples: []string{"reconcile --config hookgate.yaml", "reconcile --spool node1-spool.db --spool node2-spool.db --json"},
	}, std)
	configPath := fs.String("config", os.Getenv("HOOKGATE_CONFIG"), "config `FILE` whose dedupe.spool is read (default $HOOKGATE_CONFIG)")
	var files spoolFiles
	fs.Var(&files, "spool", "a node's spool `FILE` (repeat for several nodes; default the config's dedupe.spool)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if err := fs.parse(args, false); err != nil {
		return err
	}
	if len(files) == 0 {
		if *configPath == "" {
			return usagef("reconcile: pass --spool FILE, or --config with dedupe.spool set")
		}
		cfg, err := config.LoadDatabase(*configPath)
		if err != nil {
			return err
		}
		if cfg.Dedupe.Spool == "" {
			return fmt.Errorf("%s sets no dedupe.spool (on_store_error: spool is off): nothing was spooled", *configPath)
		}
		files = spoolFiles{cfg.Dedupe.Spool}
	}
	var rep reconcileReport
	for _, path := range files {
		r, err := readSpool(ctx, path)
		if err != nil {
			return err
		}
		rep.Spools = append(rep.Spools, r)
	}
	if *asJSON {
		enc := json.NewEncoder(std.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return printReconcile(std, rep)
}

// readSpool reads the report of the spool at path, which must exist:
// opening a path that is not there would create an empty spool.
func readSpool(ctx context.Context, path string) (spoolReport, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return spoolReport{}, fmt.Errorf("no spool at %s: this node has not spooled (or the path is wrong)", path)
	}
	sp, err := spool.Open(ctx, path, spool.Options{Report: true})
	if err != nil {
		return spoolReport{}, err
	}
	defer sp.Close()
	st, err := sp.Stats(ctx)
	if err != nil {
		return spoolReport{}, err
	}
	qs, err := sp.Quarantined(ctx)
	if err != nil {
		return spoolReport{}, err
	}
	r := spoolReport{
		Path: path, Spooled: st.Spooled, Drained: st.Drained, Duplicates: st.Duplicates, Waiting: st.Waiting,
		Quarantined:  st.Quarantined,
		FirstSpooled: timeOrNil(st.FirstSpooled), LastSpooled: timeOrNil(st.LastSpooled),
		LastDrained: timeOrNil(st.LastDrained), OldestWaiting: timeOrNil(st.OldestWaiting),
	}
	for _, q := range qs {
		r.Rows = append(r.Rows, quarantinedRow{Seq: q.Seq, SpooledAt: q.SpooledAt.UTC(), Reason: q.Reason, Bytes: q.Item})
	}
	return r, nil
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

func printReconcile(std IO, rep reconcileReport) error {
	when := func(t *time.Time) string {
		if t == nil {
			return "-"
		}
		return t.Format(time.RFC3339)
	}
	for i, r := range rep.Spools {
		if i > 0 {
			fmt.Fprintln(std.Stdout)
		}
		fmt.Fprintf(std.Stdout, "spool %s\n", escape(r.Path))
		t := newIndentedTable(std.Stdout, "  ")
		t.row("spooled", strconv.FormatInt(r.Spooled, 10), "first "+when(r.FirstSpooled)+", last "+when(r.LastSpooled))
		t.row("drained", strconv.FormatInt(r.Drained, 10), "last "+when(r.LastDrained))
		t.row("duplicates", strconv.FormatInt(r.Duplicates, 10), "already in the database at drain: not processed again")
		t.row("waiting", strconv.FormatInt(r.Waiting, 10), "oldest "+when(r.OldestWaiting))
		t.row("quarantined", strconv.FormatInt(r.Quarantined, 10), "cannot be decoded: kept aside, not drained")
		if err := t.flush(); err != nil {
			return err
		}
		for _, q := range r.Rows {
			// %q shows the bytes as a Go string: printable text as it
			// is (a payload is readable), the rest escaped.
			fmt.Fprintf(std.Stdout, "  quarantined row %d, spooled %s: %s\n    bytes %q\n",
				q.Seq, q.SpooledAt.Format(time.RFC3339), escape(q.Reason), q.Bytes)
		}
	}
	return nil
}

var _ flag.Value = (*spoolFiles)(nil)
