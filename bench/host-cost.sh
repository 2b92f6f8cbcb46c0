#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Where the host's CPU goes in a session of ours (issue 33): one TCG guest (2 vCPUs), per round
# four sessions in turn — the defaults, --no-live-merge, --flush-interval 0, both — each a
# paced load of 1000-byte trace_marker lines (RATE KB/s per vCPU, SECS s, events sched+timer,
# 1 MiB rings, host perf on). Per session the host CPU is split by process from /proc just
# before stop (start, the daemon, the live follower 'merge --follow', host perf record) and
# the rest of the session's cpuacct cgroup after it (stop: its offline merge, or the follower's
# last drain). Prints medians per variant (bench/RESULTS.md), raw lines in OUT/results.txt.
#   bench/host-cost.sh [RATE [SECS [ROUNDS [OUT]]]]   (as root, after ninja -C build; takes /tmp/vt-guest.lock)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
rate=${1:-2000} secs=${2:-20} rounds=${3:-2} out=${4:-$(mktemp -d /tmp/vt-bench-hostcost.XXXXXX)}
[ "$(id -u)" -eq 0 ] || { echo "host-cost: run as root" >&2; exit 1; }
mkdir -p "$out"
export VT_CACHE=${VT_CACHE:-$top/build/cache}
flock /tmp/vt-guest.lock "$top/bench/vm-bench.py" hostcost --host-perf --secs "$secs" --rounds "$rounds" \
	--timeout $((rounds * 4 * (secs + 30) + 300)) --out "$out" \
	--start-args-cycle ';--no-live-merge;--flush-interval 0;--no-live-merge --flush-interval 0' \
	--append "vt.rate=$rate vt.nvar=4 vt.events=sched,timer" || echo "host-cost: vm-bench exit $?" >&2
"$top/bench/summarize.py" hostcost "$out/results.txt"
echo "raw: $out/results.txt"
