# SPDX-License-Identifier: GPL-2.0-only
# Host perf record over the session window (ptp clock: -k CLOCK_MONOTONIC); the result is
# checked by perf itself. Also --host-data and a perf that cannot start.
. "$(dirname "$0")/daemon-lib.sh"

command -v perf >/dev/null || { fail "perf not installed (linux-perf): scripts/bootstrap installs it"; finish; exit 1; }
mkfifos 2
fake_guest --dir "$VMDIR" --cpus 2 --pages 30
out=$(start --clock ptp 2>&1); rc=$?
check "start with host perf succeeds ($out)" test $rc -eq 0
S=$(tail -n 1 <<<"$out")
check "session.ini host_data=host.data" test "$(ini "$S" host_data)" = host.data
check "host.data exists when start returns" test -s "$S/host.data"
check_out "status shows host perf running" '^host perf: running \(pid [0-9]+\)' status
perf_pid=$(status | sed -n 's/^host perf: running (pid \([0-9]*\)).*/\1/p')
tr '\0' ' ' <"/proc/$perf_pid/cmdline" | grep -q -- '-k CLOCK_MONOTONIC' && ok "perf cmdline has -k CLOCK_MONOTONIC" || fail "perf cmdline: $(tr '\0' ' ' <"/proc/$perf_pid/cmdline")"
tr '\0' ' ' <"/proc/$perf_pid/cmdline" | grep -q -- '-e sched:sched_switch' && ok "default host events" || fail "perf cmdline lacks sched_switch"
sleep 0.5
out=$(stop 2>&1); rc=$?
check "stop succeeds" test $rc -eq 0
grep -Eq '^host perf: exited with status (0|130)' <<<"$out" && ok "summary: perf stopped by SIGINT" || fail "perf state: $out"
check "perf process gone" bash -c "! kill -0 $perf_pid 2>/dev/null"
check_out "host.data is a valid perf file (perf report --stats)" 'SAMPLE events|Aggregated stats' perf report --stats -i "$S/host.data"
check_out "host.data recorded sched_switch" 'sched:sched_switch' perf evlist -i "$S/host.data"
check_out "host.data clock is CLOCK_MONOTONIC" '^# clockid: monotonic \(1\)' perf report --header-only -i "$S/host.data"

# --host-data: nothing recorded, the file is named in session.ini.
echo data >"$T/elsewhere.data"
out=$(start --host-data "$T/elsewhere.data" 2>&1); S=$(tail -n 1 <<<"$out")
check "--host-data recorded in session.ini" test "$(ini "$S" host_data)" = "$T/elsewhere.data"
check "--host-data runs no perf" test ! -e "$S/host.data"
stop >/dev/null 2>&1

# A perf that cannot record: start fails and says where to look.
out=$(start --host-events 'nosuch:event' 2>&1); rc=$?
check "start fails when host perf cannot record" test $rc -eq 1
grep -q 'host perf record exited with status .* (see .*host-perf.log)' <<<"$out" && ok "start names host-perf.log" || fail "perf failure: $out"
finish
