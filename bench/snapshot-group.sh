#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The wall time of `trace-collector snapshot` of a set of VMs (start --name vtA --name vtB ...:
# every VM's daemon asked at once) against one VM's own session (--no-live-merge, so its
# snapshot is also merged from the spools): N test guests (tests/e2e/lib.sh's, 2 vCPUs each,
# TCG) boot once; each round starts the set (then vtA alone), the guests write MARKERS numbered
# lines, and ROUNDS snapshots are taken one after another, each timed (the command's wall time:
# the flushes, the probe bursts, the merge). Prints one RESULT line per snapshot, with what each
# daemon's collector.log says of its flush.
#   bench/snapshot-group.sh [VMS [MARKERS [ROUNDS]]]   (as root, under flock /tmp/vt-guest.lock)
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
nvms=${1:-2} markers=${2:-200} rounds=${3:-3}
export VT_CACHE=${VT_CACHE:-$top/build/cache} VT_BUILD=$top/build
export TRACE_COLLECTOR=$top/build/collector/trace-collector VT_SOURCE_ROOT=$top
export VT_E2E_BOOT=$top/tests/e2e/boot VT_E2E_KERNEL=$top/build/tests/e2e/vmlinux
export VT_E2E_INITRD=$top/build/tests/e2e/initramfs.cpio
. "$top/tests/e2e/lib.sh"
e2e_init snapshot-group
ALL=(A B C D)
e2e_set_init "${ALL[@]:0:$nvms}"
e2e_set_boot 3000 || exit 1

START=(-e 'sched:sched_switch' --buffer-kb 512 --clock ptp --timeout 30)
seq=0
trace() { # MODE: set (every VM) or one (vtA alone)
	local mode=$1 v names=() set=("${VMS[@]}") t0 wall out=$T/out-$1 flush
	mkdir -p "$out"
	if [ "$mode" = set ]; then
		for v in "${set[@]}"; do names+=(--name "vt$v"); done
		"$TRACE_COLLECTOR" start "${names[@]}" --vm-root "$ROOT" --run-dir "$RUN" "${START[@]}" \
			>"$out/start.log" 2>&1 || { echo "start failed: $(cat "$out/start.log")"; return 1; }
	else
		set=(A)
		"$TRACE_COLLECTOR" start --name vtA --dir "$ROOT/vtA" --run-dir "$RUN" "${START[@]}" --no-live-merge \
			>"$out/start.log" 2>&1 || { echo "start failed: $(cat "$out/start.log")"; return 1; }
	fi
	nm=$((markers + seq++)) # a count of its own: the console keeps earlier rounds' lines
	for v in "${set[@]}"; do set_use $v; e2e_say "run $nm"; done
	for v in "${set[@]}"; do set_use $v; e2e_wait "^vt-e2e: workload done $nm status 0" 120 || echo "workload $v failed"; done
	for r in $(seq "$rounds"); do
		t0=$(date +%s.%N)
		"$TRACE_COLLECTOR" snapshot --name vtA --run-dir "$RUN" -o "$out/snap-$r.data" >"$out/snap-$r.log" 2>&1
		rc=$?
		wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
		flush=$(for v in "${set[@]}"; do
			sed -n 's/.*snapshot: every CPU flushed its ring \([0-9]*\) ms after the request.*/\1/p' \
				"$(ls -d "$ROOT/vt$v"/sessions/*/ | tail -n 1)/collector.log" | tail -n 1; done | tr '\n' ',')
		found=$("$PERF" script -i "$out/snap-$r.data" -F event,trace 2>/dev/null | grep -c "vt-e2e line")
		echo "RESULT mode=$mode vms=${#set[@]} snapshot=$r exit=$rc wall_s=$wall flush_ms=${flush%,}" \
			"markers_found=$found/$((${#set[@]} * nm)) $(grep -o 'in [0-9.]* s$' "$out/snap-$r.log")"
	done
	"$TRACE_COLLECTOR" stop --name vtA --run-dir "$RUN" -o "$out/stop.data" >"$out/stop.log" 2>&1 || echo "stop failed"
	rm -rf "$out" "$ROOT"/vt*/sessions/*
}
trace set
trace one
for v in "${VMS[@]}"; do set_use $v; e2e_end; BOOT[$v]=; done
