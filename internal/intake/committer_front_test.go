package intake_test

import (
	"context"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/dedupe/redis/redistest"
	"github.com/hookgate/hookgate/internal/front"
	"github.com/hookgate/hookgate/internal/inbox"
	inboxpostgres "github.com/hookgate/hookgate/internal/inbox/postgres"
	"github.com/hookgate/hookgate/internal/intake"
	"github.com/hookgate/hookgate/internal/pgtest"
)

// frontNode is one gateway node: a committer on the shared PostgreSQL
// inbox, with a Redis front, and no memory of recent keys (so that every
// answer comes from Redis or from the store).
type frontNode struct {
	c     *intake.Committer
	store *countingAcceptor
}

func newFrontNode(t *testing.T, db string, fr *front.Front) *frontNode {
	t.Helper()
	store, err := inboxpostgres.Open(t.Context(), db, inboxpostgres.Options{AcceptWriters: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	counting := &countingAcceptor{Acceptor: store, DuplicateCounter: store}
	return &frontNode{c: intake.NewCommitter(counting, intake.CommitterOptions{RecentKeys: -1, Front: fr}), store: counting}
}

func (n *frontNode) submit(t *testing.T, id string, want dedupe.Status, storeAsked int64) {
	t.Helper()
	before := n.store.items.Load()
	outs, errs, err := n.c.Submit(t.Context(), []inbox.Item{item(id)})
	if err != nil || errs[0] != nil || outs[0].Status != want {
		t.Fatalf("submit %s: %+v, %v, %v; want %v", id, outs, errs, err, want)
	}
	if asked := n.store.items.Load() - before; asked != storeAsked {
		t.Fatalf("submit %s: the store was asked about %d items, want %d", id, asked, storeAsked)
	}
}

func newFront(t *testing.T, client *goredis.Client, prefix string) *front.Front {
	t.Helper()
	f, err := front.New(client, front.Options{Prefix: prefix, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// The Redis front answers a stored event's copy without the store, on any
// node; a flushed Redis sends the copy to the store, which still decides
// (and Redis learns the key again); a key another node holds is in flight
// (409); a Redis that refuses connections leaves every decision to the
// store. Duplicates answered from Redis count in the stats.
func TestCommitterWithRedisFront(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	client, prefix := redistest.New(t)
	fr := newFront(t, client, prefix)

	a := newFrontNode(t, db, fr)
	a.submit(t, "evt_1", dedupe.New, 1)
	a.submit(t, "evt_2", dedupe.New, 1)
	a.c.Close() // its commits to Redis are done

	b := newFrontNode(t, db, newFront(t, client, prefix))
	b.submit(t, "evt_1", dedupe.Duplicate, 0)

	iter := client.Scan(t.Context(), 0, "{"+prefix+"}*", 1000).Iterator()
	for iter.Next(t.Context()) {
		if err := client.Del(t.Context(), iter.Val()).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	b.submit(t, "evt_2", dedupe.Duplicate, 1) // Redis lost it: the store decides
	b.c.Close()
	c := newFrontNode(t, db, newFront(t, client, prefix))
	c.submit(t, "evt_2", dedupe.Duplicate, 0) // and Redis knows it again

	other := newFront(t, client, prefix)
	held := other.Check(t.Context(), []dedupe.Hash{item("evt_3").Event.Hash})
	if held[0].Verdict != front.Claimed {
		t.Fatalf("another node's claim: %v", held[0].Verdict)
	}
	c.submit(t, "evt_3", dedupe.InFlight, 0)
	if err := other.Release(t.Context(), held[0].Lease); err != nil {
		t.Fatal(err)
	}
	c.submit(t, "evt_3", dedupe.New, 1)
	c.c.Close()

	down, err := front.Open("redis://"+redistest.Refused(t)+"/0", front.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer down.Close()
	d := newFrontNode(t, db, down)
	d.submit(t, "evt_4", dedupe.New, 1)
	d.submit(t, "evt_1", dedupe.Duplicate, 1)
	d.c.Close()

	st, err := a.store.DuplicateCounter.(*inboxpostgres.Store).Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Sources["test"]; got.Accepted != 4 || got.Duplicates != 4 {
		t.Fatalf("stats %+v, want 4 accepted (evt_1 to evt_4) and 4 duplicates", got)
	}
}
