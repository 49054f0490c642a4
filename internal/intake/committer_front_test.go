package intake_test

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/dedupe/redis/redistest"
	dsqlite "github.com/hookgate/hookgate/dedupe/sqlite"
	"github.com/hookgate/hookgate/internal/front"
	"github.com/hookgate/hookgate/internal/inbox"
	inboxpostgres "github.com/hookgate/hookgate/internal/inbox/postgres"
	inboxsqlite "github.com/hookgate/hookgate/internal/inbox/sqlite"
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
	return &frontNode{c: newCommitter(counting, intake.CommitterOptions{RecentKeys: -1, Front: fr}), store: counting}
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

// failOnce is a store whose first Accept fails, as a database that went
// away for one write would; the next ones write through.
type failOnce struct {
	intake.Acceptor
	failed atomic.Bool
}

func (s *failOnce) Accept(ctx context.Context, items []inbox.Item) ([]inbox.Outcome, error) {
	if !s.failed.Swap(true) {
		return nil, errors.New("the database went away")
	}
	return s.Acceptor.Accept(ctx, items)
}

// submitOne submits item(id) to c and returns its outcome, failing t when
// it returns an error.
func submitOne(t *testing.T, c *intake.Committer, id string) dedupe.Status {
	t.Helper()
	outs, errs, err := c.Submit(t.Context(), []inbox.Item{item(id)})
	if err != nil || errs[0] != nil {
		t.Fatalf("submit %s: %v %v", id, err, errs[0])
	}
	return outs[0].Status
}

// longLeaseFront is a front whose claims outlive the test, so that only a
// release, never a lease's end, lets a claimed key be claimed again.
func longLeaseFront(t *testing.T, client *goredis.Client, prefix string) *front.Front {
	t.Helper()
	f, err := front.New(client, front.Options{Prefix: prefix, Timeout: 5 * time.Second, Lease: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// G4 with a Redis front: the claims of a write the inbox failed are
// released, so that the sender's retry is claimed again and stored (202),
// not answered in flight (409) until the claim's lease ends.
func TestFrontReleasesFailedWrite(t *testing.T) {
	t.Parallel()
	client, prefix := redistest.New(t)
	fr := longLeaseFront(t, client, prefix)
	store := &failOnce{Acceptor: openStore(t)}
	c := newCommitter(store, intake.CommitterOptions{RecentKeys: -1, Front: fr})
	_, errs, err := c.Submit(t.Context(), []inbox.Item{item("evt_failed")})
	if err != nil || errs[0] == nil {
		t.Fatalf("the failed write: %v %v, want its error", err, errs)
	}
	c.Close() // its releases are done
	c = newCommitter(store, intake.CommitterOptions{RecentKeys: -1, Front: fr})
	defer c.Close()
	if st := submitOne(t, c, "evt_failed"); st != dedupe.New {
		t.Fatalf("the sender's retry: %v, want new (its claim released)", st)
	}
}

// G2 with a Redis front: an event the inbox found in flight (claimed by
// another process that has not written it yet) is not recorded in Redis
// as stored: once that claim is gone the event is new, where Redis would
// have answered every copy duplicate (200) for an event nobody stored.
func TestFrontNeverRecordsInFlightAsStored(t *testing.T) {
	t.Parallel()
	client, prefix := redistest.New(t)
	fr := longLeaseFront(t, client, prefix)
	path := t.TempDir() + "/hookgate.db"
	store, err := inboxsqlite.Open(path, inboxsqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	other, err := dsqlite.Open(path, dsqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	claims, err := other.Claim(t.Context(), time.Hour, item("evt_elsewhere").Event.Hash)
	if err != nil || claims[0].Status != dedupe.New {
		t.Fatalf("claim through the other store: %+v %v", claims, err)
	}
	c := newCommitter(store, intake.CommitterOptions{RecentKeys: -1, Front: fr})
	if st := submitOne(t, c, "evt_elsewhere"); st != dedupe.InFlight {
		t.Fatalf("while another process holds it: %v, want in flight", st)
	}
	c.Close() // what it told the front is done
	if err := other.Release(t.Context(), claims[0].Lease); err != nil {
		t.Fatal(err)
	}
	c = newCommitter(store, intake.CommitterOptions{RecentKeys: -1, Front: fr})
	defer c.Close()
	if st := submitOne(t, c, "evt_elsewhere"); st != dedupe.New {
		t.Fatalf("once the other claim is gone: %v, want new (the front recorded nothing)", st)
	}
}

// A request whose context ends after the front claimed its events but
// before they were queued (the queue full behind a write that does not
// return) gives its claims back at once: otherwise every node answers its
// sender's retry 409 for the whole lease.
func TestFrontReleasesClaimsOfAbandonedRequest(t *testing.T) {
	t.Parallel()
	client, prefix := redistest.New(t)
	fr := longLeaseFront(t, client, prefix)
	store := newGatedStore(t)
	// A queue of one request: the first is being written, the second
	// waits in the queue, the third waits to be queued.
	// The store timeout is far off: the held write must not time out.
	c := newCommitter(store, intake.CommitterOptions{RecentKeys: -1, Front: fr, MaxBatch: 1, StoreTimeout: time.Hour})
	first := submitAsync(c, store, item("evt_first"))
	<-store.calls
	ids := []string{"evt_second", "evt_third"}
	ctx, cancel := context.WithCancel(t.Context())
	answers := make(chan error, len(ids))
	for _, id := range ids {
		go func() {
			_, errs, err := c.Submit(ctx, []inbox.Item{item(id)})
			answers <- errors.Join(err, errs[0])
		}()
	}
	// Both are claimed in Redis (one queued, one waiting to be) before
	// their context ends.
	keys := func() int {
		n, err := client.Eval(t.Context(), `return #redis.call('KEYS', ARGV[1])`, []string{"{" + prefix + "}:"}, "{"+prefix+"}:*").Int()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	deadline := time.Now().Add(30 * time.Second)
	for keys() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("the three events were not claimed in Redis within 30s (%d keys)", keys())
		}
		runtime.Gosched()
	}
	cancel()
	abandoned := <-answers // the one never queued ends with its context
	if !errors.Is(abandoned, context.Canceled) {
		t.Fatalf("the request that could not be queued: %v, want its context's end", abandoned)
	}
	store.gate <- nil
	store.gate <- nil
	if a := <-first; a.err != nil || a.out.Status != dedupe.New {
		t.Fatalf("the first request: %+v", a)
	}
	if err := <-answers; err != nil {
		t.Fatalf("the queued request: %v, want it written", err)
	}
	c.Close() // its releases are done
	other := longLeaseFront(t, client, prefix)
	hashes := []dedupe.Hash{item(ids[0]).Event.Hash, item(ids[1]).Event.Hash}
	var claimed int
	for _, a := range other.Check(t.Context(), hashes) {
		if a.Verdict == front.Claimed {
			claimed++
		}
	}
	if claimed != 1 {
		t.Fatalf("another node could claim %d of the two events, want 1: the abandoned request's claim released, the written one's committed", claimed)
	}
}
