package alert

import (
	"context"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/inbox"
)

// reconcileConditions are the reconcile.gap conditions: a source whose
// last reconciliation run recovered events (the provider sent them and
// hookgate never got their webhook) or failed. The checkpoints are in the
// database, so every node sees the same; when they cannot be read, the
// open incidents of the kind hold as they were.
func (e *Engine) reconcileConditions(ctx context.Context, open map[key]inbox.Incident) []condition {
	rec, ok := e.opts.Store.(inbox.Reconciliations)
	if !ok {
		return nil
	}
	var out []condition
	cps, err := rec.Checkpoints(ctx)
	if err != nil {
		e.log.Warn("alerts: reading reconciliation checkpoints", "err", err)
		for k, inc := range open {
			if k.kind == config.KindReconcileGap {
				out = append(out, condition{kind: k.kind, source: k.source, counts: inc.Counts, lastError: inc.LastError})
			}
		}
		return out
	}
	for _, cp := range cps {
		last := cp.Last
		if last.Started.IsZero() || last.Recovered == 0 && last.Error == "" {
			continue
		}
		out = append(out, condition{kind: config.KindReconcileGap, source: cp.Source, lastError: last.Error,
			counts: map[string]int64{"listed": last.Listed, "recovered": last.Recovered, "failed": last.Failed}})
	}
	return out
}
