# SPDX-License-Identifier: GPL-2.0-only
# What the user reads names things as they are: after a --max-size cut the stop line and the
# cut line give the same time (the stop's wait for the agent after the cut said apart); the
# live merge the daemon runs is named for what it is in ps, perf report, perf sched and the
# stall report (comm "vt-live-merge", never "exe" of /proc/self/exe).
. "$(dirname "$0")/daemon-lib.sh"

command -v perf >/dev/null || { fail "perf not installed (linux-perf): scripts/bootstrap installs it"; finish; exit 1; }
mkfifos 2

# 1. A cut: the guest floods past --max-size at once.
fake_guest --dir "$VMDIR" --cpus 2 --pages 200
out=$(start --no-host --max-size 256K 2>&1); S=$(tail -n 1 <<<"$out")
check "cut: the session stops by itself" wait_for 10 status_has 'state: stopped — --max-size'
out=$(stop 2>&1)
stopped=$(sed -n 's/^stopped: --max-size 262144 bytes reached after \([0-9.]*\) s.*/\1/p' <<<"$out")
cut=$(sed -n 's/^cut: --max-size .*, \([0-9.]*\) s into the session;.*/\1/p' <<<"$out")
check "cut: the stop line and the cut line give one time (stopped after '$stopped' s, cut '$cut' s into the session)" \
	test -n "$stopped" -a "$stopped" = "$cut"
# After the cut the spools discard unscanned, so no end marker is ever seen there: the agent's
# STOPPED ends the wait (before, stop waited --timeout for them: 7.4 s after the issue's cut).
check "cut: stop did not wait out --timeout for end markers the discarding spools cannot see" \
	bash -c '! grep -q "the agent did not finish within" "$1/collector.log"' _ "$S"
check_out "cut: the stop line keeps the cut's time" '^stopped: --max-size 262144 bytes reached after [0-9.]+ s(;| \(finalized [0-9.]+ s in\);) ' echo "$out"
kill -9 "$FG_PID"; wait "$FG_PID" 2>/dev/null; FG_PID=

# 2. The live merge (it runs with host perf): its comm while the session runs, and in the output.
fake_guest --dir "$VMDIR" --cpus 2 --pages 30
out=$(start --clock ptp 2>&1); rc=$?
check "start with host perf and the live merge ($out)" test $rc -eq 0
S=$(tail -n 1 <<<"$out")
check "the live merge follows the session" wait_for 10 grep -q 'live merge: following' "$S/collector.log"
pid=$(sed -n 's/.*live merge: following .* (pid \([0-9]*\), log .*/\1/p' "$S/collector.log")
comm=$(cat "/proc/$pid/comm" 2>/dev/null)
check "the live merge (pid '$pid') is named vt-live-merge ('$comm')" test "$comm" = vt-live-merge
check "its command line still reads trace-collector merge --follow" \
	grep -q "^trace-collector merge --follow $S " <(tr '\0' ' ' <"/proc/$pid/cmdline")
sleep 1 # host perf sees it wake and sleep
out=$(stop 2>&1); rc=$?
check "stop takes the live merge's file ($(ini "$S" live_merge))" test $rc -eq 0 -a "$(ini "$S" live_merge)" = done
# the whole host is recorded: the live merge is the pid the daemon named (trace-collector, as
# the daemon's child before its exec, then vt-live-merge)
comms=$(perf script -i "$T/out.data" --pid "$pid" -F comm 2>/dev/null | tr -d ' ' | sort -u | tr '\n' ' ')
check "the output names the live merge (pid $pid) vt-live-merge ('$comms')" grep -qw vt-live-merge <<<"$comms"
check "the output never names it exe" bash -c '! grep -qw exe <<<"$1"' _ "$comms"
kill -9 "$FG_PID"; wait "$FG_PID" 2>/dev/null; FG_PID=
finish
