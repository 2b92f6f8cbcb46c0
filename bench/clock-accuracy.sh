#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Clock correlation accuracy (ptp) in the real test guest, longer than the e2e test: runs
# tests/e2e/test-clock-accuracy.py for SECONDS with a probe every INTERVAL s and prints its
# RESULT line: hold-out markers, violations (marker outside [host send, host reply]), median
# and worst distance to the interval's midpoint (all markers, and the ones whose probe came
# back within 2x the median fitted round trip), the fit's error bound, and the control
# port's round-trip times (min / median / p99 over all probes).
#   bench/clock-accuracy.sh [SECONDS [INTERVAL [RUNS]]]   (as root, after scripts/test built build/)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-60} interval=${2:-0.5} runs=${3:-1}
export VT_CACHE=${VT_CACHE:-$top/build/cache}
export TRACE_COLLECTOR=$top/build/collector/trace-collector VT_SOURCE_ROOT=$top
export VT_E2E_BOOT=$top/tests/e2e/boot VT_E2E_KERNEL=$top/build/tests/e2e/vmlinux
export VT_E2E_INITRD=$top/build/tests/e2e/initramfs.cpio
out=$(mktemp) log=$(mktemp)
trap 'rm -f "$out" "$log"' EXIT
for r in $(seq 1 "$runs"); do
	python3 "$top/tests/e2e/test-clock-accuracy.py" --seconds "$secs" --interval "$interval" \
		--result "$out" >"$log" 2>&1 || { echo "run $r FAILED:"; tail -n 40 "$log"; exit 1; }
	echo "run $r (${secs} s, probe every ${interval} s): $(cat "$out")"
done
