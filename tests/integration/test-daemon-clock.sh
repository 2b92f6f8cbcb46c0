# SPDX-License-Identifier: GPL-2.0-only
# The daemon's clock work against the fake guest: ptp (bursts of 32 probes at start and stop,
# --probe-interval, hold-out probes kept out of the fit, clock.ini written at stop and stated in
# the summary, status and session.ini) and kvm on the fixture debugfs tree
# (tests/fixtures/kvm-debugfs, QEMU pid 4242: kvm.samples, clock.ini, guest clock x86-tsc).
. "$(dirname "$0")/daemon-lib.sh"

FIXTURE=$VT_SOURCE_ROOT/tests/fixtures/kvm-debugfs
mkfifos 2
fake_guest --dir "$VMDIR" --cpus 2 --pages 10

# --- ptp
out=$(start --no-host --clock ptp --probe-interval 0.2 --holdout-probes 2>&1); rc=$?
check "ptp: start succeeds ($out)" test $rc -eq 0
S=$(tail -n 1 <<<"$out")
check "ptp: a burst of 32 probes at start" test "$(wc -l <"$S/clock.samples")" -ge 32
wait_for 10 lines_at_least "$S/clock.holdout" 3
check "ptp: hold-out probes every 0.2 s in clock.holdout" test "$(wc -l <"$S/clock.holdout")" -ge 3
check_out "ptp: status states samples and error bound" '^clock: ptp, [0-9]+ probe samples \([0-9]+ used\), error bound [0-9]+ ns' status
out=$(stop 2>&1)
check_out "ptp: stop summary states method, samples, error bound, clock.ini" \
	'^clock: ptp, [0-9]+ probe samples \([0-9]+ used\), error bound [0-9]+ ns, round trip min [0-9]+ ns / median [0-9]+ ns, [0-9]+ hold-out probes \(clock.ini\)$' echo "$out"
n=$(wc -l <"$S/clock.samples")
check "ptp: bursts at start and stop (>= 64 samples, $n)" test "$n" -ge 64
check "ptp: hold-out ids never in clock.samples" test -z "$(comm -12 <(cut -d' ' -f1 "$S/clock.samples" | sort) <(cut -d' ' -f1 "$S/clock.holdout" | sort))"
check_out "ptp: clock.ini written by the daemon" '^method=ptp$' cat "$S/clock.ini"
check_out "ptp: clock.ini sample count" "^samples=$n\$" cat "$S/clock.ini"
check "ptp: session.ini clock_samples" test "$(ini "$S" clock_samples)" = "$n"
check "ptp: session.ini clock_error_bound_ns = clock.ini's" test "$(ini "$S" clock_error_bound_ns)" = "$(sed -n 's/^error_bound_ns=//p' "$S/clock.ini")"
check_out "ptp: the merge applies it (not recovered; stop-summary.txt)" 'clock: +aligned \(ptp, [0-9]+ segments, '"$n"' samples, error bound [0-9]+ ns\)$' cat "$S/stop-summary.txt"
check "ptp: --probe-interval out of range refused" bash -c "! '$TRACE_COLLECTOR' start --name x --dir '$VMDIR' --probe-interval 0.01 2>/dev/null"

# --- kvm on the fixture tree
# The kvm method needs a host whose TSC is a clocksource (clocksync_host_tsc_stable): this
# machine's may not be (a guest on kvm-clock with tsc=unstable). The start, and the daemon it
# leaves behind, run in a mount namespace where available_clocksource is a file of the test's.
CS=/sys/devices/system/clocksource/clocksource0/available_clocksource
command -v unshare >/dev/null || { fail "unshare missing (util-linux)"; finish; exit 1; }
as_host() { # CLOCKSOURCES CMD...: CMD seeing CLOCKSOURCES as the host's
	printf '%s\n' "$1" >"$T/clocksources.$1"
	unshare -m --propagation private sh -c 'mount --bind "$1" "$2" && shift 2 && exec "$@"' _ "$T/clocksources.$1" "$CS" "${@:2}"
}
# The daemon ends a session whose QEMU pid exits: give the fixture VM a live stand-in pid.
sleep 300 & QPID=$!
mkdir -p "$T/debugfs/kvm" && cp -r "$FIXTURE/kvm/4242-11" "$T/debugfs/kvm/$QPID-11"
out=$(as_host kvm-clock "$TRACE_COLLECTOR" start --name "$VM" --dir "$VMDIR" --run-dir "$RUN" --timeout 5 --no-host \
	--clock kvm --kvm-debugfs "$T/debugfs" --qemu-pid $QPID 2>&1); rc=$?
check "kvm on a host without a TSC clocksource: refused (exit $rc)" test $rc -ne 0
check_out "kvm refused: says why and names --clock ptp" "the host's TSC is not among its clocksources .*--clock ptp aligns this guest" echo "$out"
out=$(as_host "tsc hpet acpi_pm" "$TRACE_COLLECTOR" start --name "$VM" --dir "$VMDIR" --run-dir "$RUN" --timeout 5 --no-host \
	--clock kvm --kvm-debugfs "$T/debugfs" --qemu-pid $QPID --probe-interval 0.2 2>&1); rc=$?
check "kvm: start succeeds ($out)" test $rc -eq 0
S=$(tail -n 1 <<<"$out")
check "kvm: session.ini clock_method=kvm" test "$(ini "$S" clock_method)" = kvm
check "kvm: guest clock x86-tsc" test "$(ini "$S" guest_clock)" = x86-tsc
check_out "kvm: first reading of both vCPUs (fixture values)" '^[0-9]+ 0 -1234567890123 225179981368524 48$' cat "$S/kvm.samples"
check_out "kvm: vcpu1 unscaled" '^[0-9]+ 1 5000 0 0$' cat "$S/kvm.samples"
wait_for 10 lines_at_least "$S/kvm.samples" 6
check "kvm: periodic readings" test "$(wc -l <"$S/kvm.samples")" -ge 6
out=$(stop 2>&1)
check_out "kvm: stop summary states method, readings, error bound" \
	'^clock: kvm \(host TSC → perf clock by .*\), [0-9]+ readings of 2 vCPUs in kvm.samples, error bound [0-9]+ ns \(clock.ini\)$' echo "$out"
check "kvm: no ptp samples from x86-tsc heartbeats" test ! -s "$S/clock.samples"
check_out "kvm: clock.ini" '^method=kvm$' cat "$S/clock.ini"
check_out "kvm: host conversion recorded" '^host_conv=(time_conv|measured)$' cat "$S/clock.ini"
check "kvm: session.ini clock_samples = readings" test "$(ini "$S" clock_samples)" = "$(( $(wc -l <"$S/kvm.samples") / 2 ))"

# --- --clock kvm without this QEMU in debugfs: start fails and says why
out=$(as_host "tsc hpet acpi_pm" "$TRACE_COLLECTOR" start --name "$VM" --dir "$VMDIR" --run-dir "$RUN" --timeout 5 --no-host \
	--clock kvm --kvm-debugfs "$FIXTURE" --qemu-pid 4243 2>&1); rc=$?
check "kvm: start without a debugfs dir fails (exit $rc)" test $rc -ne 0
check_out "kvm: failure names the missing dir" "no $FIXTURE/kvm/4243-\\* directory" echo "$out"
kill "$QPID" 2>/dev/null

# --- a guest whose clock gives no reading: stop says so on its first line and exits 3
kill "$FG_PID" 2>/dev/null; wait "$FG_PID" 2>/dev/null
fake_guest --dir "$VMDIR" --cpus 2 --pages 10 --mode no-probe
out=$(start --no-host --clock ptp 2>&1); rc=$?
check "no-probe: start succeeds ($out)" test $rc -eq 0
out=$(stop 2>&1); rc=$?
check "no-probe: stop exits 3 (written, unaligned; exit $rc)" test $rc -eq 3
check_out "no-probe: the summary's first line says the clock is unaligned" '^CLOCK UNALIGNED: ' head -n 1 <<<"$out"
check "no-probe: the file is written" test -s "$T/out.data"
finish
