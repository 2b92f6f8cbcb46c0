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
grep -Eq '^host perf: stopped, host.data [0-9.]+ MB' <<<"$out" && ok "summary: perf stopped by SIGINT" || fail "perf state: $out"
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

# perf record's own arguments after '--', passed as they are: a filter with spaces stays one
# argument; session.ini records them (and the rest of the configuration) quoted.
out=$(start --clock ptp -- -a -e sched:sched_switch --filter 'prev_pid != 0' 2>&1); rc=$?
check "start -- PERF ARGS succeeds ($out)" test $rc -eq 0
S=$(tail -n 1 <<<"$out")
perf_pid=$(status | sed -n 's/^host perf: running (pid \([0-9]*\)).*/\1/p')
args=$(tr '\0' '|' <"/proc/$perf_pid/cmdline")
grep -qF -- "|-a|-e|sched:sched_switch|--filter|prev_pid != 0|" <<<"$args" &&
	ok "perf got the arguments after '--' unsplit" || fail "perf cmdline: $args"
check "session.ini opt_host_perf_args quoted ($(ini "$S" opt_host_perf_args))" \
	test "$(ini "$S" opt_host_perf_args)" = "'-a' '-e' 'sched:sched_switch' '--filter' 'prev_pid != 0'"
check "session.ini opt_host=perf-args" test "$(ini "$S" opt_host)" = perf-args
check "session.ini records the flush interval" test "$(ini "$S" opt_flush_interval_ms)" = 1000
check "session.ini records the clock option" test "$(ini "$S" opt_clock)" = ptp
out=$(stop 2>&1)
check_out "host.data holds the filtered sched_switch" 'sched:sched_switch' perf evlist -i "$S/host.data"
out=$(start --host-perf-args '-e cycles' 2>&1); rc=$?
check "--host-perf-args fails" test $rc -eq 2
grep -q "replaced by perf record's own arguments after '--'" <<<"$out" && ok "--host-perf-args names its replacement" ||
	fail "--host-perf-args: $out"
out=$(start --no-host -- -e cycles 2>&1); rc=$?
check "--no-host with perf arguments fails ($out)" test $rc -eq 2

# A perf that cannot record: start fails and says where to look.
out=$(start --host-events 'nosuch:event' 2>&1); rc=$?
check "start fails when host perf cannot record" test $rc -eq 1
grep -q 'host perf record exited with status .* (see .*host-perf.log)' <<<"$out" && ok "start names host-perf.log" || fail "perf failure: $out"
finish
