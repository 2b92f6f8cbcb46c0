#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The host's cost of tracing 1, 2 and 4 VMs: one session of the set (start --name A --name B ...:
# one perf record for all, one merge) against separate sessions (one start per VM: a perf record
# and a merge each). Four test guests (tests/e2e/lib.sh's, 2 vCPUs each, TCG) boot once; each
# round traces N of them for SECONDS while each writes MARKERS numbered lines, then stops.
# Host CPU = the CPU time of everything trace-collector ran (start, the daemons, perf record,
# stop and its merge), from a cpuacct cgroup they all run in (QEMU is outside it); bytes = the
# session dirs (spools, host.data, metadata) plus the outputs. Prints one RESULT line per round.
#   bench/multi-vm.sh [SECONDS [MARKERS [ROUNDS]]]   (as root, under flock /tmp/vt-guest.lock)
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-6} markers=${2:-200} rounds=${3:-1}
export VT_CACHE=${VT_CACHE:-$top/build/cache} VT_BUILD=$top/build
export TRACE_COLLECTOR=$top/build/collector/trace-collector VT_SOURCE_ROOT=$top
export VT_E2E_BOOT=$top/tests/e2e/boot VT_E2E_KERNEL=$top/build/tests/e2e/vmlinux
export VT_E2E_INITRD=$top/build/tests/e2e/initramfs.cpio
. "$top/tests/e2e/lib.sh"
e2e_init multi-vm
CG=/sys/fs/cgroup/cpuacct/vt-multi-vm.$$
e2e_set_init A B C D
mkdir -p "$CG" || { echo "cannot make the cpuacct cgroup $CG"; exit 1; }
e2e_set_boot 3000 || exit 1

# in_cg COMMAND...: runs it (and all it forks: daemons, perf, merge) in the cgroup.
in_cg() { bash -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$CG" "$@"; }
seq=0
START=(-e 'sched:sched_switch' --buffer-kb 512 --clock ptp --timeout 30)
trace() { # MODE N ROUND
	local mode=$1 n=$2 r=$3 v names=() u0 u1 t0 wall bytes ok=0 out=$T/out-$1-$2
	local set=("${VMS[@]:0:$n}")
	mkdir -p "$out"
	u0=$(cat "$CG/cpuacct.usage") t0=$(date +%s.%N)
	if [ "$mode" = one ] && [ "$n" = 1 ]; then
		echo "RESULT mode=one vms=1: one VM is one session (the same as mode=separate)"
		return 0
	elif [ "$mode" = one ]; then
		for v in "${set[@]}"; do names+=(--name "vt$v"); done
		in_cg "$TRACE_COLLECTOR" start "${names[@]}" --vm-root "$ROOT" --run-dir "$RUN" "${START[@]}" \
			-o "$out/all.data" >"$out/start.log" 2>&1 || { echo "start failed: $(cat "$out/start.log")"; return 1; }
	else
		for v in "${set[@]}"; do
			in_cg "$TRACE_COLLECTOR" start --name "vt$v" --dir "$ROOT/vt$v" --run-dir "$RUN" "${START[@]}" \
				--no-live-merge -o "$out/$v.data" >>"$out/start.log" 2>&1 || { echo "start $v failed"; return 1; }
		done
	fi
	nm=$((markers + seq++)) # a count of its own: the console keeps earlier rounds' lines
	for v in "${set[@]}"; do set_use $v; e2e_say "run $nm"; done
	sleep "$secs"
	for v in "${set[@]}"; do set_use $v; e2e_wait "^vt-e2e: workload done $nm status 0" 120 || echo "workload $v failed"; done
	if [ "$mode" = one ]; then
		in_cg "$TRACE_COLLECTOR" stop --name vtA --run-dir "$RUN" >"$out/stop.log" 2>&1
	else
		for v in "${set[@]}"; do in_cg "$TRACE_COLLECTOR" stop --name "vt$v" --run-dir "$RUN" >>"$out/stop.log" 2>&1; done
	fi
	u1=$(cat "$CG/cpuacct.usage")
	wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	bytes=$(du -sbc "$out"/*.data $(for v in "${set[@]}"; do ls -d "$ROOT/vt$v"/sessions/*/ | tail -n 1; done) | tail -n 1 | cut -f1)
	hostdata=$(du -sbc $(for v in "${set[@]}"; do ls -d "$ROOT/vt$v"/sessions/*/ | tail -n 1; done | sed 's|/$|/host.data|') 2>/dev/null | tail -n 1 | cut -f1)
	ok=0
	for f in "$out"/*.data; do
		ok=$((ok + $("$PERF" script -i "$f" -F event,trace 2>/dev/null | grep -c "vt-e2e line")))
	done
	perfs=$(grep -c '^host perf: exited' "$out/stop.log")
	echo "RESULT mode=$mode vms=$n round=$r host_cpu_s=$(awk -v a="$u0" -v b="$u1" 'BEGIN { printf "%.2f", (b - a) / 1e9 }') wall_s=$wall bytes_written=$bytes host_data_bytes=$hostdata perf_records=$perfs markers_found=$ok/$((n * nm)) outputs=$(grep -c '^output:' "$out/stop.log")"
	rm -rf "$out" "$ROOT"/vt*/sessions/*
}
for r in $(seq "$rounds"); do
	for n in 1 2 4; do
		trace separate "$n" "$r"
		trace one "$n" "$r"
	done
done
for v in "${VMS[@]}"; do set_use $v; e2e_end; BOOT[$v]=; done
