#!/usr/bin/env bash
# Front-door limits under load (issue 9, finding 2): what unauthenticated
# senders can make the gateway hold, while real senders are measured.
#
#   idle  frontdoor idle keeps IDLE keep-alive connections open (10,000; the
#         server keeps limits.max_connections = 4,096 and closes the one idle
#         longest for each new one, and the client opens each again a second
#         later) while loadgen runs SENDERS signed senders.
#         Pass: the senders' p99 < 1 s, the server's peak RSS < 300 MB.
#   slow  frontdoor slow keeps SLOW requests (600) sending bodies of 1 MiB - 1 KiB
#         (max_body is 1 MiB) at 4 KiB/s each, too slowly to finish, again
#         reopening each a second after it is answered, while loadgen runs.
#         Pass: peak RSS < limits.max_pending_body (64 MiB) + 100 MB, and the
#         senders are served (every answer 202 or 200, p99 < 1 s).
#   slowsmall  frontdoor slowsmall keeps SLOWSMALL requests (5,000, more than
#         the 4,096 connections) that each announce a 100-byte body and send
#         one byte of it every 5 s, reopening each a second after the server
#         answers (408) or closes it (to make room), while loadgen sends
#         SMALL_RATE requests a second (20), each on a new connection.
#         Pass: the senders' p99 < 1 s, every answer 202 or 200 (the target
#         is 99%), peak RSS < 300 MB.
#
# Usage (from anywhere):  bench/frontdoor.sh
#   DURATION=10s  loadgen's measured time   SENDERS=64   loadgen's connections
#   IDLE=10000    idle connections          SLOW=600     slow requests
#   SLOW_SIZE=1047552  bytes each slow request announces (1 MiB - 1 KiB; 1048576
#                 makes 64 of them fill the budget to the byte)
#   SLOWSMALL=5000  slow small requests   SMALL_RATE=20  loadgen's requests a second
#   SCENARIOS="idle slow" (slowsmall runs when named)
#   HOOKGATE_BIN=  a hookgate binary built elsewhere (default: built from this tree)
#
# Loopback only. It raises the open-file limit (ulimit -n) of itself and so
# of the server and clients it starts; the hard limit must allow IDLE plus a
# few hundred. The server's peak RSS is its VmHWM (/proc/PID/status) when
# the load ends. Results go to bench/out/results/frontdoor-*.json, server
# output to bench/out/logs/frontdoor-*.log.
set -euo pipefail

DURATION=${DURATION:-10s}
SENDERS=${SENDERS:-64}
IDLE=${IDLE:-10000}
SLOW=${SLOW:-600}
SLOW_SIZE=${SLOW_SIZE:-$((1024 * 1024 - 1024))}
SLOWSMALL=${SLOWSMALL:-5000}
SMALL_RATE=${SMALL_RATE:-20}
SCENARIOS=${SCENARIOS:-idle slow}

want_files=$((IDLE + 1024))
if [[ " $SCENARIOS " == *" slowsmall "* ]] && ((SLOWSMALL > IDLE)); then
	want_files=$((SLOWSMALL + 1024))
fi
if (($(ulimit -Hn) < want_files)); then
	echo "the hard open-file limit $(ulimit -Hn) is below $want_files; raise it (e.g. in /etc/security/limits.conf) or lower IDLE" >&2
	exit 1
fi
ulimit -n "$want_files"

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
OUT=$ROOT/bench/out
RESULTS=$OUT/results
LOGS=$OUT/logs
TMP=$(mktemp -d "${TMPDIR:-/tmp}/hookgate-frontdoor.XXXXXX")
SERVER_PID=
CLIENT_PID=
FAILED=0

cleanup() {
	for pid in $CLIENT_PID $SERVER_PID; do
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	rm -rf "$TMP"
}
trap cleanup EXIT
mkdir -p "$RESULTS" "$LOGS"

BENCH_SECRET=whsec_$(head -c 24 /dev/urandom | base64)
export BENCH_SECRET

cd "$ROOT"
HOOKGATE_BIN=${HOOKGATE_BIN:-}
if [[ -z $HOOKGATE_BIN ]]; then
	go build -o "$OUT/hookgate" ./cmd/hookgate
	HOOKGATE_BIN=$OUT/hookgate
fi
go build -o "$OUT/loadgen" ./bench/loadgen
go build -o "$OUT/frontdoor" ./bench/frontdoor

# serve NAME: starts hookgate on a fresh database with the default limits
# (max_body 1 MiB, max_connections 4096, max_pending_body 64 MiB).
serve() {
	rm -f "$TMP"/hookgate.db*
	cat >"$TMP/hookgate.yaml" <<EOF
listen: 127.0.0.1:0
database: sqlite:$TMP/hookgate.db
sources:
  - name: app
    provider: standard
    secret: env:BENCH_SECRET
EOF
	start "frontdoor-$1" SERVER_PID "$HOOKGATE_BIN" serve --config "$TMP/hookgate.yaml" --process=false --log-level warn
}

# peak_rss_mb: the server's peak resident set so far, in MB.
peak_rss_mb() {
	awk '/^VmHWM:/ { printf "%.0f", $2 / 1024 }' "/proc/$SERVER_PID/status"
}

# check WHAT OK: prints the verdict of one criterion and remembers a failure.
check() {
	if (($2)); then
		echo "  PASS $1"
	else
		echo "  FAIL $1"
		FAILED=1
	fi
}

# scenario NAME MAX-RSS-MB CLIENT-ARGS...: serves, starts frontdoor with
# CLIENT-ARGS (@ADDR and @URL stand for the server's) for the whole run,
# lets it settle, runs loadgen (with SENDER_ARGS, default -c SENDERS), and checks the senders' p99 < 1 s, that
# every sender's request was answered 202 or 200, and the server's peak RSS.
scenario() {
	local name=$1 max_rss=$2 secs arg args=()
	shift 2
	serve "$name"
	for arg in "$@"; do
		arg=${arg//@URL/$URL}
		args+=("${arg//@ADDR/${URL#http://}}")
	done
	secs=${DURATION%s}
	"$OUT/frontdoor" "${args[@]}" -d "$((secs + 10))s" >"$RESULTS/frontdoor-$name-client.json" 2>"$LOGS/frontdoor-$name-client.log" &
	CLIENT_PID=$!
	sleep 5 # the hostile connections are open and held before the senders start
	"$OUT/loadgen" -url "$URL/in/app" "${SENDER_ARGS[@]}" -d "$DURATION" -warmup 1s -dup 0.2 -json \
		-label "frontdoor-$name" >"$RESULTS/frontdoor-$name.json"
	local rss
	rss=$(peak_rss_mb)
	wait "$CLIENT_PID"
	CLIENT_PID=
	kill -TERM "$SERVER_PID"
	wait "$SERVER_PID" || true
	SERVER_PID=
	local r=$RESULTS/frontdoor-$name.json
	echo "$name: server peak RSS $rss MB"
	echo "  senders: $(jq -c '{requests, accepted, duplicates, errors, other, other_statuses, p50_ms, p99_ms, max_ms}' "$r")"
	echo "  hostile: $(cat "$RESULTS/frontdoor-$name-client.json")"
	check "senders' p99 $(jq -r .p99_ms "$r") ms < 1000 ms" "$(jq -r '.p99_ms < 1000 | if . then 1 else 0 end' "$r")"
	check "every sender's request answered 202 or 200 ($(jq -r '.errors + .other' "$r") not)" \
		"$(jq -r '.errors + .other == 0 and .requests > 0 | if . then 1 else 0 end' "$r")"
	check "peak RSS $rss MB < $max_rss MB" "$((rss < max_rss))"
}

for s in $SCENARIOS; do
	SENDER_ARGS=(-c "$SENDERS")
	case $s in
	idle) scenario idle 300 idle -addr @ADDR -n "$IDLE" ;;
	# 64 MiB of budget is 67 MB; plus 100 MB.
	slow) scenario slow 167 slow -url @URL/in/app -n "$SLOW" -size "$SLOW_SIZE" -rate 4096 ;;
	slowsmall)
		# Senders that open a connection per request need a free slot
		# each time, which is what the slow small bodies hold.
		SENDER_ARGS=(-c "$SENDERS" -rate "$SMALL_RATE" -new-conns)
		scenario slowsmall 300 slowsmall -url @URL/in/app -n "$SLOWSMALL" -size 100 -every 5s
		;;
	*)
		echo "unknown scenario $s" >&2
		exit 1
		;;
	esac
done
exit $FAILED
