#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# e2e under real KVM: runs one e2e test's command inside tests/e2e/kvm-l1's L1 (a KVM host
# nested in TCG), where the test guest boots with -accel kvm (VT_E2E_ACCEL=kvm for boot). The
# test's output and exit status are the command's; L1's console log is printed when it fails.
# The command finds the work dir (read-write, outliving L1) in VT_L1_WORK. L1's kernel faulting
# (the rig's own failure) runs the command once more, said on stderr.
#   test-kvm.sh [--unstable-tsc] -- COMMAND [ARG...]
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
l1args=()
while [ $# -gt 0 ]; do
	case $1 in
	--unstable-tsc) l1args+=("$1"); shift ;;
	--) shift; break ;;
	*) echo "test-kvm.sh: unknown argument '$1'" >&2; exit 2 ;;
	esac
done
work=$(mktemp -d /tmp/vt-kvm.XXXXXX)
# VT_KEEP_L1=1 keeps the work dir (said on stderr): a command there writes what outlives L1.
if [ "${VT_KEEP_L1:-}" = 1 ]; then echo "test-kvm.sh: keeping $work" >&2; else trap 'rm -rf "$work"' EXIT; fi
export VT_E2E_ACCEL=kvm VT_L1_WORK=$work
# The merged files the test wrote are read by perf 6.1 and 6.12 here, after L1, at the host's
# speed (tests/e2e/perf-both's defer): in L1 perf reads them at TCG's, a minute a test.
export VT_PERF_BOTH_DEFER=$work/perf-both
# L1's own kernel faulting (seen: a double fault in a "CPU 0/KVM" thread, once in about 10 L1
# runs on QEMU 10's TCG) or resetting itself (kvm-l1's status 125: QEMU exited with no end of
# the command, seen once under a port I/O loop in L2) is the rig's failure, not the test's: the
# test runs once more, said on stderr. So does the test guest (L2) resetting itself with no
# panic or oops on its console: QEMU in L1 exited 0 before the guest's 'vt-e2e: done' (boot
# says "did not reach"), a triple fault under the emulated SVM (seen once in CI, 2026-12-02,
# mid-workload, as the L1 resets were). Nothing else is retried.
L1_FAULT='traps: PANIC|double fault|Oops:|BUG: |Kernel panic|general protection fault'
for try in 1 2; do
	st=0
	rm -rf "$VT_PERF_BOTH_DEFER" "$work/after"
	"$here/kvm-l1" --work "$work" --log "$work/l1-console.log" "${l1args[@]}" -- "$@" \
		> >(tee "$work/out.$try") 2> >(tee "$work/err.$try" >&2) || st=$?
	if [ "$st" -eq 0 ]; then
		for d in "$VT_PERF_BOTH_DEFER"/files.*; do
			[ -d "$d" ] || continue
			VT_PERF_BOTH_DEFER= "$here/perf-both" --dir "$d" || { echo "FAIL perf 6.1 and 6.12 on the merged files (after L1)"; exit 1; }
		done
		# checks the test left for the host (VT_L1_WORK/after: shell lines, e.g. kvm-exits')
		[ ! -f "$work/after" ] || bash "$work/after" || exit 1
		exit 0
	fi
	echo "--- L1 console (exit status $st)"
	tr -d '\r' <"$work/l1-console.log" | tail -n 40
	fault=$(tr -d '\r' <"$work/l1-console.log" | grep -m1 -E "$L1_FAULT") ||
		{ [ "$st" -eq 125 ] && fault="L1 reset itself before the command ended"; } ||
		{ cat "$work/out.$try" "$work/err.$try" | grep -q "^boot: the guest did not reach 'vt-e2e: done'" &&
			! grep -qE "$L1_FAULT" "$work/out.$try" && fault="the test guest (L2) reset itself, no panic on its console"; } ||
		break
	[ "$try" = 1 ] || break
	echo "test-kvm.sh: the rig failed ($fault): its failure (QEMU's TCG emulation of SVM), not the test's; running the test once more" >&2
	cp "$work/l1-console.log" "$work/l1-console.fault.log"
done
exit "$st"
