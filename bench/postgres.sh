#!/usr/bin/env bash
# Intake load benchmark on PostgreSQL: hookgate nodes sharing one database
# against the per-request baseline, in one run.
#   naive         bench/naive -db postgres://...: verify, then one transaction
#                 per request (INSERT ... ON CONFLICT DO NOTHING on the key, the
#                 event when new), connections unlimited
#   hookgate-N    N `hookgate serve --process=false` nodes on one database (group
#                 commit: one statement per batch, two batches in flight per
#                 node); loadgen spreads its connections over the nodes round
#                 robin, so redeliveries cross nodes
#
# Usage (from anywhere):  bench/postgres.sh
#   PGURL=postgres://postgres@127.0.0.1:5432/postgres   a database to create the
#                 benchmark's databases from (each run gets a new one, dropped after)
#   DURATION=10s  WARMUP=2s  CONNS=64  DUP=0.2  SIZE=512  (as bench/run.sh)
#   NODES="1 2 3" node counts to run         NAIVE=1  run the baseline (0: skip)
#   KEYS=0        keys stored before the hookgate runs (e.g. 10000000: a key
#                 table larger than shared_buffers)
#   FRONT=        a Redis URL (redis://127.0.0.1:6379/0): each node count runs
#                 again with dedupe.front set ("hookgate-N-front", under a key
#                 prefix of its own, deleted after), and after each hookgate run
#                 its nodes restart (no remembered keys) and resend a quarter as
#                 many of its ids as it stored ("-replay", -warmup 0): duplicates
#                 answered from Redis vs from the database
#
# Results go to bench/out/results/pg-<run>.json, server output to
# bench/out/logs/. PostgreSQL shares the machine's cores with the nodes and
# loadgen: compare the runs of one invocation, not numbers across machines.
set -euo pipefail

DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-2s}
CONNS=${CONNS:-64}
DUP=${DUP:-0.2}
SIZE=${SIZE:-512}
NODES=${NODES:-1 2 3}
NAIVE=${NAIVE:-1}
KEYS=${KEYS:-0}
FRONT=${FRONT:-}
PGURL=${PGURL:-postgres://postgres@127.0.0.1:5432/postgres}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
OUT=$ROOT/bench/out
RESULTS=$OUT/results
LOGS=$OUT/logs
TMP=$(mktemp -d "${TMPDIR:-/tmp}/hookgate-pgbench.XXXXXX")
PIDS=()
DBS=()
RUNS=()

stop_all() {
	local pid
	for pid in "${PIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null || true
	done
	for pid in "${PIDS[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	PIDS=()
}
cleanup() {
	stop_all
	local db
	for db in "${DBS[@]}"; do
		psql -q "$PGURL" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
	done
	if [[ -n $FRONT ]]; then
		redis-cli -u "$FRONT" --scan --pattern "{hookgate_bench_$$_*" | xargs -r -n 1000 redis-cli -u "$FRONT" del >/dev/null || true
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

BENCH_SECRET=whsec_$(head -c 24 /dev/urandom | base64)
export BENCH_SECRET

# newdb NAME: creates a fresh database and prints its URL.
newdb() {
	local db=hookgate_bench_$$_$1
	psql -q "$PGURL" -c "CREATE DATABASE $db" >/dev/null
	DBS+=("$db")
	echo "${PGURL%/*}/$db"
}

# load RUN URLS [LOADGEN FLAGS...]: runs loadgen against URLS (comma-separated),
# the flags after the defaults, saves its JSON as $RESULTS/pg-RUN.json and
# prints one line.
load() {
	local run=$1 urls=$2
	"$OUT/loadgen" -url "$urls" -c "$CONNS" -d "$DURATION" -warmup "$WARMUP" -dup "$DUP" \
		-size "$SIZE" -label "$run" -json "${@:3}" >"$RESULTS/pg-$run.json"
	RUNS+=("$run")
	jq -r '"\(.label): \(.req_per_s|floor) req/s, \(.accepted_per_s|floor) 202/s, \(.duplicates_per_s|floor) 200/s, \(.errors) errors, \(.other) other, p99 \(.p99_ms*100|round/100) ms"' "$RESULTS/pg-$run.json"
}

# nodes N DBURL [PREFIX]: starts N hookgate nodes on DBURL, with the Redis
# front FRONT under the key prefix PREFIX when given, and sets NODE_URLS to
# their intake URLs, comma-separated.
nodes() {
	local n=$1 db=$2 prefix=${3:-} i urls=
	cat >"$TMP/hookgate.yaml" <<EOF
listen: 127.0.0.1:0
database: $db
sources:
  - name: app
    provider: standard
    secret: env:BENCH_SECRET
EOF
	if [[ -n $prefix ]]; then
		printf 'dedupe:\n  front: %s\n  front_prefix: %s\n' "$FRONT" "$prefix" >>"$TMP/hookgate.yaml"
	fi
	for ((i = 0; i < n; i++)); do
		start "pg-hookgate-$n-$i" SPID "$OUT/hookgate" serve --config "$TMP/hookgate.yaml" --log-level warn --process=false
		PIDS+=("$SPID")
		urls+=${urls:+,}$URL/in/app
	done
	NODE_URLS=$urls
}

# replay RUN N DBURL [PREFIX]: restarts N nodes on DBURL (as nodes), whose
# memory of recent keys is then empty, and resends ids RUN stored: a quarter
# as many requests as RUN stored ids, most of them the first copy of its id
# a node sees, so answered by the front or the database, not from memory.
replay() {
	local run=$1 ids
	ids=$(jq .ids "$RESULTS/pg-$run.json")
	nodes "$2" "$3" "${4:-}"
	load "$run-replay" "$NODE_URLS" -warmup 0s -id-prefix "$run" -replay "$ids" -n $((ids / 4))
	stop_all
}

cd "$ROOT"
mkdir -p "$OUT" "$LOGS" "$RESULTS"
rm -f "$RESULTS"/pg-*.json
echo "building into $OUT"
go build -o "$OUT/loadgen" ./bench/loadgen
go build -o "$OUT/naive" ./bench/naive
go build -o "$OUT/hookgate" ./cmd/hookgate
echo "load: -c $CONNS -d $DURATION -warmup $WARMUP -dup $DUP -size $SIZE; keys stored first: $KEYS"

if [[ $NAIVE == 1 ]]; then
	db=$(newdb naive)
	start pg-naive SPID "$OUT/naive" -listen 127.0.0.1:0 -db "$db" -max-conns 0
	PIDS+=("$SPID")
	load naive "$URL/in/app"
	stop_all
fi

for n in $NODES; do
	db=$(newdb "n$n")
	if ((KEYS > 0)); then
		# One node creates the schema; the keys go in before the measured nodes start.
		nodes 1 "$db"
		stop_all
		echo "storing $KEYS keys"
		psql -q "$db" -c "INSERT INTO inbox_keys (hash, first_seen, expires)
			SELECT decode(md5('pre' || i), 'hex'), now(), now() + interval '7 days'
			FROM generate_series(1, $KEYS) i" -c "VACUUM ANALYZE inbox_keys" >/dev/null
		psql -qtA "$db" -c "SELECT 'key table: ' || pg_size_pretty(pg_total_relation_size('inbox_keys'))
			|| ', shared_buffers: ' || current_setting('shared_buffers')"
	fi
	nodes "$n" "$db"
	load "hookgate-$n" "$NODE_URLS"
	stop_all
	if [[ -n $FRONT ]]; then
		replay "hookgate-$n" "$n" "$db"
		db=$(newdb "n${n}f")
		nodes "$n" "$db" "hookgate_bench_$$_$n"
		load "hookgate-$n-front" "$NODE_URLS"
		stop_all
		replay "hookgate-$n-front" "$n" "$db" "hookgate_bench_$$_$n"
	fi
done

echo
echo "results (ms; rates per second)"
{
	echo "run req/s 202/s 200/s errors other p50 p99 max redelivered_202 new_200"
	for run in "${RUNS[@]}"; do
		jq -r '[.label, (.req_per_s|floor), (.accepted_per_s|floor), (.duplicates_per_s|floor),
			.errors, .other, (.p50_ms*100|round/100), (.p99_ms*100|round/100), (.max_ms*100|round/100),
			.redelivered_202, .new_200] | @tsv' "$RESULTS/pg-$run.json"
	done
} | column -t
if [[ -n $FRONT ]]; then
	echo
	for n in $NODES; do
		jq -rn --slurpfile a "$RESULTS/pg-hookgate-$n-front.json" --slurpfile b "$RESULTS/pg-hookgate-$n.json" \
			--slurpfile c "$RESULTS/pg-hookgate-$n-front-replay.json" --slurpfile d "$RESULTS/pg-hookgate-$n-replay.json" \
			"\"$n node(s), front / none: accepted/s \" + (\$a[0].accepted_per_s / \$b[0].accepted_per_s * 100 | round / 100 | tostring)
			+ \", replay duplicates/s \" + (\$c[0].duplicates_per_s / \$d[0].duplicates_per_s * 100 | round / 100 | tostring)"
	done
fi
if [[ -f $RESULTS/pg-naive.json ]]; then
	echo
	for n in $NODES; do
		jq -rn --slurpfile a "$RESULTS/pg-hookgate-$n.json" --slurpfile b "$RESULTS/pg-naive.json" \
			"\"accepted/s hookgate-$n / naive: \" + (\$a[0].accepted_per_s / \$b[0].accepted_per_s * 100 | round / 100 | tostring)"
	done
fi
