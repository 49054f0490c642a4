package server

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/reconcile"
)

// reconcileTimeout bounds one request to a provider's API.
const reconcileTimeout = time.Minute

// reconciler is one source's scheduled reconciliation.
type reconciler struct {
	runner *reconcile.Runner
	every  time.Duration
}

// openReconcilers builds the runner of each source with a reconcile
// block; those with an every are run by Run.
func (s *Server) openReconcilers(cfg config.Config) error {
	var m *reconcile.Metrics
	client := &http.Client{Timeout: reconcileTimeout}
	for i, sc := range cfg.Sources {
		if sc.Reconcile == nil {
			continue
		}
		if m == nil {
			m = reconcile.NewMetrics(s.metrics.Registry)
		}
		r, err := reconcile.New(reconcile.Options{Source: s.sources[i], Config: *sc.Reconcile, Store: s.store,
			Client: client, Now: s.now, Logger: s.log, Metrics: m, Stored: s.stored()})
		if err != nil {
			return err
		}
		s.reconcilers = append(s.reconcilers, reconciler{runner: r, every: time.Duration(sc.Reconcile.Every)})
	}
	return nil
}

// reconcileEvery runs the reconciliation of each source that sets an
// every, at start (resuming one a stop interrupted) and then once per
// period; on a database several nodes share, only the node holding the
// lead runs them, so a source's runs never overlap.
func (s *Server) reconcileEvery(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, r := range s.reconcilers {
		if r.every <= 0 {
			continue
		}
		wg.Go(func() {
			tick := time.NewTicker(r.every)
			defer tick.Stop()
			for {
				if s.leadsReconcile(ctx) {
					// The runner logs and counts a failed run; the next
					// period resumes it.
					r.runner.Run(ctx, reconcile.RunOptions{})
				}
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
			}
		})
	}
}

// leadsReconcile reports whether this node runs the reconciliations:
// always on a backend of one node, only while it holds the lead on a
// shared one.
func (s *Server) leadsReconcile(ctx context.Context) bool {
	l, ok := s.store.(inbox.Leader)
	if !ok {
		return true
	}
	held, err := l.Lead(ctx)
	if err != nil && ctx.Err() == nil {
		s.log.Error("reconcile: taking the lead", "err", err)
	}
	return held
}
