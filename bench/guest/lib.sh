# SPDX-License-Identifier: GPL-2.0-only
# Helpers of the benchmark guest scripts (busybox sh). Talks to bench/vm-bench.py over the
# console: "vt-bench: ready HOSTMODE ARGS" then waits for the host's "go"; "vt-bench:
# finished" then waits for "next"; "vt-bench: result k=v ..." lines are collected.
T=/sys/kernel/tracing
say() { echo "vt-bench: $*"; }
arg() { tr ' ' '\n' </proc/cmdline | sed -n "s/^$1=//p" | tail -n 1; }
ready() { say "ready $*"; read -t 120 w || say "no go from the host"; }
finished() { say "finished"; read -t 120 w || say "no next from the host"; }
# entries + overrun + read events of every CPU of instance dir $1
events() { cat "$1"/per_cpu/cpu*/stats | awk '/^entries:|^overrun:|^read events:/ {s += $NF} END {print s + 0}'; }
overruns() { cat "$1"/per_cpu/cpu*/stats | awk '/^overrun:/ {s += $NF} END {print s + 0}'; }
# utime+stime ticks of pid $1 (all threads, dead ones included)
ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
# run time in ns of the live threads of pids $*, from schedstat
runns() {
	local s=0 p t
	for p in "$@"; do
		for t in /proc/$p/task/*/schedstat; do
			[ -r "$t" ] && s=$((s + $(cut -d' ' -f1 "$t")))
		done
	done
	echo $s
}
# times the live threads of pids $* were scheduled in (schedstat's third field: wake-ups)
runcount() {
	local s=0 p t
	for p in "$@"; do
		for t in /proc/$p/task/*/schedstat; do
			[ -r "$t" ] && s=$((s + $(cut -d' ' -f3 "$t")))
		done
	done
	echo $s
}
agentpid() { pidof trace-agent | cut -d' ' -f1; }
# bench instance $1 with events $2 (comma list), buffer $3 KB, tracing off
mkinst() {
	local d=$T/instances/$1 e
	[ -d "$d" ] || mkdir "$d"
	echo 0 >"$d/tracing_on"
	echo "$3" >"$d/buffer_size_kb"
	echo mono >"$d/trace_clock"
	for e in $(echo "$2" | tr ',' ' '); do echo 1 >"$d/events/$e/enable"; done
	echo >"$d/trace"
}
