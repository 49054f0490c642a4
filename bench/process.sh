#!/usr/bin/env bash
# Processing benchmark: how many events per second hookgate takes from its
# inbox (SQLite or PostgreSQL), applies to their entities and delivers to a
# destination on loopback, and how long an event takes from being sent to
# the gateway to arriving at the destination.
#
# Usage (from anywhere):  bench/process.sh
#   EVENTS=20000  events sent in phases 1 and 2         DURATION=10s  phase 3 length
#   WORKERS=4     hookgate workers (batch is 200)       CONNS=64      loadgen connections
#   SIZE=512      body bytes                            RATE=         phase 3 requests/s
#                                                       (default: half the delivered/s of phase 2)
#   DB=sqlite     the inbox: sqlite (a file in a temp directory) or postgres
#   PGURL=postgres://postgres@127.0.0.1:5432/postgres   with DB=postgres, a database to
#                 connect to; each phase creates a database of its own next to it
#                 (hookgate_process_<pid>_<phase>) and the script drops them on exit
#   DEST=http     the destination's kind: http (the sink's HTTP endpoint), nats,
#                 amqp or kafka (a broker the sink consumes from, -from)
#   NATS_URL=nats://127.0.0.1:4222      with DEST=nats, the JetStream server
#   AMQP_URL=amqp://guest@127.0.0.1:5672/  with DEST=amqp, the RabbitMQ broker,
#   AMQP_PASSWORD=guest                 and its user's password
#   ORDER=        the destination's order: (entity: per-key order over the
#                 100 orders, one delivery of an order at a time; see
#                 docs/delivery.md); empty delivers without order
#   BATCH=        with DEST=http, the destination's batch.max: up to BATCH
#                 events in one POST (docs/delivery.md#batches); empty sends
#                 one event per POST. Run once with and once without to set
#                 the batched deliveries/s beside the plain ones
#   BATCH_WAIT=50ms  the destination's batch.wait, with BATCH
#
# It builds hookgate, loadgen and sink into bench/out/ and starts the sink
# (bench/sink) once. Each phase starts `hookgate serve` on a fresh database
# (a new SQLite file, or a new PostgreSQL database) with this config:
# workers $WORKERS, batch 200, one standard source `app` with entity {type
# const:order, id json:order, version json:seq, state json:state} (every
# event upserts its entity), and one destination, on: all, signed, at the
# sink. on: all, since every event must reach the sink: two events of one
# order in flight at once may be applied newer first, and the older one is
# then stale, which on: event does not deliver. loadgen -stamp sends
# signed Standard Webhooks events, no redeliveries (-dup 0), whose bodies
# carry the send time (sent_ns) and the entity fields: 100 orders, seq
# increasing, the state changing with each event of an order.
#
# Phase 1, drain of a full inbox: the sink holds every delivery (POST
# /hold), loadgen sends exactly $EVENTS new events as fast as hookgate accepts
# them (-n $EVENTS, no warmup), and once loadgen has its 202s (every event is
# durable in the inbox) the sink is released. The workers' first batches
# (at most workers x 200 events) were leased during the fill and wait in
# their deliveries; everything else waits in the inbox. Drain throughput =
# $EVENTS / (time of the sink's last delivery - time of the release). This
# phase uses lease 10m and destination timeout 5m, so the fill must end
# within 5 minutes.
#
# Phase 2, throughput with intake and processing overlapping: loadgen sends exactly
# $EVENTS new events from $CONNS connections as fast as hookgate accepts them
# (-n $EVENTS, no warmup) while the workers deliver. The script polls the
# sink until it has received every accepted event (distinct webhook-ids ==
# loadgen's 202s). Processing throughput = the sink's deliveries / (time of
# its last delivery - time of its first). It is not a drain of a full inbox:
# the workers start on the first events while the rest are still arriving,
# and the loadgen accept rate is printed beside it. If the two are close,
# processing kept up with intake and the figure is a lower bound of what the
# workers can do; "tail" is how long deliveries continued after the last
# event was accepted (the backlog left at the end of intake).
#
# Phase 3, steady load: a fresh hookgate and database, the sink reset, and
# loadgen -rate $RATE for $DURATION (paced across all connections, no
# warmup). Once every accepted event has reached the sink, its latency
# percentiles are those of every delivery: time of receipt at the sink minus
# the sent_ns loadgen wrote just before sending (one clock, loopback).
#
# With DEST=nats, amqp or kafka the one destination is a broker's, as
# docs/destination-*.md describe it, and the sink consumes what hookgate
# publishes there (sink -from) and counts it as it counts HTTP deliveries:
# by webhook-id (Nats-Msg-Id, message_id, the webhook-id header), a
# delivery's time being when the sink read it. nats: subject
# hookgate-bench-<pid>.{source}.{type}, on a stream of that name the sink
# creates (and deletes); amqp: exchange hookgate-bench (topic, durable),
# routing_key {source}.{type}, read from a queue hookgate-bench-<pid> bound
# by "#" (deleted at the end); kafka: topic hooks (4 partitions) on
# bench/kfake, started by the script: franz-go's kfake in a process of its
# own, not a real Kafka broker, so its figures say how fast hookgate
# produces, not what Kafka takes. Phase 1 does not run: the sink cannot
# hold back a broker's messages.
#
# Server CPU: the script reads hookgate's utime + stime from /proc/PID/stat
# at the start and end of a stretch, and prints that CPU time per event
# (loadgen's 202s, or the events drained) in microseconds: in phase 1
# for the fill (loadgen's run: intake, the workers' first batches held) and
# for the drain (release to last delivery, per event drained: processing
# alone); in phases 2 and 3 from loadgen's start to the last delivery (the
# whole pipeline per event). With DB=postgres it also sums the CPU of the
# PostgreSQL backends connected to the phase's database over the same
# stretch (pg_stat_activity; not the server's shared processes such as the
# WAL writer and checkpointer).
#
# Output: a summary on stdout; loadgen and sink JSON in bench/out/process/,
# server output in bench/out/logs/process-{sink,hookgate-*}.log.
set -euo pipefail

EVENTS=${EVENTS:-20000}
DURATION=${DURATION:-10s}
WORKERS=${WORKERS:-4}
CONNS=${CONNS:-64}
SIZE=${SIZE:-512}
RATE=${RATE:-}
DB=${DB:-sqlite}
PGURL=${PGURL:-postgres://postgres@127.0.0.1:5432/postgres}
DEST=${DEST:-http}
ORDER=${ORDER:-}
BATCH=${BATCH:-}
BATCH_WAIT=${BATCH_WAIT:-50ms}
NATS_URL=${NATS_URL:-nats://127.0.0.1:4222}
AMQP_URL=${AMQP_URL:-amqp://guest@127.0.0.1:5672/}
AMQP_PASSWORD=${AMQP_PASSWORD:-guest}
# How long the sink may go without a new delivery before a phase fails.
STALL_S=30

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
OUT=$ROOT/bench/out
RESULTS=$OUT/process
LOGS=$OUT/logs
TMP=$(mktemp -d "${TMPDIR:-/tmp}/hookgate-process.XXXXXX")
SINK_PID=
HOOKGATE_PID=
KFAKE_PID=
SINK=
BASE=
URL=
# The PostgreSQL databases made so far (cleanup drops them) and the
# current phase's.
DBS=()
PGDB=
CPU_TICKS=

case $DB in
sqlite | postgres) ;;
*)
	echo "DB=$DB: want sqlite or postgres" >&2
	exit 2
	;;
esac
case $ORDER in
'' | entity) ;;
*)
	echo "ORDER=$ORDER: want entity or nothing" >&2
	exit 2
	;;
esac
case $DEST in
http | nats | amqp | kafka) ;;
*)
	echo "DEST=$DEST: want http, nats, amqp or kafka" >&2
	exit 2
	;;
esac
if [[ -n $BATCH && ! ($BATCH =~ ^[0-9]+$ && $BATCH -ge 1 && $BATCH -le 1000) ]]; then
	echo "BATCH=$BATCH: want 1 to 1000 events, or nothing" >&2
	exit 2
fi
if [[ -n $BATCH && $DEST != http ]]; then
	echo "BATCH=$BATCH: only DEST=http takes batches" >&2
	exit 2
fi

cleanup() {
	local pid db
	# A held delivery would keep both from stopping (until its timeout).
	if [[ -n $SINK ]]; then
		curl -fsS -X POST --max-time 2 "$SINK/release" >/dev/null 2>&1 || true
	fi
	for pid in $HOOKGATE_PID $SINK_PID $KFAKE_PID; do
		kill -TERM "$pid" 2>/dev/null || true
	done
	for pid in $HOOKGATE_PID $SINK_PID $KFAKE_PID; do
		wait "$pid" 2>/dev/null || true
	done
	for db in "${DBS[@]}"; do
		psql -q "$PGURL" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
	done
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

BENCH_SECRET=whsec_$(head -c 24 /dev/urandom | base64)
SINK_SECRET=whsec_$(head -c 24 /dev/urandom | base64)
export BENCH_SECRET SINK_SECRET AMQP_PASSWORD
# What the destination's config says of its broker (dest_config), and the
# sink's -from URL for it.
KAFKA=
BROKER_NAME=hookgate-bench-$$

# dest_config: prints the destination's url and what its kind adds to it.
dest_config() {
	case $DEST in
	http)
		printf '        url: %s\n        secret: env:SINK_SECRET\n' "$SINK/hooks/app"
		;;
	nats)
		printf '        url: %s\n        subject: "%s.{source}.{type}"\n' "$NATS_URL" "$BROKER_NAME"
		;;
	amqp)
		printf '        url: %s\n        password: env:AMQP_PASSWORD\n        exchange: hookgate-bench\n        routing_key: "{source}.{type}"\n' "$AMQP_URL"
		;;
	kafka)
		printf '        url: %s\n        topic: hooks\n' "$KAFKA"
		;;
	esac
}

# sink_from: prints the sink's -from URL for DEST (none for http).
sink_from() {
	case $DEST in
	nats) echo "$NATS_URL?stream=$BROKER_NAME&subject=$BROKER_NAME.>" ;;
	amqp) echo "${AMQP_URL/@/:$AMQP_PASSWORD@}?exchange=hookgate-bench&queue=$BROKER_NAME&key=%23" ;;
	kafka) echo "$KAFKA?topic=hooks" ;;
	esac
}

# newdb PHASE: sets DATABASE to a fresh database for PHASE: a file in
# the phase's directory, or on PostgreSQL a new database (PGDB), which
# cleanup drops.
newdb() {
	if [[ $DB == sqlite ]]; then
		DATABASE=sqlite:$TMP/$1/hookgate.db
		return
	fi
	PGDB=hookgate_process_$$_$1
	psql -q "$PGURL" -c "CREATE DATABASE $PGDB" >/dev/null
	DBS+=("$PGDB")
	DATABASE=${PGURL%/*}/$PGDB
}

# start_hookgate PHASE [LEASE TIMEOUT]: writes the config for a fresh
# database, with the given worker lease and destination timeout (default
# 1m and 10s), and starts hookgate; sets BASE.
start_hookgate() {
	local dir=$TMP/$1 DATABASE
	mkdir -p "$dir"
	newdb "$1"
	cat >"$dir/hookgate.yaml" <<EOF
listen: 127.0.0.1:0
database: $DATABASE
workers: $WORKERS
batch: 200
lease: ${2:-1m}
sources:
  - name: app
    provider: standard
    secret: env:BENCH_SECRET
    entity:
      type: const:order
      id: json:order
      version: json:seq
      state: json:state
    destinations:
      - name: sink
$(dest_config)
        on: all
${ORDER:+        order: $ORDER
}${BATCH:+        batch: {max: $BATCH, wait: $BATCH_WAIT\}
}        timeout: ${3:-10s}
EOF
	start "process-hookgate-$1" HOOKGATE_PID "$OUT/hookgate" serve --config "$dir/hookgate.yaml" --log-level warn
	BASE=$URL
}

stop_hookgate() {
	if ! kill -0 "$HOOKGATE_PID" 2>/dev/null; then
		echo "hookgate died; its output: $LOGS/process-hookgate-$1.log" >&2
		exit 1
	fi
	kill -TERM "$HOOKGATE_PID"
	wait "$HOOKGATE_PID" || echo "hookgate exited with status $? on SIGTERM (see $LOGS/process-hookgate-$1.log)" >&2
	HOOKGATE_PID=
}

# pg_ticks: prints "PID TICKS" for each PostgreSQL backend connected to
# the phase's database: its CPU time so far, in clock ticks.
pg_ticks() {
	local pid ticks
	for pid in $(psql -qAt "$PGURL" -c "SELECT pid FROM pg_stat_activity WHERE datname = '$PGDB'"); do
		# A backend may end between the query and the read.
		if ticks=$(cpu_ticks "$pid" 2>/dev/null); then
			echo "$pid $ticks"
		fi
	done
}

# cpu_start LABEL: reads the CPU time of hookgate, and on PostgreSQL of the
# phase database's backends, at the start of the stretch LABEL.
cpu_start() {
	CPU_TICKS=$(cpu_ticks "$HOOKGATE_PID")
	if [[ $DB == postgres ]]; then
		pg_ticks >"$TMP/$1-pg-before"
	fi
}

# cpu_stop LABEL EVENTS: ends the stretch LABEL and writes
# $RESULTS/LABEL-cpu.json: hookgate's CPU time since cpu_start per event of
# EVENTS, and on PostgreSQL the backends' (db_cpu_s, db_us_per_event): for
# each backend connected at the end, its CPU time less what it had at the
# start, if it was connected then.
cpu_stop() {
	local after json ticks
	after=$(cpu_ticks "$HOOKGATE_PID")
	json=$(cpu_per_event "$CPU_TICKS" "$after" "$2")
	if [[ $DB == postgres ]]; then
		pg_ticks >"$TMP/$1-pg-after"
		ticks=$(awk 'NR == FNR { t0[$1] = $2; next } { n += $2 - t0[$1] } END { printf "%d\n", n }' \
			"$TMP/$1-pg-before" "$TMP/$1-pg-after")
		json=$(jq -c --argjson ticks "$ticks" --argjson hz "$(getconf CLK_TCK)" '
			($ticks / $hz) as $s
			| . + {db_cpu_s: $s, db_us_per_event: (if .events > 0 then $s * 1e6 / .events | round else null end)}' <<<"$json")
	fi
	echo "$json" >"$RESULTS/$1-cpu.json"
}

sink_stats() {
	curl -fsS --max-time 5 "$SINK/stats"
}

# wait_delivered N PHASE: polls the sink until it has seen N distinct events;
# fails when no new delivery arrives for $STALL_S seconds or hookgate dies.
wait_delivered() {
	local want=$1 got=-1 last=-1 still=0
	while :; do
		got=$(sink_stats | jq .distinct)
		((got >= want)) && return
		if ! kill -0 "$HOOKGATE_PID" 2>/dev/null; then
			echo "hookgate died with $got of $want events delivered; see $LOGS/process-hookgate-$2.log" >&2
			exit 1
		fi
		if ((got == last)); then
			still=$((still + 1))
		else
			still=0 last=$got
		fi
		if ((still >= STALL_S * 10)); then
			echo "no delivery for ${STALL_S}s with $got of $want events delivered; see $LOGS/process-hookgate-$2.log" >&2
			exit 1
		fi
		sleep 0.1
	done
}

# loadgen_run LABEL ARGS...: runs a stamped, duplicate-free loadgen against
# hookgate and saves its JSON as $RESULTS/LABEL-loadgen.json.
loadgen_run() {
	local label=$1
	shift
	"$OUT/loadgen" -url "$BASE/in/app" -c "$CONNS" -size "$SIZE" -dup 0 -stamp -warmup 0 \
		-label "$label" -json "$@" >"$RESULTS/$label-loadgen.json"
}

# check_loadgen LABEL: fails unless every request was answered 202.
check_loadgen() {
	local f=$RESULTS/$1-loadgen.json
	if [[ $(jq '.errors + .other + .duplicates' "$f") != 0 ]]; then
		echo "$1: not every request was accepted: $(jq -c '{requests, accepted, duplicates, errors, other_statuses}' "$f")" >&2
		exit 1
	fi
}

cd "$ROOT"
mkdir -p "$OUT" "$LOGS"
rm -rf "$RESULTS"
mkdir -p "$RESULTS"
echo "building into $OUT"
go build -o "$OUT/hookgate" ./cmd/hookgate
go build -o "$OUT/loadgen" ./bench/loadgen
go build -o "$OUT/sink" ./bench/sink
kind=$DEST
if [[ $DEST == kafka ]]; then
	go build -o "$OUT/kfake" ./bench/kfake
	kind="kafka (bench/kfake: kfake in a process of its own, not a real Kafka broker)"
fi
echo "config: $DB inbox, workers $WORKERS, batch 200, entity apply on, 1 destination (on: all${ORDER:+, order: $ORDER}${BATCH:+, batch: max $BATCH wait $BATCH_WAIT}) on loopback, kind $kind; loadgen -c $CONNS -size $SIZE -dup 0 -stamp"
if [[ $DEST == kafka ]]; then
	start_scheme kafka process-kfake KFAKE_PID "$OUT/kfake" -listen 127.0.0.1:0 -topic hooks -partitions 4
	KAFKA=$URL
fi
from=()
if [[ $DEST != http ]]; then
	from=(-from "$(sink_from)")
fi
start process-sink SINK_PID "$OUT/sink" -listen 127.0.0.1:0 "${from[@]}"
SINK=$URL

# Phase 1: drain; the sink holds HTTP deliveries only.
if [[ $DEST == http ]]; then
	curl -fsS -X POST --max-time 5 "$SINK/hold"
	start_hookgate drain 10m 5m
	cpu_start fill
	loadgen_run drain -n "$EVENTS" -d 1h
	cpu_stop fill "$(jq .accepted "$RESULTS/drain-loadgen.json")"
	check_loadgen drain
	if (($(jq .accepted "$RESULTS/drain-loadgen.json") != EVENTS)); then
		echo "drain: loadgen got $(jq .accepted "$RESULTS/drain-loadgen.json") 202s for $EVENTS events" >&2
		exit 1
	fi
	held=$(sink_stats | jq .held)
	cpu_start drain
	release_ns=$(date +%s%N)
	curl -fsS -X POST --max-time 5 "$SINK/release"
	wait_delivered "$EVENTS" drain
	cpu_stop drain "$EVENTS"
	sink_stats >"$RESULTS/drain-sink.json"
	stop_hookgate drain
	drain_last_ns=$(date -d "$(jq -r .last_at "$RESULTS/drain-sink.json")" +%s%N)
	drain_s=$(jq -n "($drain_last_ns - $release_ns) / 1e9")
fi

# Phase 2: throughput with intake and processing overlapping.
curl -fsS -X POST --max-time 5 "$SINK/reset"
start_hookgate throughput
cpu_start throughput
loadgen_run throughput -n "$EVENTS" -d 1h
intake_end_ns=$(date +%s%N)
check_loadgen throughput
accepted=$(jq .accepted "$RESULTS/throughput-loadgen.json")
if ((accepted != EVENTS)); then
	echo "throughput: loadgen got $accepted 202s for $EVENTS events" >&2
	exit 1
fi
wait_delivered "$accepted" throughput
cpu_stop throughput "$accepted"
sink_stats >"$RESULTS/throughput-sink.json"
stop_hookgate throughput
last_ns=$(date -d "$(jq -r .last_at "$RESULTS/throughput-sink.json")" +%s%N)
tail_s=$(jq -n "($last_ns - $intake_end_ns) / 1e9 | if . < 0 then 0 else . end")

if [[ -z $RATE ]]; then
	RATE=$(jq '.per_s / 2 | floor' "$RESULTS/throughput-sink.json")
fi

# Phase 3: steady load.
curl -fsS -X POST --max-time 5 "$SINK/reset"
start_hookgate steady
cpu_start steady
loadgen_run steady -rate "$RATE" -d "$DURATION"
check_loadgen steady
# Every event sent, also those answered after loadgen's measured window
# closed (check_loadgen: each was accepted).
steady_accepted=$(jq .ids "$RESULTS/steady-loadgen.json")
wait_delivered "$steady_accepted" steady
cpu_stop steady "$steady_accepted"
sink_stats >"$RESULTS/steady-sink.json"
stop_hookgate steady

# The server CPU line of a stretch's $RESULTS/LABEL-cpu.json.
cpu='def cpu(what): "\(what)\(.us_per_event) µs per event (\(.cpu_s) s for \(.events))"
	+ if .db_cpu_s == null then "" else "; PostgreSQL backends \(.db_us_per_event) µs per event (\(.db_cpu_s) s)" end;'

echo
if [[ $DEST == http ]]; then
	jq -r --arg db "$DB" --argjson s "$drain_s" --argjson held "$held" "$cpu"'
		"phase 1, drain of a full inbox (\($db)): \(.[1].distinct) events (\(.[1].deliveries) deliveries, \(.[1].deliveries - .[1].distinct) repeated; \($held) deliveries held in flight at the release)",
		"  fill: loadgen accepted \(.[0].accepted_per_s | floor) events/s (\(.[0].seconds * 100 | round / 100) s)",
		(.[2] | cpu("  fill: server CPU       ")),
		"  drained                \(.[1].deliveries / $s | floor) events/s (release to last delivery: \($s * 100 | round / 100) s)  (target >= 5000)",
		(.[3] | cpu("  drain: server CPU      "))
	' <(jq -s . "$RESULTS/drain-loadgen.json" "$RESULTS/drain-sink.json" "$RESULTS/fill-cpu.json" "$RESULTS/drain-cpu.json")
else
	echo "phase 1, drain of a full inbox: not run with DEST=$DEST (the sink cannot hold back a broker's messages)"
fi
jq -r --arg db "$DB" --arg dest "$DEST" --argjson tail "$tail_s" "$cpu"'
	"phase 2, throughput, intake and processing overlapping (\($db), \($dest)): \(.[1].distinct) events (\(.[1].deliveries) deliveries, \(.[1].deliveries - .[1].distinct) repeated\(if .[1].batches > 0 then ", in \(.[1].batches) batches" else "" end))",
	"  loadgen accepted       \(.[0].accepted_per_s | floor) events/s (\(.[0].seconds * 100 | round / 100) s, intake p99 \(.[0].p99_ms * 100 | round / 100) ms)",
	"  sink delivered         \(.[1].per_s | floor) events/s (first to last delivery: \(.[1].seconds * 100 | round / 100) s), \(.[1].per_s / .[0].accepted_per_s * 100 | round / 100) x accepted/s  (target >= 0.9)",
	"  tail after intake end  \($tail * 1000 | round) ms",
	"  send -> delivery       p50 \(.[1].p50_ms | round) ms, p99 \(.[1].p99_ms | round) ms, max \(.[1].max_ms | round) ms (at full intake speed; target p50 <= 500)",
	(.[2] | cpu("  server CPU             "))
' <(jq -s . "$RESULTS/throughput-loadgen.json" "$RESULTS/throughput-sink.json" "$RESULTS/throughput-cpu.json")
jq -r --arg db "$DB" --arg dest "$DEST" --arg rate "$RATE" "$cpu"'
	"phase 3, steady load (\($db), \($dest)) at -rate \($rate)/s for \(.[0].seconds * 100 | round / 100) s: \(.[1].distinct) events (\(.[1].deliveries) deliveries)",
	"  loadgen accepted       \(.[0].accepted_per_s | floor) events/s, intake p50 \(.[0].p50_ms * 100 | round / 100) ms, p99 \(.[0].p99_ms * 100 | round / 100) ms  (target p99 <= 25 at 1000/s)",
	"  send -> delivery       p50 \(.[1].p50_ms * 100 | round / 100) ms, p99 \(.[1].p99_ms * 100 | round / 100) ms, max \(.[1].max_ms * 100 | round / 100) ms  (target p99 <= 100 at 1000/s)",
	(.[2] | cpu("  server CPU             "))
' <(jq -s . "$RESULTS/steady-loadgen.json" "$RESULTS/steady-sink.json" "$RESULTS/steady-cpu.json")
