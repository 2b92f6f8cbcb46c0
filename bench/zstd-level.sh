#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The merged output's compression cost and size at each zstd level, on a real merged perf.data
# (e.g. KEEP_OUT=/tmp/flood.data bench/live-stop.sh 60 live 2): the file is first rewritten
# plain (level 0), then that plain file through common/perf_writer at each level, REPS times
# (build/bench/zstd-level: CPU seconds of the rewrite, MB/s of records per CPU second, sizes).
# Level 0's line is the rewrite without compression: the difference is zstd's cost.
#   bench/zstd-level.sh FILE [LEVELS...]   env REPS (default 2), WORK (default /tmp)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
ZL=$top/build/bench/zstd-level
in=$1
shift
levels=${*:-0 1 2 3 4 5}
[ -d "$in" ] && in=$in/data
W=$(mktemp -d "${WORK:-/tmp}/vt-zstd-level.XXXXXX")
trap 'rm -rf "$W"' EXIT
"$ZL" "$in" 0 "$W/plain.data" >/dev/null
echo "input: $in, plain $(stat -c %s "$W/plain.data") bytes"
for _ in $(seq "${REPS:-2}"); do
	for l in $levels; do
		"$ZL" "$W/plain.data" "$l" "$W/out.data"
		rm -f "$W/out.data"
	done
done
