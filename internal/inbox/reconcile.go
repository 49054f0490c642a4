package inbox

import (
	"context"
	"time"

	"github.com/hookgate/hookgate/dedupe"
)

// ViaReconcile is the Via of an event that a reconciliation recovered:
// the provider listed it, and no webhook of it had come.
const ViaReconcile = "reconcile"

// Checkpoint is where the reconciliation of one source stands, as the
// database keeps it.
type Checkpoint struct {
	Source string
	// Through is when the last complete run started: every event the
	// provider created before it, less the overlap, has been offered.
	// Zero before the first complete run.
	Through time.Time
	// Run is the run under way, or the one a crash interrupted (then
	// resumed from After); zero Started when none.
	Run RunState
	// Last is the last run that ended, well or not.
	Last RunState
}

// RunState is one run of a source's reconciliation.
type RunState struct {
	// Started is when the run started; it becomes the checkpoint's
	// Through once the run's last page is stored.
	Started time.Time
	// Since is the oldest creation time the run lists.
	Since time.Time
	// After resumes the listing after the last page stored; "" before
	// the first page.
	After string
	// Ended is when the run ended; zero while it runs.
	Ended time.Time
	// Listed counts the events listed, of which Had were already in the
	// inbox (their webhook came) and Recovered were not (accepted now);
	// Failed counts those that could not be keyed or stored.
	Listed, Had, Recovered, Failed int64
	// Error is why the run failed; "" for one that completed.
	Error string
}

// Reconciliations is implemented by backends that keep the checkpoints
// of reconciliations.
type Reconciliations interface {
	// AcceptRecovered is Accept for the events a reconciliation listed:
	// in the same transaction, the new ones are recorded as recovered
	// (Via ViaReconcile). A duplicate (its webhook came) keeps how it
	// came.
	AcceptRecovered(ctx context.Context, items []Item) ([]Outcome, error)
	// Have reports, for each of hashes, whether the inbox holds its key:
	// committed and within its window, so that Accept would find its
	// event a duplicate. It reads the keys alone, by their primary key.
	Have(ctx context.Context, hashes []dedupe.Hash) ([]bool, error)
	// Checkpoint returns the source's checkpoint; a zero one (with
	// Source set) before the first run.
	Checkpoint(ctx context.Context, source string) (Checkpoint, error)
	// SaveCheckpoint stores the checkpoint of cp.Source, replacing the
	// one kept.
	SaveCheckpoint(ctx context.Context, cp Checkpoint) error
	// Checkpoints returns every source's checkpoint, by source name.
	Checkpoints(ctx context.Context) ([]Checkpoint, error)
	// OpenEntities pages the entities last written by an event of
	// source whose state is none of final: at most limit, in (tenant,
	// type, id) order after the entity after, each with the payload of
	// the event that wrote it. An entity whose event was swept is not
	// among them, since nothing of it but its state is left.
	OpenEntities(ctx context.Context, source string, final []string, after EntityRef, limit int) ([]OpenEntity, error)
}

// EntityRef names an entity; the zero one sorts before every other.
type EntityRef struct {
	Tenant, Type, ID string
}

// OpenEntity is an entity in a state that is not final, as
// Reconciliations.OpenEntities returns it.
type OpenEntity struct {
	EntityRef
	State string
	// Payload is the request body of the event that last wrote it.
	Payload []byte
}
