package inbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// ErrBadIncident is returned by Observe and See for an incident without a
// kind or a time seen, and by Resolve and Remind for a zero time: a
// backend keeps the zero time as "none", so the change would not read
// back.
var ErrBadIncident = errors.New("inbox: incident without kind or time")

// CheckObserve checks the incident op (observe, see) is given and
// returns its counts encoded (EncodeCounts); every backend calls it
// first, so every backend refuses the same calls.
func CheckObserve(op string, inc Incident) (counts string, err error) {
	if inc.Kind == "" || inc.SeenAt.IsZero() {
		return "", fmt.Errorf("inbox: %s: %w", op, ErrBadIncident)
	}
	return EncodeCounts(inc.Counts)
}

// CheckIncidentTime checks the time at which op (resolve, remind) changes
// an incident.
func CheckIncidentTime(op string, at time.Time) error {
	if at.IsZero() {
		return fmt.Errorf("inbox: %s: %w", op, ErrBadIncident)
	}
	return nil
}

// CheckNoticeOwner checks the owner given to op (lease notices, finish
// notice): a notice nobody holds has an empty owner.
func CheckNoticeOwner(op, owner string) error {
	if owner == "" {
		return fmt.Errorf("inbox: %s: %w", op, ErrNoOwner)
	}
	return nil
}

// NoticeStatus is the status FinishNotice leaves a notice at: sent, pending
// again when the failed send is retried, failed when it is given up.
func NoticeStatus(sent bool, retry time.Time) string {
	switch {
	case sent:
		return NoticeSent
	case !retry.IsZero():
		return NoticePending
	default:
		return NoticeFailed
	}
}

// EncodeCounts is counts as the JSON object the backends store; nil is the
// empty object, so the stored value is always one that merges.
func EncodeCounts(counts map[string]int64) (string, error) {
	if len(counts) == 0 {
		return "{}", nil
	}
	b, err := json.Marshal(counts)
	if err != nil {
		return "", fmt.Errorf("inbox: incident counts: %w", err)
	}
	return string(b), nil
}

// DecodeCounts reads counts stored by EncodeCounts.
func DecodeCounts(b []byte) (map[string]int64, error) {
	var counts map[string]int64
	if err := json.Unmarshal(b, &counts); err != nil {
		return nil, fmt.Errorf("inbox: incident counts: %w", err)
	}
	return counts, nil
}
