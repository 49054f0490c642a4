package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/provider"
	"github.com/hookgate/hookgate/internal/reconcile"
	"github.com/hookgate/hookgate/internal/source"
	"github.com/hookgate/hookgate/internal/spool"
)

func init() {
	register("reconcile", "recover the events a provider sent but hookgate never got (--source S), and report spools and reconciliations", runReconcile)
}

// spoolFiles is the repeatable --spool flag.
type spoolFiles []string

func (s *spoolFiles) String() string     { return strings.Join(*s, ",") }
func (s *spoolFiles) Set(v string) error { *s = append(*s, v); return nil }

// reconcileReport is what `hookgate reconcile` reports: the nodes'
// spools, and the reconciliation of each source with its provider.
type reconcileReport struct {
	Spools  []spoolReport         `json:"spools"`
	Sources []sourceReconcileView `json:"sources,omitempty"`
}

// sourceReconcileView is one source's reconciliation.
type sourceReconcileView struct {
	Source   string `json:"source"`
	Provider string `json:"provider"`
	// Checkpoint is when the last complete run started; absent before
	// the first.
	Checkpoint *time.Time `json:"checkpoint,omitempty"`
	// Run is the run this command made; DryRun when it stored nothing.
	Run    *runView `json:"run,omitempty"`
	DryRun bool     `json:"dry_run,omitempty"`
	// Last is the last run that ended; Interrupted one that a stop cut
	// short, which the next scheduled run resumes.
	Last        *runView `json:"last,omitempty"`
	Interrupted *runView `json:"interrupted,omitempty"`
}

// runView is one reconciliation run.
type runView struct {
	Started    *time.Time `json:"started,omitempty"`
	Ended      *time.Time `json:"ended,omitempty"`
	Since      *time.Time `json:"since,omitempty"`
	Listed     int64      `json:"listed"`
	AlreadyHad int64      `json:"already_had"`
	Recovered  int64      `json:"recovered"`
	Failed     int64      `json:"failed"`
	Error      string     `json:"error,omitempty"`
	// ResumeAfter is the provider's id of the last event of the last
	// page stored, for an interrupted run.
	ResumeAfter string `json:"resume_after,omitempty"`
}

func newRunView(r inbox.RunState) *runView {
	if r.Started.IsZero() {
		return nil
	}
	return &runView{Started: timeOrNil(r.Started), Ended: timeOrNil(r.Ended), Since: timeOrNil(r.Since),
		Listed: r.Listed, AlreadyHad: r.Had, Recovered: r.Recovered, Failed: r.Failed, Error: r.Error, ResumeAfter: r.After}
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
		text: `With --source, reconcile that source with its provider now: list the
events the provider says it sent (since the source's checkpoint less its
overlap, or the last --since), key each as its webhook was keyed, and
accept those the inbox does not have, marked as recovered (via
reconcile); they are then processed and delivered like any other. Those
whose webhook came are counted as already had. --dry-run lists and
counts without storing anything. The source's reconcile block (provider
credential, rate) is read from --config.

Then report, from the nodes' spools (dedupe.on_store_error: spool), what
a database outage did: how many events each node spooled while the
database could not be reached, how many were drained into it since, how
many of those the database already held (recorded as duplicates, never
processed again), how many still wait, and the events that cannot be
decoded (quarantined: kept aside with their bytes, not drained); and,
for each source with a reconcile block, its checkpoint and what its last
run listed, already had, recovered and failed. Give one --spool per
node, or a --config whose dedupe.spool is read; a node may be running.`,
		examples: []string{"reconcile --config hookgate.yaml", "reconcile --config hookgate.yaml --source stripe --since 72h --dry-run",
			"reconcile --spool node1-spool.db --spool node2-spool.db --json"},
	}, std)
	configPath := fs.String("config", os.Getenv("HOOKGATE_CONFIG"), "config `FILE` whose dedupe.spool and sources are read (default $HOOKGATE_CONFIG)")
	var files spoolFiles
	fs.Var(&files, "spool", "a node's spool `FILE` (repeat for several nodes; default the config's dedupe.spool)")
	sourceName := fs.String("source", "", "reconcile the `SOURCE` with its provider now")
	since := fs.String("since", "", "with --source, list the events created in the last `DURATION` (72h, 7d) instead of since the checkpoint")
	dryRun := fs.Bool("dry-run", false, "with --source, list and count, store nothing")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if err := fs.parse(args, false); err != nil {
		return err
	}
	var window time.Duration
	if *since != "" {
		d, err := config.ParseDuration(*since)
		if err != nil || d <= 0 {
			return usagef("reconcile: --since %q: want a positive duration such as 72h", *since)
		}
		window = d
	}
	switch {
	case *sourceName == "" && (*since != "" || *dryRun):
		return usagef("reconcile: --since and --dry-run need --source")
	case *sourceName != "" && *configPath == "":
		return usagef("reconcile: --source needs --config, which holds the source's reconcile block")
	case len(files) == 0 && *configPath == "":
		return usagef("reconcile: pass --spool FILE, or --config with dedupe.spool set")
	}
	var (
		cfg    config.Config
		err    error
		runErr error
		rep    reconcileReport
	)
	if *configPath != "" {
		// A run needs the source's credentials; a report reads the
		// database alone.
		load := config.LoadDatabase
		if *sourceName != "" {
			load = config.Load
		}
		if cfg, err = load(*configPath); err != nil {
			return err
		}
	}
	reconciled := slices.ContainsFunc(cfg.Sources, func(s config.Source) bool { return s.Reconcile != nil })
	if len(files) == 0 && cfg.Dedupe.Spool != "" {
		files = spoolFiles{cfg.Dedupe.Spool}
	}
	if len(files) == 0 && !reconciled {
		return fmt.Errorf("%s sets no dedupe.spool (on_store_error: spool is off) and no source has a reconcile block: nothing to report", *configPath)
	}
	if reconciled {
		if rep.Sources, runErr = reconcileSources(ctx, cfg, *sourceName, reconcile.RunOptions{Since: window, DryRun: *dryRun}, std); rep.Sources == nil {
			return runErr
		}
	}
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
		if err := enc.Encode(rep); err != nil {
			return err
		}
		return runErr
	}
	if err := printReconcile(std, rep); err != nil {
		return err
	}
	return runErr
}

// reconcileSources runs the reconciliation of the source called run (none
// when ""), then reads the checkpoint of every source with a reconcile
// block. The error is the run's; the views are nil when nothing could be
// read.
func reconcileSources(ctx context.Context, cfg config.Config, run string, o reconcile.RunOptions, std IO) ([]sourceReconcileView, error) {
	var runner *reconcile.Runner
	var sc config.Source
	if run != "" {
		i := slices.IndexFunc(cfg.Sources, func(s config.Source) bool { return s.Name == run })
		switch {
		case i < 0:
			return nil, usagef("reconcile: no source %q in the config", run)
		case cfg.Sources[i].Reconcile == nil:
			return nil, fmt.Errorf("source %s has no reconcile block: add one (see docs/reconcile.md)", run)
		}
		sc = cfg.Sources[i]
	}
	log := slog.New(slog.NewTextHandler(std.Stderr, nil))
	store, err := (&storeOpts{}).openConfig(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	cps, ok := store.(inbox.Reconciliations)
	if !ok {
		return nil, reconcile.ErrNoCheckpoints
	}
	var (
		runs   = map[string]inbox.RunState{}
		runErr error
	)
	if run != "" {
		src, err := source.New(sc, cfg.Dedupe)
		if err != nil {
			return nil, fmt.Errorf("source %s: %w", run, err)
		}
		runner, err = reconcile.New(reconcile.Options{Source: src, Config: *sc.Reconcile, Store: store, Logger: log})
		if err != nil {
			return nil, err
		}
		var st inbox.RunState
		st, runErr = runner.Run(ctx, o)
		runs[run] = st
	}
	var views []sourceReconcileView
	for _, s := range cfg.Sources {
		if s.Reconcile == nil {
			continue
		}
		cp, err := cps.Checkpoint(ctx, s.Name)
		if err != nil {
			return nil, err
		}
		v := sourceReconcileView{Source: s.Name, Provider: s.Provider, Checkpoint: timeOrNil(cp.Through),
			Last: newRunView(cp.Last), Interrupted: newRunView(cp.Run)}
		if st, ok := runs[s.Name]; ok {
			v.Run, v.DryRun = newRunView(st), o.DryRun
		}
		views = append(views, v)
	}
	return views, runErr
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
	for i, s := range rep.Sources {
		if i > 0 || len(rep.Spools) > 0 {
			fmt.Fprintln(std.Stdout)
		}
		fmt.Fprintf(std.Stdout, "source %s (%s)\n", escape(s.Source), escape(s.Provider))
		t := newIndentedTable(std.Stdout, "  ")
		t.row("checkpoint", when(s.Checkpoint), "start of the last complete run")
		printRun := func(name string, r *runView, note string) {
			if r == nil {
				return
			}
			t.row(name, "started "+when(r.Started)+", ended "+when(r.Ended), "listed since "+when(r.Since)+note)
			t.row("  listed", strconv.FormatInt(r.Listed, 10), "what the provider says it sent")
			t.row("  already had", strconv.FormatInt(r.AlreadyHad, 10), "their webhook came")
			t.row("  recovered", strconv.FormatInt(r.Recovered, 10), provider.RecoveredNote(s.Provider))
			t.row("  failed", strconv.FormatInt(r.Failed, 10), provider.FailedNote(s.Provider))
			if r.Error != "" {
				t.row("  error", escape(r.Error), "the next run resumes from the last page stored")
			}
			if r.ResumeAfter != "" {
				t.row("  resumes after", escape(r.ResumeAfter), "the last event of the last page stored")
			}
		}
		if s.DryRun {
			printRun("dry run", s.Run, " (nothing stored; recovered: would be)")
		} else {
			printRun("this run", s.Run, "")
		}
		if s.Run == nil || s.DryRun {
			printRun("last run", s.Last, "")
		}
		printRun("interrupted", s.Interrupted, " (the next run resumes it)")
		if err := t.flush(); err != nil {
			return err
		}
	}
	return nil
}

var _ flag.Value = (*spoolFiles)(nil)
