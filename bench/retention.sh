#!/usr/bin/env bash
# Retention at scale: how intake fares while the sweep removes millions of
# expired events and keys.
#
# Usage (from anywhere):  bench/retention.sh
#   ROWS=10000000  expired events in the inbox, each with a delivery, an
#                  attempt and an expired dedupe key
#   RATE=1000      new events per second sent while the sweep runs
#   WINDOW=5s      loadgen runs back to back, each this long; one line each
#   WINDOWS=0      stop after this many windows even if the sweep goes on
#                  (0: once a window has ended after the sweep)
#   DB=sqlite      the inbox: sqlite (a file in a temp directory) or postgres
#   PGURL=postgres://postgres@127.0.0.1:5432/postgres   with DB=postgres, a
#                  database to connect to; the script creates
#                  hookgate_retention_<pid> next to it and drops it on exit
#   KEEP=          set, the temporary directory (the SQLite file among it)
#                  is kept and named on exit instead of removed
#
# It builds hookgate, loadgen and sink into bench/out/. hookgate serve takes
# SEED (1,000) events from loadgen and delivers them to the sink, then
# stops; the script copies those rows (sqlite3 or psql) until the inbox
# holds ROWS processed events received and processed two days ago and
# earlier, a millisecond apart, each with its delivery and attempt, and
# ROWS dedupe keys that expired a day after their event came. hookgate serve starts again with retention 24h and sweep_every
# 10s: its first sweep, ten seconds in, finds every copied row expired.
# loadgen sends RATE new events a second from the start, in windows of
# WINDOW, until a window has ended after the sweep's log line; each
# window's intake p50, p99 and max are printed, with the windows during the
# sweep marked, and the sweep's duration and what it removed.
#
# Needs jq, curl, and sqlite3 (DB=sqlite) or psql (DB=postgres).
set -euo pipefail

ROWS=${ROWS:-10000000}
RATE=${RATE:-1000}
WINDOW=${WINDOW:-5s}
WINDOWS=${WINDOWS:-0}
DB=${DB:-sqlite}
PGURL=${PGURL:-postgres://postgres@127.0.0.1:5432/postgres}
SEED=1000

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$ROOT/bench/out
LOGS=$OUT/logs
TMP=$(mktemp -d)
export BENCH_SECRET=whsec_cmV0ZW50aW9uLWJlbmNoLXNlY3JldA==
HOOKGATE_PID= SINK_PID= PGDB=
cleanup() {
	[[ -n $HOOKGATE_PID ]] && kill "$HOOKGATE_PID" 2>/dev/null
	[[ -n $SINK_PID ]] && kill "$SINK_PID" 2>/dev/null
	wait 2>/dev/null
	[[ -n $PGDB ]] && psql -q "$PGURL" -c "DROP DATABASE IF EXISTS $PGDB WITH (FORCE)" >/dev/null 2>&1
	[[ -n ${KEEP:-} ]] && echo "kept $TMP" >&2 || rm -rf "$TMP"
}
trap cleanup EXIT
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

case $DB in
sqlite) DATABASE=sqlite:$TMP/hookgate.db ;;
postgres)
	PGDB=hookgate_retention_$$
	psql -q "$PGURL" -c "CREATE DATABASE $PGDB" >/dev/null
	DATABASE=${PGURL%/*}/$PGDB
	;;
*)
	echo "DB=$DB: want sqlite or postgres" >&2
	exit 2
	;;
esac

cd "$ROOT"
mkdir -p "$OUT" "$LOGS"
echo "building into $OUT"
go build -o "$OUT/hookgate" ./cmd/hookgate
go build -o "$OUT/loadgen" ./bench/loadgen
go build -o "$OUT/sink" ./bench/sink

start retention-sink SINK_PID "$OUT/sink" -listen 127.0.0.1:0
SINK=$URL

# config SWEEP_EVERY: writes the config, with the sweep period given.
config() {
	cat >"$TMP/hookgate.yaml" <<EOF
listen: 127.0.0.1:0
database: $DATABASE
retention: 24h
sweep_every: $1
sources:
  - name: app
    provider: standard
    secret: env:BENCH_SECRET
    destinations:
      - name: sink
        url: $SINK/hooks/sink
        on: all
EOF
}

config 1h
start retention-hookgate-seed HOOKGATE_PID "$OUT/hookgate" serve --config "$TMP/hookgate.yaml" --log-level warn
"$OUT/loadgen" -url "$URL/in/app" -n "$SEED" -warmup 0 -dup 0 -rate 2000 -c 16 -label seed -json >/dev/null
for i in $(seq 600); do
	[[ $(curl -fsS "$SINK/stats" | jq .distinct) -ge $SEED ]] && break
	if [[ $i == 600 ]]; then
		echo "the sink did not get the $SEED seed events in 60 s: $(curl -fsS "$SINK/stats")" >&2
		exit 1
	fi
	sleep 0.1
done
kill -TERM "$HOOKGATE_PID"
wait "$HOOKGATE_PID" || true
HOOKGATE_PID=

copies=$((ROWS / SEED))
echo "filling: $((copies * SEED)) expired events, deliveries, attempts and keys ($DB)"
fill_start=$(date +%s)
if [[ $DB == sqlite ]]; then
	db=$TMP/hookgate.db
	cols=$(sqlite3 "$db" "SELECT group_concat(name, ', ') FROM pragma_table_info('events') WHERE name != 'id'")
	picks=$(sqlite3 "$db" "SELECT group_concat(CASE name
		WHEN 'hash' THEN 'randomblob(16)'
		WHEN 'event_id' THEN 'e.event_id || ''-'' || c.x'
		WHEN 'received_at' THEN 'e.received_at - 172800000000000 - (c.x * $SEED + e.id) * 1000000'
		WHEN 'processed_at' THEN 'e.processed_at - 172800000000000 - (c.x * $SEED + e.id) * 1000000'
		ELSE 'e.' || name END, ', ') FROM pragma_table_info('events') WHERE name != 'id'")
	# No journal while filling: one transaction of this size would write
	# every page to the WAL first, tens of gigabytes.
	sqlite3 "$db" >/dev/null <<EOF
PRAGMA journal_mode = OFF;
PRAGMA synchronous = OFF;
BEGIN;
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < $copies)
INSERT INTO events ($cols) SELECT $picks FROM c, events e WHERE e.id <= $SEED;
INSERT INTO deliveries (event_id, destination, source, status, attempts, code, error, at)
	SELECT id, 'sink', source, 'delivered', 1, 200, '', processed_at FROM events WHERE id > $SEED;
INSERT INTO attempts (event_id, destination, at, duration, code, error, body)
	SELECT id, 'sink', processed_at, 1000000, 200, '', '' FROM events WHERE id > $SEED;
INSERT INTO dedupe_keys (hash, token, committed, first_seen, expires)
	SELECT hash, id, 1, received_at, received_at + 86400000000000 FROM events WHERE id > $SEED;
UPDATE status_counts SET n = n + $((copies * SEED)) WHERE source = 'app' AND status = 'processed';
COMMIT;
PRAGMA journal_mode = WAL;
EOF
else
	picks=$(psql -qAt "$DATABASE" -c "SELECT string_agg(CASE column_name
		WHEN 'hash' THEN 'substring(sha256(int8send(c.x * $SEED + e.id)) from 1 for 16)'
		WHEN 'event_id' THEN 'e.event_id || ''-'' || c.x'
		WHEN 'received_at' THEN 'e.received_at - interval ''2 days'' - (c.x * $SEED + e.id) * interval ''1 millisecond'''
		WHEN 'processed_at' THEN 'e.processed_at - interval ''2 days'' - (c.x * $SEED + e.id) * interval ''1 millisecond'''
		ELSE 'e.' || column_name END, ', ' ORDER BY ordinal_position)
		FROM information_schema.columns WHERE table_name = 'inbox_events' AND column_name != 'id'")
	cols=$(psql -qAt "$DATABASE" -c "SELECT string_agg(column_name, ', ' ORDER BY ordinal_position)
		FROM information_schema.columns WHERE table_name = 'inbox_events' AND column_name != 'id'")
	psql -q "$DATABASE" -v ON_ERROR_STOP=1 <<EOF
SET synchronous_commit = off;
INSERT INTO inbox_events ($cols) SELECT $picks FROM generate_series(1, $copies) c(x), inbox_events e WHERE e.id <= $SEED;
INSERT INTO inbox_deliveries (event_id, destination, source, status, attempts, code, error, at)
	SELECT id, 'sink', source, 'delivered', 1, 200, '', processed_at FROM inbox_events WHERE id > $SEED;
INSERT INTO inbox_attempts (event_id, destination, at, duration, code, error, body)
	SELECT id, 'sink', processed_at, 1000, 200, '', '' FROM inbox_events WHERE id > $SEED;
INSERT INTO inbox_keys (hash, first_seen, expires)
	SELECT hash, received_at, received_at + interval '1 day' FROM inbox_events WHERE id > $SEED;
INSERT INTO inbox_counts (source, counter, shard, n) VALUES ('app', 'processed', 0, $((copies * SEED)))
	ON CONFLICT (source, counter, shard) DO UPDATE SET n = inbox_counts.n + excluded.n;
VACUUM ANALYZE;
EOF
fi
echo "filled in $(($(date +%s) - fill_start)) s"

config 10s
start retention-hookgate HOOKGATE_PID "$OUT/hookgate" serve --config "$TMP/hookgate.yaml"
INTAKE=$URL/in/app
log=$LOGS/retention-hookgate.log
started=$(date +%s.%N)
echo "intake at $RATE/s in windows of $WINDOW; the first sweep comes 10 s after the start"
printf '%-8s %-8s %10s %10s %10s %8s\n' window sweep "p50 ms" "p99 ms" "max ms" accepted
swept_at= n=0 worst=0
while :; do
	n=$((n + 1))
	before=$(grep -c 'msg=sweep keys=' "$log" || true)
	w_start=$(date +%s.%N)
	res=$("$OUT/loadgen" -url "$INTAKE" -rate "$RATE" -d "$WINDOW" -warmup 0 -dup 0 -c 16 -label "w$n" -id-prefix "w$n" -json)
	after=$(grep -c 'msg=sweep keys=' "$log" || true)
	state=before
	if [[ -n $swept_at ]]; then
		state=after
	elif [[ $after -gt $before ]]; then
		state=end
		swept_at=$(date +%s.%N)
	elif awk -v a="$w_start" -v s="$started" 'BEGIN { exit !(a - s >= 10) }'; then
		state=during
	fi
	p99=$(jq .p99_ms <<<"$res")
	if [[ $state == during || $state == end ]]; then
		worst=$(awk -v a="$worst" -v b="$p99" 'BEGIN { print (b > a ? b : a) }')
	fi
	printf '%-8s %-8s %10.2f %10.2f %10.2f %8d\n' "$n" "$state" "$(jq .p50_ms <<<"$res")" "$p99" "$(jq .max_ms <<<"$res")" "$(jq .accepted <<<"$res")"
	if [[ $state == after ]] || [[ $n == "$WINDOWS" ]]; then
		break
	fi
done
if [[ -z $swept_at ]]; then
	echo "the sweep was still running after $n windows; worst intake p99 of a window during it: $worst ms (target <= 50)"
	exit 0
fi
echo "sweep: $(grep -m1 'msg=sweep keys=' "$log")"
echo "sweep ended within $(awk -v e="$swept_at" -v s="$started" 'BEGIN { printf "%.0f", e - s - 10 }') s of its start; worst intake p99 of a window during it: $worst ms (target <= 50)"
