package dedupe

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// Status is the outcome of claiming one key.
type Status uint8

const (
	// New: nobody holds the key; the caller now holds a lease on it.
	New Status = iota + 1
	// Duplicate: the key was committed and its window has not ended.
	Duplicate
	// InFlight: another claimer holds an unexpired lease on the key.
	InFlight
)

func (s Status) String() string {
	switch s {
	case New:
		return "new"
	case Duplicate:
		return "duplicate"
	case InFlight:
		return "in-flight"
	}
	return fmt.Sprintf("Status(%d)", uint8(s))
}

// Token tells one claim of a key from another. Stores never issue zero.
type Token uint64

// NewToken returns a random non-zero token, for a store's claims. Tokens
// are random rather than counted so that claimers sharing a store (the
// processes on one SQLite file, the nodes on one database or Redis) do
// not collide without a round trip to a sequence; math/rand/v2's
// generator is seeded randomly in each process.
func NewToken() Token {
	for {
		if t := rand.Uint64(); t != 0 {
			return Token(t)
		}
	}
}

// Lease is what a caller holds after a [New] claim; it passes it back to
// [Store.Commit] or [Store.Release].
type Lease struct {
	Hash  Hash
	Token Token
}

// Result is the outcome of claiming one hash.
type Result struct {
	Status Status
	// Lease is set when Status is New.
	Lease Lease
	// FirstSeen is when the holder of the key claimed it: for a Duplicate,
	// when the committed delivery first arrived; for InFlight, when the
	// current lease was taken.
	FirstSeen time.Time
	// Expires is when the key becomes claimable again: the end of the window
	// for a Duplicate, the end of the lease for InFlight or New.
	Expires time.Time
}

var (
	// ErrLeaseLost is returned by Commit when the caller's lease expired and
	// another claimer took the key, or the key was released or swept.
	ErrLeaseLost = errors.New("dedupe: lease lost")
	// ErrUnavailable wraps every error a store gets from its backend, so
	// callers can tell "the store is down" from a protocol outcome.
	ErrUnavailable = errors.New("dedupe: store unavailable")
)

// Store keeps claims and committed keys. Implementations are safe for
// concurrent use by many goroutines; stores backed by a shared server or
// file are also safe across processes.
//
// The batch forms exist so that a caller can claim, commit or release many
// keys in one round trip. Results are in the order of the input. A hash
// that appears twice in one Claim call is claimed once: the first
// occurrence gets New (or whatever the store holds), later ones see that
// claim and get InFlight.
type Store interface {
	// Claim tries to take a lease of the given length on each hash.
	Claim(ctx context.Context, lease time.Duration, hashes ...Hash) ([]Result, error)
	// Commit turns leases into committed keys that answer Duplicate until
	// window has passed. It fails with ErrLeaseLost (for the first such
	// lease; the others are still committed) when a lease no longer holds
	// its key.
	Commit(ctx context.Context, window time.Duration, leases ...Lease) error
	// Release drops leases so the next claim is New. Releasing a lease that
	// was already lost is not an error: the key is someone else's now.
	Release(ctx context.Context, leases ...Lease) error
	// Sweep removes expired committed keys and expired leases and reports
	// how many it removed. Entries that have not expired are kept.
	Sweep(ctx context.Context) (int, error)
}

// ClaimOne claims a single hash.
func ClaimOne(ctx context.Context, s Store, lease time.Duration, h Hash) (Result, error) {
	rs, err := s.Claim(ctx, lease, h)
	if err != nil {
		return Result{}, err
	}
	return rs[0], nil
}
