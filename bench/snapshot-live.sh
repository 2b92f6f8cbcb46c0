#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# snapshot's cost on a flooded session, on the real test guest (tests/e2e/lib.sh's guest): for
# each mode, a session with a background flood of markers for SECONDS, then a snapshot (timed;
# its size and event counts printed), then stop (timed). MODE live: the default (the follower
# cuts its output at the request, host events included); no-live: --no-live-merge (the spools
# are merged; the host recording only at stop).
#   bench/snapshot-live.sh [SECONDS]   (as root, after scripts/test built build/)
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-60}
export VT_CACHE=${VT_CACHE:-$top/build/cache} VT_BUILD=$top/build
export TRACE_COLLECTOR=$top/build/collector/trace-collector VT_SOURCE_ROOT=$top
export VT_E2E_BOOT=$top/tests/e2e/boot VT_E2E_KERNEL=$top/build/tests/e2e/vmlinux
export VT_E2E_INITRD=$top/build/tests/e2e/initramfs.cpio
. "$top/tests/e2e/lib.sh"
e2e_init snapshot-live

e2e_boot --timeout $((2 * secs + 600)) || { echo "boot failed"; exit 1; }
echo "file system of the session dir: $(df -T "$T" | awk 'NR == 2 { print $2 }')"
for mode in live no-live; do
	args=()
	[ "$mode" = no-live ] && args=(--no-live-merge)
	sess=$(e2e_start -e 'sched:sched_switch' "${args[@]}") || { echo "start failed: $sess"; exit 1; }
	e2e_say bgflood && e2e_wait '^vt-e2e: bgflood started' 30 || exit 1
	sleep "$secs"
	spooled=$(du -sb "$sess" | cut -f1)
	t0=$(date +%s.%N)
	snap=$(tc snapshot --name "$VM_NAME" --run-dir "$RUN" -o "$T/snap-$mode.data" 2>&1) || { echo "$snap"; exit 1; }
	t1=$(date +%s.%N)
	size=$(du -sb "$T/snap-$mode.data" | cut -f1)
	echo "$snap" | grep -E '^(snapshot|host):'
	awk -v a="$t0" -v b="$t1" -v m="$mode" -v sp="$spooled" -v sz="$size" \
		'BEGIN { printf "RESULT %s: session dir %.2f GB, snapshot %.2f GB in %.2f s\n", m, sp / 1e9, sz / 1e9, b - a }'
	"$PERF" script -i "$T/snap-$mode.data" -F event 2>/dev/null | sed 's/[: ]*$//' | sort | uniq -c
	e2e_say bgstop && e2e_wait '^vt-e2e: bgflood stopped' 30
	t0=$(date +%s.%N)
	e2e_stop -o "$T/out-$mode.data" >/dev/null 2>&1 || echo "stop failed"
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" -v m="$mode" 'BEGIN { printf "RESULT %s: stop %.2f s\n", m, b - a }'
	rm -rf "$T"/*.data
done
e2e_end
