#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Offline merge (what stop runs) against the session's size: a real capture (guest = a tracefs
# instance of this host with sched_switch + sched_wakeup, host = perf record of the same
# workload), grown with make-big-session.py to each size, merged with trace-collector (and with
# OLD, an earlier build's trace-collector, when given): wall, CPU, peak RSS, bytes of spool read
# per byte spooled. At each size, in the same run, perf inject rewriting a perf.data of that
# scale: the merge's own output (host and guest records, ~2x the spools), so both tools' MB/s of
# input and RSS sit side by side. Then perf inject on a plain host recording, for comparison.
#   bench/merge-size.sh [SIZES_MB...]   env OLD=path/to/trace-collector, WORK=dir (default /tmp)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
TC=$top/build/collector/trace-collector CAP=$top/build/tests/integration/capture-session
T=/sys/kernel/tracing INST=vt_merge_bench_$$ I=$T/instances/vt_merge_bench_$$
W=$(mktemp -d "${WORK:-/tmp}/vt-merge-size.XXXXXX")
trap 'echo 0 > "$I/tracing_on" 2>/dev/null; rmdir "$I" 2>/dev/null; rm -rf "$W"' EXIT
sizes=${*:-100 1000 10000}
mkdir "$I" && echo mono >"$I/trace_clock" && echo 8192 >"$I/buffer_size_kb"
echo 1 >"$I/events/sched/sched_switch/enable"; echo 1 >"$I/events/sched/sched_wakeup/enable"
mkdir "$W/s"
perf record -q -k CLOCK_MONOTONIC -e sched:sched_switch -e sched:sched_wakeup -a -o "$W/s/host.data" -- \
	perf bench sched messaging -l 150 >/dev/null 2>&1
echo 0 >"$I/tracing_on"
VT_QEMU_PID=4242 "$CAP" $T "$INST" "$W/s" 7 0 -1 >/dev/null
printf 'method=ptp\nsegments=1\nseg0.guest_start=0\nseg0.offset_ns=0\nseg0.slope=1.0\nsamples=3\nerror_bound_ns=1000\n' >"$W/s/clock.ini"
run() { # LABEL BINARY DIR
	local t0 t1 out
	rm -rf "$W/out.data" "$W/out.data.old"
	t0=$(date +%s.%N)
	out=$(/usr/bin/time -f 'time_rss_kb=%M cpu_s=%U+%S' "$2" merge "$3" -o "$W/out.data" 2>&1) || true
	t1=$(date +%s.%N)
	echo "merge $1 spooled_mb=$(($(cat "$3"/cpu*.spool | wc -c) / 1000000)) wall_s=$(echo "$t1 - $t0" | bc) \
$(grep -o 'time_rss_kb=.*' <<<"$out") read_bytes=$(sed -n 's/.*input read: \([0-9]*\) bytes.*/\1/p' <<<"$out") \
spooled_bytes=$(cat "$3"/cpu*.spool | wc -c) out_mb=$(($(stat -c %s "$W/out.data") / 1000000))"
}
inject() { # SIZE_MB: perf inject rewriting the merge's output of this size
	local t0 t1 in=$W/out.data
	[ -d "$in" ] && in=$in/data
	sync
	t0=$(date +%s.%N)
	/usr/bin/time -f 'time_rss_kb=%M cpu_s=%U+%S' perf inject -i "$in" -o "$W/inj.data" 2>"$W/inj.err" || true
	t1=$(date +%s.%N)
	echo "inject-merged size_mb=$1 in_mb=$(($(stat -c %s "$in") / 1000000)) wall_s=$(echo "$t1 - $t0" | bc) \
$(grep -o 'time_rss_kb=.*' "$W/inj.err") out_mb=$(($(stat -c %s "$W/inj.data" 2>/dev/null || echo 0) / 1000000))"
	rm -rf "$W/inj.data" "$W/out.data"
}
for mb in $sizes; do
	rm -rf "$W/big"
	python3 "$top/bench/make-big-session.py" "$W/s" "$W/big" $((mb * 1000000 / 4096 / 2)) >/dev/null
	sync
	if [ -n "${OLD:-}" ]; then # ABBA: the page cache favours whichever runs later
		run "new size_mb=$mb" "$TC" "$W/big"; run "old size_mb=$mb" "$OLD" "$W/big"
		run "old size_mb=$mb" "$OLD" "$W/big"; run "new size_mb=$mb" "$TC" "$W/big"
	else
		run "new size_mb=$mb" "$TC" "$W/big"
	fi
	inject "$mb"
done
rm -rf "$W/big"
# perf inject rewriting a host recording (MB/s to compare: a host file as large as 10 GB of
# spools takes too long to record here).
perf record -q -e 'sched:sched_switch' -e 'sched:sched_wakeup' -e 'sched:sched_stat_runtime' -a -o "$W/host-big.data" -- \
	perf bench sched messaging -l ${INJECT_LOOPS:-3000} >/dev/null 2>&1 || true
t0=$(date +%s.%N)
/usr/bin/time -f 'time_rss_kb=%M cpu_s=%U+%S' perf inject -i "$W/host-big.data" -o "$W/inj.data" 2>"$W/inj.err" || true
t1=$(date +%s.%N)
echo "inject host_mb=$(($(stat -c %s "$W/host-big.data") / 1000000)) wall_s=$(echo "$t1 - $t0" | bc) $(grep -o 'time_rss_kb=.*' "$W/inj.err")"
