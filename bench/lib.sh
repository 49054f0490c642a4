# Shell functions the benchmark scripts share; sourced, not run. A script
# sets LOGS and its exit trap before calling them.

# start NAME VAR CMD...: starts CMD in the background with its output in
# $LOGS/NAME.log, stores its pid in the variable VAR and sets URL once it
# announced "listening on http://ADDR" and GET /healthz answers.
start() {
	local name=$1 var=$2 log=$LOGS/$1.log url pid
	shift 2
	"$@" >"$log" 2>&1 &
	pid=$!
	printf -v "$var" '%s' "$pid"
	for _ in $(seq 600); do # 600 polls, 50 ms apart: 30 s
		if ! kill -0 "$pid" 2>/dev/null; then
			echo "$name exited before answering; its output:" >&2
			cat "$log" >&2
			exit 1
		fi
		url=$(grep -o -m1 'listening on http://[^ ]*' "$log" | sed 's/^listening on //' || true)
		if [[ -n $url ]] && curl -fsS -o /dev/null --max-time 1 "$url/healthz" 2>/dev/null; then
			URL=$url
			return
		fi
		sleep 0.05
	done
	echo "$name did not answer GET /healthz within 30 s; its output:" >&2
	cat "$log" >&2
	exit 1
}
