# SPDX-License-Identifier: GPL-2.0-only
# e2e: scripts/demo --quick on the existing build: it must boot, trace, write the merged file,
# and show guest and host lines together.
. "$VT_SOURCE_ROOT/tests/integration/lib.sh"

T=$(mktemp -d /tmp/vt-e2e-demo.XXXXXX)
trap 'rm -rf "$T"' EXIT
out=$(cd "$T" && "$VT_SOURCE_ROOT/scripts/demo" --no-build --quick 2>&1)
st=$?
echo "$out"
check "scripts/demo exits 0" test "$st" -eq 0
check "demo.data in the current dir" test -s "$T/demo.data"
# boot takes KVM where /dev/kvm boots the guest (its probe; under tests/e2e/kvm-l1 VT_E2E_ACCEL=kvm
# says so), else TCG.
case ${VT_E2E_ACCEL:-} in
kvm) want=KVM ;; tcg) want=TCG ;; *) want=$(sed -n 's/^guest up under \([A-Z]*\).*/\1/p' <<<"$out"); want=${want:-NONE} ;;
esac
check_out "the demo says the guest runs under $want" "^guest up under $want" echo "$out"
check_out "its next commands grep the vCPU threads of $want" "grep -E 'vt-e2e line\|CPU \[01\]/$want'" echo "$out"
check_out "stop summary: losses 0" '^losses: ring overrun 0 events, ring dropped 0 events, ring missed-events 0 .*, transport 0 pages$' echo "$out"
check_out "excerpt: guest lines (VM:/VCPU:) with a marker" '^VM: *[0-9]+ VCPU:00[01] .*guest_ftrace:print: .*vt-e2e line 50 cpu 0' echo "$out"
# (host lines of any kind: under KVM the ones nearest a marker are often kvm_exit/kvm_entry and
# wakeups, no sched_switch: CI's kvm-demo, 2026-12-07)
check_out "excerpt: host lines" '^ +[^V].* (sched|kvm):[a-z_]+: ' echo "$out"
check_out "next commands" '^perf script -i demo.data -F \+machine_pid,\+vcpu' echo "$out"
check "the kept session merges again" "$TRACE_COLLECTOR" merge "$T/demo.session" -o "$T/again.data"
# The demo's file is the live merge (guest times converted with the probes so far while
# tracing); the offline merge converts with the final fit: the same events, their times (and
# so the host CPU a guest event's vCPU thread was on) within the clock's error bound. So: the
# same events with the same fields, times and CPUs aside.
perf script -i "$T/demo.data" -F comm,tid,event,trace 2>&1 | sort >"$T/live.txt"
perf script -i "$T/again.data" -F comm,tid,event,trace 2>&1 | sort >"$T/again.txt"
diff "$T/live.txt" "$T/again.txt" | head -n 6
check "same events as the demo's merge ($(wc -l <"$T/live.txt") lines; times aside: the live merge converts with the probes so far)" \
	cmp -s "$T/live.txt" "$T/again.txt"
finish
