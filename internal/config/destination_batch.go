package config

import (
	"fmt"
	"time"
)

// Bounds of a destination's batch.
const (
	// MaxBatchEvents is the largest batch.max: how many events one POST
	// may carry.
	MaxBatchEvents = 1000
	// MaxBatchWait is the longest batch.wait. The deliveries a batch
	// gathers are leased while it waits, so a node that dies holds them
	// for the wait and the lease; a longer wait would hold them longer.
	MaxBatchWait = Duration(time.Minute)
)

// DeliveryBatch makes an HTTP destination receive its events several to a POST,
// as one JSON array signed as one body.
type DeliveryBatch struct {
	// Max is how many events one POST carries at most: 1 to
	// [MaxBatchEvents].
	Max int `yaml:"max"`
	// Wait is how long the oldest gathered event waits for others before
	// a batch short of Max is sent: 0 (also when absent) sends what is
	// due at once; at most [MaxBatchWait].
	Wait Duration `yaml:"wait,omitempty"`
}

// checkBatch checks batch: an HTTP destination's, within its bounds.
func (d Destination) checkBatch() []*FieldError {
	if d.Batch == nil {
		return nil
	}
	var errs []*FieldError
	add := func(field string, format string, args ...any) {
		errs = append(errs, &FieldError{Field: field, Err: fmt.Errorf(format, args...)})
	}
	if kind := d.Kind(); kind != KindHTTP && kind != "" {
		add("batch", "only HTTP destinations take batches; this one is %s, whose broker takes one message per event", kind)
		return errs
	}
	if d.Batch.Max < 1 || d.Batch.Max > MaxBatchEvents {
		add("batch.max", "%d: want 1 to %d events", d.Batch.Max, MaxBatchEvents)
	}
	if d.Batch.Wait < 0 || d.Batch.Wait > MaxBatchWait {
		add("batch.wait", "%s: want 0 (send what is due at once) to %s", d.Batch.Wait, MaxBatchWait)
	}
	return errs
}
