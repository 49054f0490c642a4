#!/usr/bin/env bash
# Intake load benchmark: how many signed Standard Webhooks deliveries per
# second hookgate accepts (202, durable) and answers as duplicates (200),
# against two reference servers:
#   bare      net/http that reads the body and answers 202: the ceiling of the HTTP stack
#   naive     verify + one SQLite transaction and fsync per request (bench/naive)
#   hookgate  `hookgate serve --process=false` with the config below (group commit;
#             intake only: the workers would compete for the same two cores, and
#             bench/process.sh measures processing)
#   hookgate-process  default `hookgate serve` (processing on, no destinations):
#             the workers lease and finish every event while intake runs
#   hookgate-base     `$BASE_BIN serve --process=false`: another build of hookgate
#             (e.g. main before a change), for a before/after ratio in one run
#
# Usage (from anywhere):  bench/run.sh
#   DURATION=10s  measured time per loadgen run     WARMUP=2s  unmeasured load first
#   CONNS=64      concurrent keep-alive connections DUP=0.2    share of redeliveries
#   SIZE=512      body bytes                        SERVERS="bare naive hookgate hookgate-process"
#   ROUNDS=1      times the SERVERS list runs, in turn; with more than one, each
#                 run's label ends in .rN and the ratios are printed per round
#   BASE_BIN=     the hookgate binary hookgate-base runs, built elsewhere:
#                 git worktree add /tmp/base COMMIT && (cd /tmp/base && go build -o /tmp/hookgate-base ./cmd/hookgate)
#
# It builds loadgen, bare, naive and ./cmd/hookgate into bench/out/, then for
# each server in turn: start it on a free port (port 0; the server announces
# "listening on http://ADDR") with a fresh database in a temp directory, poll
# GET /healthz until it answers, run loadgen, stop it. Results go to
# bench/out/results/<run>.json, server output to bench/out/logs/<server>.log.
#
# Runs and id scheme: loadgen gives new events the ids "<run>-0", "<run>-1",
# ... and reports how many it used ("ids" in its JSON). For naive and
# hookgate a second run, "<server>-replay", follows against the same server
# and database with `-id-prefix <server> -replay <ids>`: it resends only ids
# the first run sent, so every request is a true redelivery of a stored event
# and should be answered 200. The summary compares hookgate's 200s per second
# in that run with bare's requests per second (target: at least 70%).
#
# Server CPU: for each hookgate run (not its replay) the script reads the
# server's utime + stime from /proc/PID/stat just before and just after
# loadgen, and prints that CPU time per event accepted in between (the new
# ids loadgen sent, warmup included) in microseconds: column cpu_µs/202.
# The redeliveries answered in the same time are part of that cost. The
# target, for `hookgate` (--process=false), is at most 90 µs.
set -euo pipefail

DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-2s}
CONNS=${CONNS:-64}
DUP=${DUP:-0.2}
SIZE=${SIZE:-512}
SERVERS=${SERVERS:-bare naive hookgate hookgate-process}
ROUNDS=${ROUNDS:-1}
BASE_BIN=${BASE_BIN:-}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
OUT=$ROOT/bench/out
RESULTS=$OUT/results
LOGS=$OUT/logs
TMP=$(mktemp -d "${TMPDIR:-/tmp}/hookgate-bench.XXXXXX")
SERVER_PID=
BASE=
RUNS=()

cleanup() {
	if [[ -n $SERVER_PID ]]; then
		kill -TERM "$SERVER_PID" 2>/dev/null || true
		wait "$SERVER_PID" 2>/dev/null || true
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

BENCH_SECRET=whsec_$(head -c 24 /dev/urandom | base64)
export BENCH_SECRET

# start_server NAME CMD...: starts CMD in the background, output to
# $LOGS/NAME.log, and sets BASE once GET $BASE/healthz answers.
start_server() {
	local name=$1
	shift
	start "$name" SERVER_PID "$@"
	BASE=$URL
}

# stop_server NAME: fails if the server died during the load, else stops it.
stop_server() {
	if ! kill -0 "$SERVER_PID" 2>/dev/null; then
		echo "$1 died during the load; its output: $LOGS/$1.log" >&2
		exit 1
	fi
	kill -TERM "$SERVER_PID"
	wait "$SERVER_PID" || echo "$1 exited with status $? on SIGTERM (see $LOGS/$1.log)" >&2
	SERVER_PID=
}

# load RUN ARGS...: runs loadgen against $BASE/in/app, saves its JSON as
# $RESULTS/RUN.json and prints one line.
load() {
	local run=$1
	shift
	"$OUT/loadgen" -url "$BASE/in/app" -c "$CONNS" -d "$DURATION" -warmup "$WARMUP" \
		-size "$SIZE" -label "$run" -json "$@" >"$RESULTS/$run.json"
	RUNS+=("$run")
	jq -r '"\(.label): \(.req_per_s|floor) req/s, \(.accepted_per_s|floor) 202/s, \(.duplicates_per_s|floor) 200/s, \(.errors) errors, \(.other) other, p99 \(.p99_ms*100|round/100) ms"' "$RESULTS/$run.json"
}

# replay SERVER: resends the ids of the run SERVER on the same server.
replay() {
	local ids
	ids=$(jq -r .ids "$RESULTS/$1.json")
	load "$1-replay" -id-prefix "$1" -replay "$ids"
}

cd "$ROOT"
mkdir -p "$OUT" "$LOGS"
rm -rf "$RESULTS"
mkdir -p "$RESULTS"
echo "building into $OUT"
go build -o "$OUT/loadgen" ./bench/loadgen
go build -o "$OUT/bare" ./bench/bare
go build -o "$OUT/naive" ./bench/naive
if [[ " $SERVERS " == *" hookgate "* || " $SERVERS " == *" hookgate-process "* ]]; then
	go build -o "$OUT/hookgate" ./cmd/hookgate
fi
if [[ " $SERVERS " == *" hookgate-base "* && ! -x $BASE_BIN ]]; then
	echo "hookgate-base needs BASE_BIN, the path of another hookgate binary" >&2
	exit 2
fi
echo "load: -c $CONNS -d $DURATION -warmup $WARMUP -dup $DUP -size $SIZE, $ROUNDS round(s)"

# hookgate_run RUN BIN ARGS...: serves with BIN on a fresh database and
# loads it as RUN; ARGS go to serve. The server's CPU time (utime + stime
# from /proc) is read before and after loadgen and, per event accepted in
# that time, added to RUN's JSON as server_cpu.
hookgate_run() {
	local run=$1 bin=$2 before after events
	shift 2
	rm -f "$TMP"/hookgate.db*
	cat >"$TMP/hookgate.yaml" <<EOF
listen: 127.0.0.1:0
database: sqlite:$TMP/hookgate.db
sources:
  - name: app
    provider: standard
    secret: env:BENCH_SECRET
EOF
	start_server "$run" "$bin" serve --config "$TMP/hookgate.yaml" --log-level warn "$@"
	before=$(cpu_ticks "$SERVER_PID")
	load "$run" -dup "$DUP"
	after=$(cpu_ticks "$SERVER_PID")
	# The events accepted from the first request of the warmup to the last
	# of the run: the new ids loadgen sent, each accepted by its first send
	# (a redelivery resends only an id already answered), unless that send
	# was one of the run's errors.
	events=$(jq .ids "$RESULTS/$run.json")
	jq --argjson cpu "$(cpu_per_event "$before" "$after" "$events")" '. + {server_cpu: $cpu}' "$RESULTS/$run.json" >"$TMP/run.json"
	mv "$TMP/run.json" "$RESULTS/$run.json"
	jq -r '"\(.label): server CPU \(.server_cpu.cpu_s) s for \(.server_cpu.events) accepted events: \(.server_cpu.us_per_event) µs per event"' "$RESULTS/$run.json"
}

for round in $(seq "$ROUNDS"); do
	sfx=
	if ((ROUNDS > 1)); then
		sfx=.r$round
	fi
	for server in $SERVERS; do
		case $server in
		bare)
			start_server bare "$OUT/bare" -listen 127.0.0.1:0
			load "bare$sfx" -dup "$DUP"
			stop_server bare
			;;
		naive)
			rm -f "$TMP"/naive.db*
			start_server naive "$OUT/naive" -listen 127.0.0.1:0 -db "$TMP/naive.db"
			load "naive$sfx" -dup "$DUP"
			replay "naive$sfx"
			stop_server naive
			;;
		hookgate)
			hookgate_run "hookgate$sfx" "$OUT/hookgate" --process=false
			replay "hookgate$sfx"
			stop_server hookgate
			;;
		hookgate-process)
			hookgate_run "hookgate-process$sfx" "$OUT/hookgate"
			stop_server hookgate-process
			;;
		hookgate-base)
			hookgate_run "hookgate-base$sfx" "$BASE_BIN" --process=false
			stop_server hookgate-base
			;;
		*)
			echo "unknown server $server in SERVERS (want bare, naive, hookgate, hookgate-process, hookgate-base)" >&2
			exit 2
			;;
		esac
	done
done

echo
echo "results (ms; rates per second)"
{
	echo "run req/s 202/s 200/s errors other p50 p99 max p99(202) p99(200) redelivered_202 new_200 cpu_µs/202"
	for run in "${RUNS[@]}"; do
		jq -r '[.label, (.req_per_s|floor), (.accepted_per_s|floor), (.duplicates_per_s|floor),
			.errors, .other, (.p50_ms*100|round/100), (.p99_ms*100|round/100), (.max_ms*100|round/100),
			(.p99_202_ms*100|round/100), (.p99_200_ms*100|round/100), .redelivered_202, .new_200,
			(.server_cpu.us_per_event // "-")] | @tsv' "$RESULTS/$run.json"
	done
} | column -t

# ratio NAME RUN_A FIELD_A RUN_B FIELD_B [TARGET]: prints A/B when both runs exist.
ratio() {
	local a=$RESULTS/$2.json b=$RESULTS/$4.json r
	if [[ ! -f $a || ! -f $b ]]; then
		r="n/a (needs $2 and $4)"
	else
		r=$(jq -rn --slurpfile a "$a" --slurpfile b "$b" \
			"\$a[0].$3 as \$x | \$b[0].$5 as \$y | if \$y == 0 then \"n/a (zero)\" else \$x / \$y * 100 | round / 100 end")
	fi
	printf '%-52s %s%s\n' "$1" "$r" "${6:+  (target $6)}"
}

# cpu NAME RUN [TARGET]: prints RUN's server CPU per accepted event when
# the run exists.
cpu() {
	local f=$RESULTS/$2.json r
	if [[ -f $f ]]; then
		r=$(jq -r '.server_cpu.us_per_event // "n/a (no events)"' "$f")
	else
		r="n/a (needs $2)"
	fi
	printf '%-52s %s%s\n' "$1" "$r" "${3:+  (target $3)}"
}

echo
echo "ratios"
for round in $(seq "$ROUNDS"); do
	sfx=
	if ((ROUNDS > 1)); then
		sfx=.r$round
		echo "round $round"
	fi
	ratio "accepted/s hookgate / hookgate-base" "hookgate$sfx" accepted_per_s "hookgate-base$sfx" accepted_per_s ">= 1.3"
	ratio "accepted/s hookgate-process / hookgate" "hookgate-process$sfx" accepted_per_s "hookgate$sfx" accepted_per_s ">= 0.85"
	ratio "p99 hookgate-process / hookgate" "hookgate-process$sfx" p99_ms "hookgate$sfx" p99_ms "<= 1.5"
	ratio "p99 hookgate / hookgate-base" "hookgate$sfx" p99_ms "hookgate-base$sfx" p99_ms
	cpu "server CPU µs per accepted event, hookgate" "hookgate$sfx" "<= 90"
	cpu "server CPU µs per accepted event, hookgate-process" "hookgate-process$sfx"
	if ((ROUNDS > 1)); then
		continue
	fi
	ratio "accepted/s hookgate / naive" hookgate accepted_per_s naive accepted_per_s
	ratio "accepted/s hookgate / bare req/s" hookgate accepted_per_s bare req_per_s
	ratio "duplicates/s hookgate / naive (mixed run)" hookgate duplicates_per_s naive duplicates_per_s
	ratio "duplicates/s hookgate-replay / bare req/s" hookgate-replay duplicates_per_s bare req_per_s ">= 0.70"
	ratio "duplicates/s hookgate-replay / naive-replay" hookgate-replay duplicates_per_s naive-replay duplicates_per_s
	ratio "p99 hookgate / naive" hookgate p99_ms naive p99_ms
	ratio "p99 hookgate / bare" hookgate p99_ms bare p99_ms
	ratio "p99 hookgate-replay / bare" hookgate-replay p99_ms bare p99_ms
done
