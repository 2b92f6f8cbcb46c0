# SPDX-License-Identifier: GPL-2.0-only
# The kvm clock method end to end without a KVM guest (these hosts cannot boot one): a host
# tracefs instance with trace_clock x86-tsc stands in for the guest (guest TSC = host TSC), a
# synthetic KVM debugfs tree gives every "vCPU" a tsc-offset, collector/daemon/clocksync.c (the
# daemon's code, via kvm-session) writes kvm.samples and clock.ini, and the spools' page
# timestamps are shifted by the same offset, as KVM would show them to a guest. The merge
# must undo the offset exactly: markers written at known CLOCK_MONOTONIC times come out
# between the times taken around each write (± the stated error bound), identically for
# offset 0 and a large offset. Unverified on real KVM here (PVM: no KVM guest boots).
. "$(dirname "$0")/lib.sh"

T=/sys/kernel/tracing
[ -x "$PERF" ] || { fail "perf not found at $PERF (install linux-perf)"; finish; exit 1; }
[ -e $T/instances ] || mount -t tracefs nodev $T || { fail "cannot mount tracefs"; finish; exit 1; }
grep -qw x86-tsc $T/trace_clock || { fail "host has no x86-tsc trace clock (x86 only)"; finish; exit 1; }
INST=${VT_TEST_INSTANCE_PREFIX:-vt_clock_kvm_test}_$$
I=$T/instances/$INST
W=$(mktemp -d /tmp/vt-clock-kvm.XXXXXX)
QPID=4242
OFFSET=123456789012345
cleanup() {
	[ -n "${KEEP:-}" ] && return
	[ -d "$I" ] && { echo 0 > "$I/tracing_on"; echo > "$I/set_event"; rmdir "$I"; }
	rm -rf "$W"
}
trap cleanup EXIT

# debugfs ROOT OFFSET: ROOT/kvm/QPID-7/vcpuN/tsc-offset for every host CPU (no scaling files,
# as on hosts without TSC scaling).
debugfs() {
	local c
	for c in $(seq 0 $(($(nproc) - 1))); do
		mkdir -p "$1/kvm/$QPID-7/vcpu$c" && echo "$2" > "$1/kvm/$QPID-7/vcpu$c/tsc-offset" || return 1
	done
}

# markers FILE: writes vt-kvm-N into the instance, logging "N mono_before mono_after".
markers() {
	echo 1 > "$I/tracing_on"
	python3 - "$I/trace_marker" "$1" <<'PY' || return 1
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY)
with open(sys.argv[2], "w") as log:
    for n in range(20):
        a = time.monotonic_ns()
        os.write(fd, f"vt-kvm-{n}\n".encode())
        b = time.monotonic_ns()
        log.write(f"{n} {a} {b}\n")
        time.sleep(0.01)
PY
	echo 0 > "$I/tracing_on"
}

# shift DIR OFFSET: adds OFFSET to every ring page's timestamp (u64 at 0) between the begin
# and end marker pages of each cpuN.spool: what a guest behind that tsc-offset would record.
shift_spools() {
	python3 - "$1" "$2" <<'PY'
import glob, struct, sys
d, off = sys.argv[1], int(sys.argv[2])
ps = int([l.split("=")[1] for l in open(f"{d}/session.ini") if l.startswith("page_size=")][0])
for path in glob.glob(f"{d}/cpu*.spool"):
    b = bytearray(open(path, "rb").read())
    for p in range(ps, len(b) - ps, ps):
        ts, = struct.unpack_from("<Q", b, p)
        struct.pack_into("<Q", b, p, (ts + off) & (2**64 - 1))
    open(path, "wb").write(b)
PY
}

# One capture with kvm-session around the marker writes.
# Tracing only inside kvm-session's window (its first and last readings).
mkdir "$I" && echo 0 > "$I/tracing_on" && echo x86-tsc > "$I/trace_clock" && echo 1 > "$I/events/sched/sched_switch/enable" ||
	{ fail "cannot set up tracefs instance $I"; finish; exit 1; }
check "fixture debugfs, offset 0" debugfs "$W/dbg0" 0
check "fixture debugfs, offset $OFFSET" debugfs "$W/dbgO" "$OFFSET"
mkdir -p "$W/s0"
export -f markers; export I
check_out "kvm-session states method, readings, error bound" \
	"^kvm \(host TSC → perf clock by (perf's TIME_CONV|a measured TSC↔CLOCK_MONOTONIC fit)\), 2 readings of $(nproc) vCPUs in kvm.samples, error bound [0-9]+ ns$" \
	"$KVM_SESSION" "$W/s0" "$W/dbg0" $QPID bash -c "markers $W/markers.txt"
check "capture" "$CAPTURE_SESSION" $T "$INST" "$W/s0" 31 0 -1
check_out "kvm.samples: one line per vCPU and reading" "^[0-9]+ 0 0 0 0$" cat "$W/s0/kvm.samples"
check_out "clock.ini: method kvm" '^method=kvm$' cat "$W/s0/clock.ini"
check_out "clock.ini: host conversion recorded" '^host_conv=(time_conv|measured)$' cat "$W/s0/clock.ini"

# The same session as a guest behind tsc-offset OFFSET.
cp -a "$W/s0" "$W/sO"
shift_spools "$W/sO" "$OFFSET"
sed -i "s/ 0 0 0$/ $OFFSET 0 0/" "$W/sO/kvm.samples"
check_out "shifted kvm.samples" "^[0-9]+ 0 $OFFSET 0 0$" cat "$W/sO/kvm.samples"

EB=$(sed -n 's/^error_bound_ns=//p' "$W/s0/clock.ini")
for s in s0 sO; do
	out=$("$TRACE_COLLECTOR" merge "$W/$s" -o "$W/$s.data" 2>&1)
	check_out "$s: merge aligned by kvm" "clock: +aligned \(kvm, 0 segments, 2 samples, error bound $EB ns\)" echo "$out"
	check_out "$s: nothing outside the session window" "window: .* 0 outside, clamped" echo "$out"
	"$PERF" script -i "$W/$s.data" --ns -F time,trace 2>/dev/null |
		sed -n 's/^ *\([0-9]*\)\.\([0-9]*\): .*vt-kvm-\([0-9]*\).*/\3 \1\2/p' | sort -n > "$W/$s.times"
	check "$s: all 20 markers in the merged file" test "$(wc -l < "$W/$s.times")" -eq 20
	check "$s: every marker between the times around its write (± $EB ns)" python3 - "$W/markers.txt" "$W/$s.times" "$EB" <<'PY'
import sys
log = {int(n): (int(a), int(b)) for n, a, b in (l.split() for l in open(sys.argv[1]))}
eb = int(sys.argv[3])
bad = []
worst = 0
for line in open(sys.argv[2]):
    n, t = (int(x) for x in line.split())
    a, b = log[n]
    worst = max(worst, abs(t - (a + b) // 2))
    if not a - eb <= t <= b + eb:
        bad.append((n, t - a, b - t))
print(f"worst distance to the write's midpoint {worst} ns", file=sys.stderr)
if bad:
    print(f"outside: {bad}", file=sys.stderr)
sys.exit(1 if bad else 0)
PY
done
check "offset $OFFSET undone exactly: same converted times as offset 0" cmp "$W/s0.times" "$W/sO.times"

# --clock kvm refuses a debugfs without this QEMU: kvm-session names what is missing.
check_out "no debugfs dir for the pid: named" "no $W/dbg0/kvm/999-\* directory" "$KVM_SESSION" "$W/s0" "$W/dbg0" 999 true
finish
