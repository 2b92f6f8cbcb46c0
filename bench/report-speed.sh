#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# trace-collector report against perf script on the same large merged file: a real capture
# (guest = a tracefs instance of this host with sched_switch + sched_wakeup, host = perf record
# -e sched:sched_switch,sched:sched_wakeup of the same workload), grown with
# make-big-session.py to SIZE_MB of spools and merged; then the wall and CPU time and peak RSS
# of 'report FILE --json' and of 'perf script -i FILE' (to /dev/null), each run twice (the
# second with a warm page cache is the one reported).
#   bench/report-speed.sh [SIZE_MB]   (default 500: a merged file of about 1 GB); WORK=dir
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
TC=$top/build/collector/trace-collector CAP=$top/build/tests/integration/capture-session
T=/sys/kernel/tracing INST=vt_report_bench_$$ I=$T/instances/vt_report_bench_$$
W=$(mktemp -d "${WORK:-/tmp}/vt-report-speed.XXXXXX")
trap 'echo 0 > "$I/tracing_on" 2>/dev/null; rmdir "$I" 2>/dev/null; rm -rf "$W"' EXIT
mb=${1:-500}
mkdir "$I" && echo mono >"$I/trace_clock" && echo 8192 >"$I/buffer_size_kb"
echo 1 >"$I/events/sched/sched_switch/enable"; echo 1 >"$I/events/sched/sched_wakeup/enable"
mkdir "$W/s"
perf record -q -k CLOCK_MONOTONIC -e sched:sched_switch -e sched:sched_wakeup -a -o "$W/s/host.data" -- \
	perf bench sched messaging -l 150 >/dev/null 2>&1
echo 0 >"$I/tracing_on"
VT_QEMU_PID=4242 "$CAP" $T "$INST" "$W/s" 7 0 -1 >/dev/null
printf 'method=ptp\nsegments=1\nseg0.guest_start=0\nseg0.offset_ns=0\nseg0.slope=1.0\nsamples=3\nerror_bound_ns=1000\n' >"$W/s/clock.ini"
python3 "$top/bench/make-big-session.py" "$W/s" "$W/big" $((mb * 1000000 / 4096 / 2)) >/dev/null
"$TC" merge "$W/big" -o "$W/out.data" >/dev/null
rm -rf "$W/big"
in=$W/out.data
[ -d "$in" ] && in=$in/data
echo "merged file: $(($(stat -c %s "$in") / 1000000)) MB, $(perf report -i "$in" --stats 2>/dev/null | awk '/TOTAL events/ { print $NF }') records"
timed() { # LABEL CMD...
	local t0 t1 e
	for _ in 1 2; do
		t0=$(date +%s.%N)
		e=$( { /usr/bin/time -f 'rss_kb=%M cpu_s=%U+%S' "${@:2}" >/dev/null; } 2>&1 | tail -n 1)
		t1=$(date +%s.%N)
	done
	echo "$1 wall_s=$(echo "$t1 - $t0" | bc) $e"
}
"$TC" report "$W/out.data" --json >"$W/r.json"
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print("report read %d records, %d stalls over 1 ms, %d host switches" % (d["records"], len(d["stalls"]), d["host_switches"]))' "$W/r.json"
timed report "$TC" report "$W/out.data" --json
timed report-text "$TC" report "$W/out.data"
timed perf-script perf script -i "$W/out.data"
