# shellcheck shell=bash
# Shell functions the benchmark scripts share; sourced, not run. A script
# sets LOGS and its exit trap before calling them.

# start NAME VAR CMD...: starts CMD in the background with its output in
# $LOGS/NAME.log, stores its pid in the variable VAR and sets URL once it
# announced "listening on http://ADDR" and GET /healthz answers.
start() {
	start_scheme http "$@"
}

# start_scheme SCHEME NAME VAR CMD...: start for a server that announces
# "listening on SCHEME://ADDR"; one that is not http is taken to accept
# connections once it announced its address (bench/kfake).
start_scheme() {
	local scheme=$1 name=$2 var=$3 log=$LOGS/$2.log url pid
	shift 3
	"$@" >"$log" 2>&1 &
	pid=$!
	printf -v "$var" '%s' "$pid"
	for _ in $(seq 600); do # 600 polls, 50 ms apart: 30 s
		if ! kill -0 "$pid" 2>/dev/null; then
			echo "$name exited before answering; its output:" >&2
			cat "$log" >&2
			exit 1
		fi
		url=$(grep -o -m1 "listening on $scheme://[^ ]*" "$log" | sed 's/^listening on //' || true)
		if [[ -n $url ]] && { [[ $scheme != http ]] || curl -fsS -o /dev/null --max-time 1 "$url/healthz" 2>/dev/null; }; then
			# shellcheck disable=SC2034 # read by the scripts that source this file
			URL=$url
			return
		fi
		sleep 0.05
	done
	echo "$name did not answer within 30 s; its output:" >&2
	cat "$log" >&2
	exit 1
}

# cpu_ticks PID: prints the CPU time PID has used so far, user and system,
# in clock ticks (getconf CLK_TCK of them a second), from /proc/PID/stat.
cpu_ticks() {
	local stat fields
	stat=$(<"/proc/$1/stat") || return
	# The fields after the command name, which is in parentheses and may
	# hold spaces: the state is the first of them, utime the 12th and
	# stime the 13th (fields 14 and 15 of proc(5)).
	read -ra fields <<<"${stat##*) }"
	echo $((fields[11] + fields[12]))
}

# cpu_per_event TICKS0 TICKS1 EVENTS: prints, as JSON, the CPU seconds
# between two readings of cpu_ticks (cpu_s), EVENTS (events), and the CPU
# time per event in microseconds (us_per_event, null without events).
cpu_per_event() {
	jq -cn --argjson ticks $(($2 - $1)) --argjson hz "$(getconf CLK_TCK)" --argjson n "$3" '
		($ticks / $hz) as $s
		| {cpu_s: $s, events: $n, us_per_event: (if $n > 0 then $s * 1e6 / $n | round else null end)}'
}
