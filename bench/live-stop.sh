#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# stop's latency against the session's size, on the real test guest (tests/e2e/lib.sh's guest):
# a background flood of markers as fast as the guest writes them for SECONDS, then 300 numbered
# markers, then stop (timed). MODE live: start --live-merge (the follower's lag and CPU sampled
# every 5 s); MODE offline: the merge at stop. Prints "sample" lines and a RESULT line; the 300
# markers are checked (once each, in order) in the output.
#   bench/live-stop.sh [SECONDS [live|offline [FLOODS]]]   (as root, after scripts/test built build/)
# FLOODS (default 2): flooding workloads in the guest (one keeps one vCPU busy at a time).
# env START_ARGS: more start options (e.g. --guest-perf, --no-compress); KEEP_OUT=PATH keeps the
# merged output there (bench/zstd-level.sh reads it). The follower's peak RSS (VmHWM) is
# sampled with its CPU: the live merge's memory is its reorder window, not the session.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-60} mode=${2:-live} floods=${3:-2}
export VT_CACHE=${VT_CACHE:-$top/build/cache} VT_BUILD=$top/build
export TRACE_COLLECTOR=$top/build/collector/trace-collector VT_SOURCE_ROOT=$top
export VT_E2E_BOOT=$top/tests/e2e/boot VT_E2E_KERNEL=$top/build/tests/e2e/vmlinux
export VT_E2E_INITRD=$top/build/tests/e2e/initramfs.cpio
. "$top/tests/e2e/lib.sh"
e2e_init live-stop

ticks=$(getconf CLK_TCK)
cpu_s() { awk -v t="$ticks" '{ printf "%.2f", ($14 + $15) / t }' "/proc/$1/stat" 2>/dev/null || echo 0; }
live_size() { stat -c %s "$1/live.data/data" 2>/dev/null || stat -c %s "$1/live.data" 2>/dev/null || echo 0; }

e2e_boot --timeout $((secs + 600)) || { echo "boot failed"; exit 1; }
# shellcheck disable=SC2086 # START_ARGS: words
sess=$(e2e_start -e 'sched:sched_switch' --buffer-kb 4096 $([ "$mode" = live ] && echo --live-merge || echo --no-live-merge) ${START_ARGS:-}) ||
	{ echo "start failed: $sess"; exit 1; }
for _ in $(seq "$floods"); do
	e2e_say bgflood && e2e_wait '^vt-e2e: bgflood started' 30 || exit 1
	sleep 0.5
done
t0=$(date +%s) fcpu=0 frss=0 last_noop=$(date +%s)
hwm() { awk '/^VmHWM/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }
while [ $(($(date +%s) - t0)) -lt "$secs" ]; do
	sleep 5
	f=$(pgrep -f "merge --follow $sess" | head -n 1)
	[ -n "$f" ] && fcpu=$(cpu_s "$f") frss=$(hwm "$f")
	echo "sample t=$(($(date +%s) - t0)) spooled=$(stat -c %s "$sess"/*cpu*.spool | paste -sd+ | bc) live_out=$(live_size "$sess") follower_cpu_s=$fcpu follower_peak_rss_kb=$frss"
	if [ $(($(date +%s) - last_noop)) -ge 60 ]; then e2e_say noop; last_noop=$(date +%s); fi
done
e2e_say bgstop; e2e_wait '^vt-e2e: bgflood stopped' 30
e2e_run 300 || echo "markers: the workload failed"
f=$(pgrep -f "merge --follow $sess" | head -n 1)
[ -n "$f" ] && fcpu=$(cpu_s "$f") frss=$(hwm "$f")
spooled=$(stat -c %s "$sess"/*cpu*.spool | paste -sd+ | bc)
s0=$(date +%s.%N)
sum=$(e2e_stop -o "$T/out.data" 2>&1); rc=$?
sw=$(awk -v a="$s0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
echo "$sum" | grep -E '^cpu|^perf cpu|perf:|losses|live:|output|input read|clock:'
ok=no; e2e_markers "$T/out.data" 300 && ok=yes
echo "RESULT mode=$mode secs=$secs floods=$floods spooled_bytes=$spooled stop_rc=$rc stop_wall_s=$sw follower_cpu_s_before_stop=$fcpu follower_peak_rss_kb=$frss markers_300_in_order=$ok out_bytes=$(stat -c %s "$T/out.data" 2>/dev/null || du -sb "$T/out.data" | cut -f1)"
if [ -n "${KEEP_OUT:-}" ]; then rm -rf "$KEEP_OUT"; mv "$T/out.data" "$KEEP_OUT"; fi
rm -rf "$T/out.data"
e2e_end
