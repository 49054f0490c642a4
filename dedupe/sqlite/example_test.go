package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/dedupe/sqlite"
)

// Two deliveries of one Stripe event: the first is new, the retry after the
// event was stored is a duplicate.
func Example() {
	dir, err := os.MkdirTemp("", "hookgate-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	store, err := sqlite.Open(filepath.Join(dir, "hookgate.db"), sqlite.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	ctx := context.Background()
	h := dedupe.Key{Provider: "stripe", ObjectType: "charge", Action: "succeeded", EventID: "evt_1"}.Hash()
	first, err := dedupe.ClaimOne(ctx, store, time.Minute, h)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("first delivery:", first.Status)

	concurrent, err := dedupe.ClaimOne(ctx, store, time.Minute, h)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("while the first is being stored:", concurrent.Status)

	// ... the event is stored durably ...
	if err := store.Commit(ctx, 168*time.Hour, first.Lease); err != nil {
		log.Fatal(err)
	}
	retry, err := dedupe.ClaimOne(ctx, store, time.Minute, h)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("provider retry:", retry.Status)
	// Output:
	// first delivery: new
	// while the first is being stored: in-flight
	// provider retry: duplicate
}

// An application claims a key, stores its own row and commits the key in
// one transaction: a crash or failure before the commit leaves neither
// behind.
func ExampleStore_Tx() {
	dir, err := os.MkdirTemp("", "hookgate-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	// Importing dedupe/sqlite registers the modernc.org/sqlite driver.
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "app.db")+
		"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(10000)&_txlock=immediate")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	store, err := sqlite.New(db, sqlite.Options{})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, "CREATE TABLE inbox (hash BLOB PRIMARY KEY, body TEXT)"); err != nil {
		log.Fatal(err)
	}

	accept := func(h dedupe.Hash, body string) (dedupe.Status, error) {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return 0, err
		}
		defer tx.Rollback()
		keys := store.Tx(tx)
		r, err := dedupe.ClaimOne(ctx, keys, time.Minute, h)
		if err != nil || r.Status != dedupe.New {
			return r.Status, err
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO inbox (hash, body) VALUES (?, ?)", h[:], body); err != nil {
			return 0, err
		}
		if err := keys.Commit(ctx, 168*time.Hour, r.Lease); err != nil {
			return 0, err
		}
		return r.Status, tx.Commit()
	}

	h := dedupe.Key{Provider: "github", EventID: "72d3162e-cc78-11e3-81ab-4c9367dc0958"}.Hash()
	for range 2 {
		status, err := accept(h, `{"action":"opened"}`)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(status)
	}
	// Output:
	// new
	// duplicate
}
