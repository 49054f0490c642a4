package reconcile

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/intake"
	"github.com/hookgate/hookgate/internal/provider"
	"github.com/hookgate/hookgate/internal/source"
)

// Store is what a run needs of the inbox.
type Store interface {
	inbox.Reconciliations
	// Entity reads what the inbox holds of a listed state's entity.
	Entity(ctx context.Context, tenant, typ, id string) (inbox.Entity, error)
}

// ErrNoCheckpoints is returned by New for a store that keeps no
// checkpoints.
var ErrNoCheckpoints = errors.New("the database keeps no reconciliation checkpoints")

// Options configure a Runner.
type Options struct {
	// Source is the source reconciled: its keys are the ones intake
	// gives its webhooks.
	Source *source.Source
	// Config is the source's reconcile block.
	Config config.Reconcile
	// Store is the inbox; it must implement Store.
	Store inbox.Store
	// Client makes the API requests, paced at Config.Rate; nil is
	// http.DefaultClient's transport.
	Client *http.Client
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Logger logs each run's end, and its errors once; nil discards.
	Logger *slog.Logger
	// Metrics, when set, counts the runs and the events listed.
	Metrics *Metrics
	// Stored is called after a page's new events are stored (the
	// workers' wake-up); nil: nothing.
	Stored func()
}

// Runner runs one source's reconciliation. Its runs must not overlap:
// the caller runs one at a time (on several nodes, the one that leads).
type Runner struct {
	src     *source.Source
	cfg     config.Reconcile
	list    provider.Reconciler
	store   Store
	now     func() time.Time
	log     *slog.Logger
	metrics *Metrics
	stored  func()
	// final are the provider's final entity states; set, a run lists
	// the source's other entities (provider.ListQuery.Open).
	final []string
}

// New builds the runner of o.Source, with its provider's reconciler.
func New(o Options) (*Runner, error) {
	p, ok := provider.Lookup(o.Source.Provider)
	if !ok || p.Reconcile == nil {
		return nil, fmt.Errorf("reconcile %s: provider %s has no reconciler", o.Source.Name, o.Source.Provider)
	}
	store, ok := o.Store.(Store)
	if !ok {
		return nil, fmt.Errorf("reconcile %s: %w", o.Source.Name, ErrNoCheckpoints)
	}
	client := cmp.Or(o.Client, http.DefaultClient)
	next := cmp.Or[http.RoundTripper](client.Transport, http.DefaultTransport)
	if iv := o.Config.Rate.Interval(); iv > 0 {
		paced := *client
		paced.Transport = &pacer{interval: iv, next: next}
		client = &paced
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	pc := o.Config.Provider()
	pc.Client, pc.Now = client, now
	list, err := p.Reconcile(pc)
	if err != nil {
		return nil, fmt.Errorf("source %s: %w", o.Source.Name, err)
	}
	r := &Runner{src: o.Source, cfg: o.Config, list: list, store: store, now: now, log: o.Logger,
		metrics: o.Metrics, stored: o.Stored, final: p.FinalStates}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if r.stored == nil {
		r.stored = func() {}
	}
	return r, nil
}

// Source is the name of the source the runner reconciles.
func (r *Runner) Source() string { return r.src.Name }

// RunOptions change one run.
type RunOptions struct {
	// Since, when set, lists the events created in the last Since,
	// whatever the checkpoint says, and does not resume an interrupted
	// run (which stays to be resumed). Its end moves the checkpoint only
	// when it listed at least as far back as a scheduled run would have.
	Since time.Duration
	// DryRun lists the window a scheduled run would start now (or the
	// last Since), reports what the inbox already has, and stores
	// nothing: no event, no checkpoint.
	DryRun bool
}

// Run runs the reconciliation once and returns the run's report. A
// scheduled run (no Since) resumes one that was interrupted, from the
// page after the last one stored, else lists from the checkpoint less
// the overlap (the lookback on the first run). Each page's events are
// accepted before the run's progress is saved, so a crash repeats at
// most one page, whose events are then duplicates. The checkpoint moves
// to the run's start once its last page is stored.
func (r *Runner) Run(ctx context.Context, o RunOptions) (inbox.RunState, error) {
	cp, err := r.store.Checkpoint(ctx, r.src.Name)
	if err != nil {
		return inbox.RunState{}, err
	}
	now := r.now().UTC()
	scheduledSince := now.Add(-time.Duration(r.cfg.Lookback))
	if !cp.Through.IsZero() {
		scheduledSince = cp.Through.Add(-time.Duration(r.cfg.Overlap))
	}
	var run inbox.RunState
	resumable := o.Since == 0 && !o.DryRun
	switch {
	case o.Since > 0:
		run = inbox.RunState{Started: now, Since: now.Add(-o.Since)}
	case resumable && !cp.Run.Started.IsZero():
		run = cp.Run
	default:
		run = inbox.RunState{Started: now, Since: scheduledSince}
	}
	if resumable {
		cp.Run = run
		if err := r.store.SaveCheckpoint(ctx, cp); err != nil {
			return run, err
		}
	}
	var firstFailure error
	failures := 0
	fail := func(d provider.Delivery, err error) {
		run.Failed++
		failures++
		if firstFailure == nil {
			firstFailure = fmt.Errorf("event %s: %w", d.ID, err)
		}
	}
	q := provider.ListQuery{Since: run.Since, Types: r.cfg.Types, After: run.After}
	if r.final != nil {
		q.Open = r.open
	}
	err = r.list.List(ctx, q, func(p provider.Page) error {
		run.Listed += int64(len(p.Deliveries))
		r.count(OutcomeListed, len(p.Deliveries))
		p.Deliveries = slices.DeleteFunc(slices.Clone(p.Deliveries), func(d provider.Delivery) bool {
			if d.Err != nil {
				fail(d, d.Err)
			}
			return d.Err != nil
		})
		var had, recovered int
		var err error
		if rd, ok := r.list.(provider.Redeliverer); ok {
			had, recovered, err = r.redeliver(ctx, rd, p.Deliveries, o.DryRun, fail)
		} else {
			var items []inbox.Item
			held := 0
			for _, d := range p.Deliveries {
				its, err := r.items(d)
				if err != nil {
					fail(d, err)
					continue
				}
				if d.State {
					n := len(its)
					if its, err = r.newer(ctx, its); err != nil {
						return err
					}
					held += n - len(its)
				}
				items = append(items, its...)
			}
			had, recovered, err = r.offer(ctx, items, o.DryRun)
			had += held
			if !o.DryRun {
				r.count(OutcomeHad, held)
			}
			if recovered > 0 && !o.DryRun {
				r.stored()
			}
		}
		if err != nil {
			return err
		}
		run.Had += int64(had)
		run.Recovered += int64(recovered)
		run.After = p.Next
		if !resumable {
			return nil
		}
		cp.Run = run
		if p.Next == "" {
			// The last page: the checkpoint moves in the same write
			// that ends the run.
			cp.Run = inbox.RunState{}
			advance(&cp, run, scheduledSince)
		}
		return r.store.SaveCheckpoint(ctx, cp)
	})
	run.Ended = r.now().UTC()
	if err != nil {
		run.Error = err.Error()
	}
	if !o.DryRun {
		saveCtx := context.WithoutCancel(ctx)
		if !resumable {
			// An on-demand run saved nothing so far; a scheduled run
			// may have moved the checkpoint since it was read.
			if fresh, err := r.store.Checkpoint(saveCtx, r.src.Name); err == nil {
				cp = fresh
			}
		}
		if err == nil {
			advance(&cp, run, scheduledSince)
		}
		cp.Last = run
		if err := r.store.SaveCheckpoint(saveCtx, cp); err != nil {
			r.log.Error("reconcile: save the checkpoint", "source", r.src.Name, "err", err)
		}
	}
	r.report(run, cp, err, failures, firstFailure)
	return run, err
}

// open pages the source's entities whose state is not final.
func (r *Runner) open(ctx context.Context, after provider.EntityRef, limit int) ([]provider.OpenEntity, error) {
	open, err := r.store.OpenEntities(ctx, r.src.Name, r.final, inbox.EntityRef(after), limit)
	if err != nil {
		return nil, err
	}
	out := make([]provider.OpenEntity, len(open))
	for i, e := range open {
		out[i] = provider.OpenEntity{EntityRef: provider.EntityRef(e.EntityRef), State: e.State, Payload: e.Payload}
	}
	return out, nil
}

// advance moves cp's checkpoint to the start of run, which listed every
// page, when run listed at least as far back as a scheduled run would
// have (scheduledSince): a shorter on-demand run leaves a gap behind it.
func advance(cp *inbox.Checkpoint, run inbox.RunState, scheduledSince time.Time) {
	if run.Since.Compare(scheduledSince) <= 0 && run.Started.After(cp.Through) {
		cp.Through = run.Started
	}
}

// items keys one listed delivery as intake keys its webhook.
func (r *Runner) items(d provider.Delivery) ([]inbox.Item, error) {
	h := d.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	if h.Get("Content-Type") == "" {
		if p, ok := provider.Lookup(r.src.Provider); ok {
			h.Set("Content-Type", p.ContentTypeOf())
		}
	}
	return intake.ListedItems(r.src, h, d.Body)
}

// offer accepts items as recovered events, or on a dry run looks their
// keys up, and says how many the inbox had and how many are new.
func (r *Runner) offer(ctx context.Context, items []inbox.Item, dry bool) (had, recovered int, err error) {
	if len(items) == 0 {
		return 0, 0, nil
	}
	// A listing may repeat an event across pages; Accept takes each key
	// once per batch.
	seen := make(map[dedupe.Hash]bool, len(items))
	batch := items[:0:0]
	for _, it := range items {
		if !seen[it.Event.Hash] {
			seen[it.Event.Hash] = true
			batch = append(batch, it)
		}
	}
	had = len(items) - len(batch)
	if dry {
		hashes := make([]dedupe.Hash, len(batch))
		for i, it := range batch {
			hashes[i] = it.Event.Hash
		}
		have, err := r.store.Have(ctx, hashes)
		if err != nil {
			return had, 0, err
		}
		for _, h := range have {
			if h {
				had++
			} else {
				recovered++
			}
		}
		return had, recovered, nil
	}
	for start := 0; start < len(batch); start += maxBatch {
		part := batch[start:min(start+maxBatch, len(batch))]
		out, err := r.store.AcceptRecovered(ctx, part)
		if err != nil {
			return had, recovered, err
		}
		for _, o := range out {
			if o.Status == dedupe.New {
				recovered++
			} else {
				had++
			}
		}
	}
	r.count(OutcomeHad, had)
	r.count(OutcomeRecovered, recovered)
	return had, recovered, nil
}

// newer keeps the listed states of items that are newer than what the
// inbox holds of their entities: a state the entity holds, or an older
// one, is had, whichever key brought it (a webhook's, or an earlier
// run's).
func (r *Runner) newer(ctx context.Context, items []inbox.Item) ([]inbox.Item, error) {
	out := items[:0]
	for _, it := range items {
		e := it.Event
		if e.EntityID != "" {
			held, err := r.store.Entity(ctx, e.Tenant, e.EntityType, e.EntityID)
			switch {
			case err == nil && held.Order >= e.EntityOrder:
				continue
			case err != nil && !errors.Is(err, inbox.ErrNotFound):
				return nil, err
			}
		}
		out = append(out, it)
	}
	return out, nil
}

// redeliver asks the provider to send again each delivery whose key the
// inbox does not hold, or on a dry run counts them, and says how many the
// inbox had and how many it asked for. A delivery that cannot be keyed,
// or whose redelivery the provider refuses, fails alone.
func (r *Runner) redeliver(ctx context.Context, rd provider.Redeliverer, ds []provider.Delivery, dry bool,
	fail func(provider.Delivery, error)) (had, asked int, err error) {
	keyed := make([]provider.Delivery, 0, len(ds))
	hashes := make([]dedupe.Hash, 0, len(ds))
	for _, d := range ds {
		_, h, err := r.src.HeaderKey(d.Header)
		if err != nil {
			fail(d, err)
			continue
		}
		keyed = append(keyed, d)
		hashes = append(hashes, h)
	}
	if len(keyed) == 0 {
		return 0, 0, nil
	}
	have, err := r.store.Have(ctx, hashes)
	if err != nil {
		return 0, 0, err
	}
	for i, d := range keyed {
		switch {
		case have[i]:
			had++
		case dry:
			asked++
		default:
			if err := rd.Redeliver(ctx, d); errors.Is(err, provider.ErrRefused) {
				fail(d, err)
				continue
			} else if err != nil {
				return had, asked, err
			}
			asked++
		}
	}
	if !dry {
		r.count(OutcomeHad, had)
		r.count(OutcomeRecovered, asked)
	}
	return had, asked, nil
}

// maxBatch is the most events one AcceptRecovered takes, intake's batch.
const maxBatch = 200

func (r *Runner) count(outcome string, n int) {
	if r.metrics != nil && n > 0 {
		r.metrics.Events.WithLabelValues(r.src.Name, outcome).Add(float64(n))
	}
}

// report logs the run's end, its errors once, and counts it.
func (r *Runner) report(run inbox.RunState, cp inbox.Checkpoint, err error, failures int, firstFailure error) {
	result := ResultCompleted
	if err != nil {
		result = ResultFailed
	}
	if r.metrics != nil {
		r.metrics.Runs.WithLabelValues(r.src.Name, result).Inc()
		r.count(OutcomeFailed, failures)
		if !cp.Through.IsZero() {
			r.metrics.LastCompleted.WithLabelValues(r.src.Name).Set(float64(cp.Through.Unix()))
		}
	}
	attrs := []any{"source", r.src.Name, "since", run.Since, "listed", run.Listed, "already_had", run.Had,
		"recovered", run.Recovered, "failed", run.Failed}
	if failures > 0 {
		r.log.Error("reconcile: listed events that failed", append(attrs, "count", failures, "first", firstFailure)...)
	}
	if err != nil {
		r.log.Error("reconcile: run failed; the next run resumes from the last page stored", append(attrs, "err", err)...)
		return
	}
	r.log.Info("reconcile: run completed", append(attrs, "checkpoint", cp.Through)...)
}
