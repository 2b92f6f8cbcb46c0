#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The flight recorder through a long flood, on the real test guest (tests/e2e/lib.sh's guest):
# start --flight-recorder SIZE, a background flood of markers as fast as the guest writes them
# for SECONDS, the session's spool disk use (allocated blocks) sampled every 2 s, a snapshot
# every SNAP_EVERY s (its wall time and output size), then stop (its wall time). Prints one
# "sample" line per reading and a RESULT line.
#   bench/flight-soak.sh [SECONDS [SIZE [SNAP_EVERY]]]   (as root, after scripts/test built build/)
# env START_ARGS: more start options, e.g. '--guest-perf --guest-freq 4000' (the perf spools and
# their perf-cpuN.side files are counted in the disk use too).
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-600} size=${2:-64M} snap_every=${3:-60}
export VT_CACHE=${VT_CACHE:-$top/build/cache} VT_BUILD=$top/build
export TRACE_COLLECTOR=$top/build/collector/trace-collector VT_SOURCE_ROOT=$top
export VT_E2E_BOOT=$top/tests/e2e/boot VT_E2E_KERNEL=$top/build/tests/e2e/vmlinux
export VT_E2E_INITRD=$top/build/tests/e2e/initramfs.cpio
. "$top/tests/e2e/lib.sh"
e2e_init flight-soak

e2e_boot --timeout $((secs + 180)) || { echo "boot failed"; exit 1; }
# shellcheck disable=SC2086 # START_ARGS: words
sess=$(e2e_start -e 'sched:sched_switch' --buffer-kb 4096 --flight-recorder "$size" ${START_ARGS:-}) ||
	{ echo "start failed: $sess"; exit 1; }
e2e_say bgflood && e2e_wait '^vt-e2e: bgflood started' 30 || exit 1
t0=$(date +%s.%N) max=0 next_snap=$snap_every nsnap=0 snap_max=0
while :; do
	now=$(date +%s.%N) el=$(echo "$now - $t0" | bc)
	[ "$(echo "$el >= $secs" | bc)" = 1 ] && break
	du=$(du -B1 -c "$sess"/*cpu*.spool "$sess"/perf-cpu*.side 2>/dev/null | tail -n 1 | cut -f1)
	du=${du:-0}
	[ "$du" -gt "$max" ] && max=$du
	st=$(e2e_status)
	echo "sample t=${el%.*} spool_du=$du logical=$(stat -c %s "$sess"/*cpu*.spool | paste -sd+ | bc) host_data=$(du -B1 -c "$sess"/host.data* 2>/dev/null | tail -n 1 | cut -f1) $(grep '^flight recorder' <<<"$st" | sed 's/.* \([0-9.]*\) MiB dropped so far/dropped_mib=\1/')"
	if [ "$(echo "$el >= $next_snap" | bc)" = 1 ]; then
		s0=$(date +%s.%N)
		out=$(tc snapshot --name "$VM_NAME" --run-dir "$RUN" -o "$T/snap.data" 2>&1); rc=$?
		sw=$(echo "$(date +%s.%N) - $s0" | bc)
		nsnap=$((nsnap + 1))
		[ "$(echo "$sw > $snap_max" | bc)" = 1 ] && snap_max=$sw
		echo "snapshot n=$nsnap rc=$rc wall_s=$sw out_bytes=$(du -sb "$T/snap.data" 2>/dev/null | cut -f1) guest=$(sed -n 's/.*guest: *\([0-9]*\) samples written.*/\1/p' <<<"$out") host=$(sed -n 's/.*host: *recording merged, \([0-9]*\) samples.*/\1/p' <<<"$out")"
		[ $rc -eq 0 ] || echo "$out" | tail -n 5
		rm -rf "$T/snap.data"
		next_snap=$((next_snap + snap_every))
		e2e_say noop # the guest's command loop waits at most 120 s for a line
	fi
	sleep 2
done
e2e_say bgstop; e2e_wait '^vt-e2e: bgflood stopped' 30
s0=$(date +%s.%N)
sum=$(e2e_stop -o "$T/out.data" 2>&1); rc=$?
sw=$(echo "$(date +%s.%N) - $s0" | bc)
echo "$sum" | grep -E '^cpu|^perf cpu|flight recorder|losses|output|input read'
echo "RESULT secs=$secs size=$size spool_du_max=$max snapshots=$nsnap snapshot_wall_max_s=$snap_max stop_rc=$rc stop_wall_s=$sw out_bytes=$(du -sb "$T/out.data" 2>/dev/null | cut -f1)"
e2e_end
