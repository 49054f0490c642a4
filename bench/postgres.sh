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
#   POOLER=       pgbouncer: one PgBouncer (/usr/sbin/pgbouncer or on PATH) in
#                 pool_mode=transaction in front of PGURL's server, on a free
#                 port; each node count runs again through it
#                 ("hookgate-N-pgbouncer": the nodes' database is the pooler's
#                 URL, on a fresh database with the same KEYS), beside the
#                 direct run. The front runs stay direct. As root it runs as
#                 postgres (it refuses root)
#   EXEC_MODE=    pgx's statement mode for the nodes, appended to their
#                 database URL as default_query_exec_mode=EXEC_MODE (e.g.
#                 cache_statement, exec, simple_protocol); empty: hookgate's
#                 default, cache_describe. cache_statement through PgBouncer
#                 before 1.21 fails (docs/deploy.md)
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
POOLER=${POOLER:-}
EXEC_MODE=${EXEC_MODE:-}
PGURL=${PGURL:-postgres://postgres@127.0.0.1:5432/postgres}

case $POOLER in
'' | pgbouncer) ;;
*)
	echo "POOLER=$POOLER: only pgbouncer (or empty) is known" >&2
	exit 2
	;;
esac

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
BOUNCER_PID=
BOUNCER_DIR=
BOUNCER_ADDR=

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
	if [[ -n $BOUNCER_PID ]]; then
		kill -TERM "$BOUNCER_PID" 2>/dev/null || true
		wait "$BOUNCER_PID" 2>/dev/null || true
	fi
	local db
	for db in "${DBS[@]}"; do
		psql -q "$PGURL" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
	done
	if [[ -n $FRONT ]]; then
		redis-cli -u "$FRONT" --scan --pattern "{hookgate_bench_$$_*" | xargs -r -n 1000 redis-cli -u "$FRONT" del >/dev/null || true
	fi
	rm -rf "$TMP"
	if [[ -n $BOUNCER_DIR ]]; then
		rm -rf "$BOUNCER_DIR"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

BENCH_SECRET=whsec_$(head -c 24 /dev/urandom | base64)
export BENCH_SECRET

# newdb NAME: creates a fresh database and sets DB to its URL (not in a
# subshell: cleanup drops the databases DBS lists).
newdb() {
	local db=hookgate_bench_$$_$1
	psql -q "$PGURL" -c "CREATE DATABASE $db" >/dev/null
	DBS+=("$db")
	DB=${PGURL%/*}/$db
}

# execmode URL: prints URL with default_query_exec_mode=EXEC_MODE added to
# its query when EXEC_MODE is set.
execmode() {
	local url=$1
	if [[ -n $EXEC_MODE ]]; then
		if [[ $url == *\?* ]]; then
			url+="&default_query_exec_mode=$EXEC_MODE"
		else
			url+="?default_query_exec_mode=$EXEC_MODE"
		fi
	fi
	echo "$url"
}

# PGURL as scheme://[user[:password]@]host[:port]/...: the parts the pooler
# needs.
if [[ ! $PGURL =~ ^([a-z]+://)(([^:@/]*)(:([^@/]*))?@)?([^@/?]+)(.*)$ ]]; then
	echo "PGURL=$PGURL: expected postgres://[user[:password]@]host[:port]/db" >&2
	exit 2
fi
PG_SCHEME=${BASH_REMATCH[1]}
PG_USERINFO=${BASH_REMATCH[2]}
PG_USER=${BASH_REMATCH[3]:-${USER:-postgres}}
PG_PASSWORD=${BASH_REMATCH[5]}
PG_HOSTPORT=${BASH_REMATCH[6]}

# pooled URL: prints URL (a database on PGURL's server) with the pooler's
# address in place of the server's.
pooled() {
	local rest=${1#"$PG_SCHEME$PG_USERINFO$PG_HOSTPORT"}
	echo "$PG_SCHEME$PG_USERINFO$BOUNCER_ADDR$rest"
}

# start_pgbouncer: starts PgBouncer in pool_mode=transaction in front of
# PGURL's server on a free port of 127.0.0.1 (five tries) and sets
# BOUNCER_PID and BOUNCER_ADDR. Its files go in a directory of their own,
# readable by all: as root it runs as postgres, which must read them.
start_pgbouncer() {
	local bin host port target try args=() i
	bin=$(command -v pgbouncer || command -v /usr/sbin/pgbouncer) || {
		echo "POOLER=pgbouncer: pgbouncer not found on PATH or in /usr/sbin" >&2
		exit 1
	}
	host=$PG_HOSTPORT port=5432
	if [[ $host =~ ^(.*):([0-9]+)$ ]]; then
		host=${BASH_REMATCH[1]} port=${BASH_REMATCH[2]}
	fi
	host=${host#[} host=${host%]}
	target="host=$host port=$port"
	if [[ -n $PG_PASSWORD ]]; then
		target+=" password=$PG_PASSWORD"
	fi
	BOUNCER_DIR=$(mktemp -d "${TMPDIR:-/tmp}/hookgate-pgbouncer.XXXXXX")
	chmod 755 "$BOUNCER_DIR"
	printf '"%s" "%s"\n' "$PG_USER" "$PG_PASSWORD" >"$BOUNCER_DIR/users.txt"
	if ((EUID == 0)); then
		args=(-u postgres)
	fi
	for try in 1 2 3 4 5; do
		port=$((20000 + RANDOM % 40000))
		if (: </dev/tcp/127.0.0.1/$port) 2>/dev/null; then
			continue # taken
		fi
		cat >"$BOUNCER_DIR/pgbouncer.ini" <<EOF
[databases]
* = $target
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir =
auth_type = trust
auth_file = $BOUNCER_DIR/users.txt
pool_mode = transaction
max_client_conn = 5000
default_pool_size = 40
ignore_startup_parameters = extra_float_digits
logfile =
pidfile =
EOF
		chmod 644 "$BOUNCER_DIR/users.txt" "$BOUNCER_DIR/pgbouncer.ini"
		"$bin" "${args[@]}" "$BOUNCER_DIR/pgbouncer.ini" >"$LOGS/pg-pgbouncer.log" 2>&1 &
		BOUNCER_PID=$!
		for ((i = 0; i < 200; i++)); do # 200 polls, 50 ms apart: 10 s
			if ! kill -0 "$BOUNCER_PID" 2>/dev/null; then
				break
			fi
			if (: </dev/tcp/127.0.0.1/$port) 2>/dev/null; then
				BOUNCER_ADDR=127.0.0.1:$port
				echo "pgbouncer $("$bin" --version | head -1 | cut -d' ' -f2) (pool_mode=transaction) on $BOUNCER_ADDR"
				return
			fi
			sleep 0.05
		done
		kill -TERM "$BOUNCER_PID" 2>/dev/null || true
		wait "$BOUNCER_PID" 2>/dev/null || true
		BOUNCER_PID=
		echo "pgbouncer on port $port did not start (try $try); its output:" >&2
		cat "$LOGS/pg-pgbouncer.log" >&2
	done
	echo "could not start pgbouncer" >&2
	exit 1
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

# nodes RUN N DBURL [PREFIX]: starts N hookgate nodes on DBURL (with EXEC_MODE
# added), with the Redis front FRONT under the key prefix PREFIX when given,
# their output in $LOGS/pg-RUN-I.log, and sets NODE_URLS to their intake
# URLs, comma-separated.
nodes() {
	local run=$1 n=$2 db prefix=${4:-} i urls=
	db=$(execmode "$3")
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
		start "pg-$run-$i" SPID "$OUT/hookgate" serve --config "$TMP/hookgate.yaml" --log-level warn --process=false
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
	nodes "$run-replay" "$2" "$3" "${4:-}"
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
echo "nodes' statement mode: ${EXEC_MODE:-the default (cache_describe)}"
if [[ $POOLER == pgbouncer ]]; then
	start_pgbouncer
fi

if [[ $NAIVE == 1 ]]; then
	newdb naive
	start pg-naive SPID "$OUT/naive" -listen 127.0.0.1:0 -db "$DB" -max-conns 0
	PIDS+=("$SPID")
	load naive "$URL/in/app"
	stop_all
fi

# keydb NAME: creates a fresh database as newdb, with KEYS keys stored when
# KEYS > 0, and sets DB to its URL.
keydb() {
	newdb "$1"
	if ((KEYS > 0)); then
		# One node creates the schema; the keys go in before the measured nodes start.
		nodes "schema-$1" 1 "$DB"
		stop_all
		echo "storing $KEYS keys"
		psql -q "$DB" -c "INSERT INTO inbox_keys (hash, first_seen, expires)
			SELECT decode(md5('pre' || i), 'hex'), now(), now() + interval '7 days'
			FROM generate_series(1, $KEYS) i" -c "VACUUM ANALYZE inbox_keys" >/dev/null
		psql -qtA "$DB" -c "SELECT 'key table: ' || pg_size_pretty(pg_total_relation_size('inbox_keys'))
			|| ', shared_buffers: ' || current_setting('shared_buffers')"
	fi
}

for n in $NODES; do
	keydb "n$n"
	direct=$DB
	nodes "hookgate-$n" "$n" "$direct"
	load "hookgate-$n" "$NODE_URLS"
	stop_all
	if [[ $POOLER == pgbouncer ]]; then
		keydb "n${n}p"
		nodes "hookgate-$n-pgbouncer" "$n" "$(pooled "$DB")"
		load "hookgate-$n-pgbouncer" "$NODE_URLS"
		stop_all
	fi
	if [[ -n $FRONT ]]; then
		replay "hookgate-$n" "$n" "$direct"
		newdb "n${n}f"
		nodes "hookgate-$n-front" "$n" "$DB" "hookgate_bench_$$_$n"
		load "hookgate-$n-front" "$NODE_URLS"
		stop_all
		replay "hookgate-$n-front" "$n" "$DB" "hookgate_bench_$$_$n"
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
if [[ $POOLER == pgbouncer ]]; then
	echo
	for n in $NODES; do
		jq -rn --slurpfile a "$RESULTS/pg-hookgate-$n-pgbouncer.json" --slurpfile b "$RESULTS/pg-hookgate-$n.json" \
			"\"$n node(s), accepted/s through pgbouncer / direct: \" + (\$a[0].accepted_per_s / \$b[0].accepted_per_s * 100 | round / 100 | tostring)"
	done
fi
if [[ -f $RESULTS/pg-naive.json ]]; then
	echo
	for n in $NODES; do
		jq -rn --slurpfile a "$RESULTS/pg-hookgate-$n.json" --slurpfile b "$RESULTS/pg-naive.json" \
			"\"accepted/s hookgate-$n / naive: \" + (\$a[0].accepted_per_s / \$b[0].accepted_per_s * 100 | round / 100 | tostring)"
	done
fi
