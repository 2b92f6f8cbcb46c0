#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# A long flood with every default (issue 43): the real test guest floods its rings with markers
# from FLOODS background workloads for SECONDS, then writes 300 numbered markers; stop is timed.
# Reports what was spooled (the spools' sizes: every byte the guest sent), the session dir's peak
# and final disk use (what the defaults kept on disk), the output's size, any "cut:" line, what
# was freed from the spools behind the live merge, stop's wall time, the live merge's lag as
# status showed it, and whether the 300 markers are in the output once each and in order.
#   bench/flood-defaults.sh [SECONDS [FLOODS]]    (as root, after scripts/test built build/)
# env FLOOD_CMD: bgwide for 1000-byte lines (denser pages, a faster flood); START_ARGS: start options beside the defaults (e.g. '--max-size 2G' to see the bound act
# sooner). A benchmark: it reports, it never fails on speed.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-20} floods=${2:-2}
export VT_CACHE=${VT_CACHE:-$top/build/cache} VT_BUILD=$top/build
export TRACE_COLLECTOR=$top/build/collector/trace-collector VT_SOURCE_ROOT=$top
export VT_E2E_BOOT=$top/tests/e2e/boot VT_E2E_KERNEL=$top/build/tests/e2e/vmlinux
export VT_E2E_INITRD=$top/build/tests/e2e/initramfs.cpio
. "$top/tests/e2e/lib.sh"
e2e_init flood-defaults

apparent() { stat -c %s "$1"/*cpu*.spool 2>/dev/null | paste -sd+ | bc; }
on_disk() { du -sB1 "$1" | cut -f1; }

e2e_boot --timeout $((secs + 900)) || { echo "boot failed"; exit 1; }
# shellcheck disable=SC2086 # START_ARGS: words
sess=$(e2e_start ${START_ARGS:-}) || { echo "start failed: $sess"; exit 1; }
for _ in $(seq "$floods"); do
	e2e_say "${FLOOD_CMD:-bgflood}" && e2e_wait '^vt-e2e: bgflood started' 30 || exit 1
	sleep 0.5
done
t0=$(date +%s) peak=0 lag=0 last_noop=$t0
while [ $(($(date +%s) - t0)) -lt "$secs" ]; do
	sleep 5
	du=$(on_disk "$sess")
	[ "$du" -gt "$peak" ] && peak=$du
	st=$(e2e_status 2>&1)
	behind=$(sed -n 's/.* \([0-9.]*\) MB of guest pages still to merge.*/\1/p' <<<"$st")
	[ -n "$behind" ] && awk -v a="$behind" -v b="$lag" 'BEGIN { exit !(a > b) }' && lag=$behind
	echo "sample t=$(($(date +%s) - t0)) spooled=$(apparent "$sess") session_on_disk=$du to_merge_mb=${behind:-?} $(grep -E '^disk:' <<<"$st" | head -n 2 | tr '\n' ' ')"
	grep -q '^state: tracing' <<<"$st" || { echo "the session is no longer tracing:"; echo "$st"; break; }
	if [ $(($(date +%s) - last_noop)) -ge 60 ]; then e2e_say noop; last_noop=$(date +%s); fi
done
e2e_say bgstop; e2e_wait '^vt-e2e: bgflood stopped' 60
e2e_run 300 || echo "markers: the workload failed"
spooled=$(apparent "$sess")
s0=$(date +%s.%N)
sum=$(e2e_stop -v -o "$T/out.data" 2>&1); rc=$?
sw=$(awk -v a="$s0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
echo "$sum" | grep -E '^(stopped|cut|disk|output|losses|missing|live)'
cut=no; grep -q '^cut:' <<<"$sum" && cut=yes
released=$(sed -n 's/^disk: \([0-9.]* [KMGT]iB\) of the spools freed.*/\1/p' <<<"$sum" | tr -d ' ')
# perf reads the whole output (perf script of every marker); its peak memory is measured:
# perf keeps every decompressed zstd chunk of a file until the end (a 10-minute flood's 320 MB
# output took more than this host's 24 GiB). PERF_RSS_MAX_KB (default 8 GiB) bounds it.
ok=no
/usr/bin/time -o "$T/perf.time" -f '%M' prlimit --as=$(( ${PERF_RSS_MAX_KB:-8388608} * 1024 )) \
	"$PERF" script -i "$T/out.data" -F event,trace 2>/dev/null |
	sed -n 's/.*guest_ftrace:print:.*vt-e2e line \([0-9]*\) cpu.*/\1/p' | tr '\n' ' ' >"$T/markers"
rss=$(tail -n 1 "$T/perf.time")
[ "$(cat "$T/markers")" = "$(seq -s ' ' 0 299) " ] && ok=yes
out=$(stat -c %s "$T/out.data" 2>/dev/null || du -sb "$T/out.data" | cut -f1)
echo "RESULT secs=$secs floods=$floods spooled_bytes=$spooled session_peak_on_disk=$peak session_final_on_disk=$(on_disk "$sess") out_bytes=$out cut=$cut released=${released:-0} stop_rc=$rc stop_wall_s=$sw max_to_merge_mb=$lag markers_300_in_order=$ok perf_script_peak_rss_kb=${rss:-?} start_args='${START_ARGS:-}'"
if [ -n "${KEEP_OUT:-}" ]; then rm -rf "$KEEP_OUT"; mv "$T/out.data" "$KEEP_OUT"; fi
rm -rf "$T/out.data"
# the logs kept for a look (the session dir goes with the guest's tmp dir)
keep=${KEEP_LOGS:-/tmp/flood-defaults-logs}
mkdir -p "$keep" && cp "$sess/collector.log" "$sess/live-merge.log" "$LOG" "$keep/" 2>/dev/null
e2e_end
