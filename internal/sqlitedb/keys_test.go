package sqlitedb

import (
	"database/sql"
	"strconv"
	"testing"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/dedupe/dedupetest"
)

func hash(i int) dedupe.Hash {
	return dedupe.Key{Tenant: "acme", Provider: "sqlitedbtest", EventID: strconv.Itoa(i)}.Hash()
}

// claimOne claims h in a transaction of its own, committed or leased.
func claimOne(t *testing.T, db *DB, k Keys, d time.Duration, committed bool, h dedupe.Hash) dedupe.Result {
	t.Helper()
	var rs []dedupe.Result
	err := db.Write(t.Context(), func(tx *sql.Tx) error {
		var err error
		rs, err = k.Claim(t.Context(), tx, d, committed, []dedupe.Hash{h})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return rs[0]
}

// TestClaimCommitted: a committed claim writes the key committed until the
// window's end in the caller's transaction; a hash repeated in the call is
// a Duplicate of its first occurrence, a key leased outside is in flight,
// and a rollback leaves nothing.
func TestClaimCommitted(t *testing.T) {
	t.Parallel()
	db, _ := open(t)
	if err := db.Migrate(t.Context(), KeyTable, KeySteps); err != nil {
		t.Fatal(err)
	}
	const window = time.Hour
	clock := dedupetest.NewClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	k := db.Keys(clock.Now)
	ctx := t.Context()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := k.Claim(ctx, tx, window, true, []dedupe.Hash{hash(1), hash(2), hash(1)})
	if err != nil {
		t.Fatal(err)
	}
	if rs[0].Status != dedupe.New || rs[1].Status != dedupe.New || rs[2].Status != dedupe.Duplicate {
		t.Fatalf("statuses %v %v %v, want new new duplicate", rs[0].Status, rs[1].Status, rs[2].Status)
	}
	if want := rs[0].FirstSeen.Add(window); !rs[0].Expires.Equal(want) {
		t.Fatalf("Expires %v, want the window's end %v", rs[0].Expires, want)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if r := claimOne(t, db, k, time.Minute, false, hash(1)); r.Status != dedupe.New {
		t.Fatalf("lease of a rolled-back key: %v, want new", r.Status)
	}

	var both []dedupe.Result
	err = db.Write(ctx, func(tx *sql.Tx) error {
		var err error
		both, err = k.Claim(ctx, tx, window, true, []dedupe.Hash{hash(2), hash(1)})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if both[0].Status != dedupe.New || both[1].Status != dedupe.InFlight {
		t.Fatalf("statuses %v %v, want new, in-flight (hash 1 is leased outside)", both[0].Status, both[1].Status)
	}
	if r := claimOne(t, db, k, time.Minute, false, hash(2)); r.Status != dedupe.Duplicate {
		t.Fatalf("claim of a committed key: %v, want duplicate", r.Status)
	}
	clock.Advance(window)
	if r := claimOne(t, db, k, time.Minute, false, hash(2)); r.Status != dedupe.New {
		t.Fatalf("claim after the window: %v, want new", r.Status)
	}
}
