package cli_test

import (
	"context"
	"crypto/rand"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookgate/hookgate/internal/pgtest"
)

// The periodic sweep runs on one node of several at a time: the one
// holding the lead (a session lock, on database_session or on a direct
// database; a lease row through a pooler without database_session). When
// that node is killed, another takes the lead and sweeps: a key that
// expired afterwards is removed.
func TestNodesSweepOnOneLeader(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts hookgate processes")
	}
	db := pgtest.New(t)
	ps := nodesOn(t, pooled(t, db), 3, "", "sweep_every: 100ms\n")
	conn, err := pgx.Connect(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	// The nodes holding the lead: by their sessions' application_name,
	// whose session holds the lock ("hkgtlead" as two 32-bit halves), or,
	// through a pooler without database_session, by the pid the lease row
	// names.
	lease := testPooler != "" && !testDatabaseSession
	holders := func() []string {
		query, args := `SELECT a.application_name FROM pg_locks l
			JOIN pg_stat_activity a ON a.pid = l.pid
			WHERE l.locktype = 'advisory' AND l.granted AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
			AND l.classid::bigint = $1 AND l.objid::bigint = $2`, []any{int64(0x686b6774), int64(0x6c656164)}
		if lease {
			query, args = `SELECT split_part(holder, '/', 2) FROM inbox_leader WHERE until > now()`, nil
		}
		rows, err := conn.Query(t.Context(), query, args...)
		if err != nil {
			t.Fatal(err)
		}
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		if lease {
			for j, pid := range names {
				for i, p := range ps {
					if pid == strconv.Itoa(p.cmd.Process.Pid) {
						names[j] = nodeName(i)
					}
				}
			}
		}
		return names
	}
	var leader string
	eventually(t, "a node to take the lead", func() bool {
		h := holders()
		if len(h) > 1 {
			t.Fatalf("%d nodes lead at once: %v", len(h), h)
		}
		if len(h) == 1 {
			leader = h[0]
		}
		return leader != ""
	})
	// Let every node's sweep tick a few times: still one leader.
	for range 10 {
		if h := holders(); len(h) != 1 || h[0] != leader {
			t.Fatalf("leaders %v, want only %s", h, leader)
		}
		time.Sleep(50 * time.Millisecond)
	}

	var killed *process
	for i, p := range ps {
		if leader == nodeName(i) {
			killed = p
		}
	}
	if killed == nil {
		t.Fatalf("the lead is held by %q, not one of the nodes", leader)
	}
	if err := killed.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed.cmd.Wait()
	var next string
	eventually(t, "another node to take the lead", func() bool {
		h := holders()
		if len(h) > 1 {
			t.Fatalf("%d nodes lead at once: %v", len(h), h)
		}
		if len(h) == 1 && h[0] != leader {
			next = h[0]
		}
		return next != ""
	})

	hash := make([]byte, 16)
	rand.Read(hash)
	if _, err := conn.Exec(t.Context(), `INSERT INTO inbox_keys (hash, first_seen, expires)
		VALUES ($1, now() - interval '2 hours', now() - interval '1 hour')`, hash); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the new leader ("+next+") to sweep the expired key", func() bool {
		var n int
		if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM inbox_keys WHERE hash = $1`, hash).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 0
	})
}
