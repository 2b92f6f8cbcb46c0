# SPDX-License-Identifier: GPL-2.0-only
# START's wait follows the guest's progress (docs/protocol.md, PROGRESS), within a bound the
# guest cannot move: a slow start that keeps reporting progress, or whose begin markers come one
# by one (an older agent that reports nothing), succeeds past --timeout; a guest that repeats one
# report fails as stuck after --timeout; one that reports new steps without end fails at the
# bound, --timeout x (3 + CPUs / 4), as slow; one that stops reporting fails as stuck, naming
# the step it was at. --timeout 2 with 3 CPUs: a 2 s wait, a 6 s bound.
. "$(dirname "$0")/daemon-lib.sh"

mkfifos 3
# run_start MODE: a fresh fake guest in MODE, then start; its output in $out, status in $rc.
run_start() {
	[ -n "$FG_PID" ] && { kill -9 "$FG_PID"; wait "$FG_PID" 2>/dev/null; FG_PID=; }
	fake_guest --dir "$VMDIR" --cpus 3 --pages 5 --mode "$1"
	out=$(start --no-host --timeout 2 2>&1); rc=$?
	S=$(ls -d "$VMDIR"/sessions/* | tail -n 1)
}

# Six event reports 0.7 s apart (4.2 s, past the 2 s --timeout), then OK.
run_start slow-start
check "slow start that reports progress: start succeeds past --timeout ($out)" test $rc -eq 0
check_out "the log names a slow start's steps" 'start: the agent is setting clock, ring size and tracer \(0/0\) at \+4\.[0-9] s' cat "$S/collector.log"
check_out "stop: every CPU's pages arrived" '^cpu2: 5 pages .*guest sent 5, 0 lost' stop -v

# No PROGRESS at all (an older agent): the begin markers, one every 1.5 s (4.5 s), are progress.
run_start slow-begin
check "older agent, begin markers one by one: start succeeds past --timeout ($out)" test $rc -eq 0
check_out "stop: every CPU's pages arrived" '^cpu2: 5 pages .*guest sent 5, 0 lost' stop -v

# The same report again and again, 0.5 s apart for 15 s: none after the first re-arms the wait,
# so it runs out --timeout after that one, not at the bound.
run_start repeat-start
check "a guest repeating one report: start fails" test $rc -ne 0
echo "$out"
check_out "it is named stuck, at the step it reported" \
	'start failed: the agent \(.*\) is stuck: it was enabling events \(1/6\), 0 of 3 begin markers in, and nothing moved for 2\.[0-9] s \(--timeout 2 s; [1-9][0-9]* repeated reports did not count' echo "$out"
check "not named slow (the bound was not what ended it)" bash -c '! grep -q "slow, not stuck" <<<"$1"' _ "$out"
check_out "session.ini says why" '^start_error=start failed: the agent .* is stuck' cat "$S/session.ini"

# A new report every 0.5 s for 15 s: each is progress, but the wait ends at the 6 s bound.
run_start endless-start
check "a guest reporting without end: start fails" test $rc -ne 0
echo "$out"
check_out "at the bound, named slow, with what to do" \
	'start failed: the guest is slow, not stuck: after [67] s, the bound of START \(--timeout 2 s x \(3 \+ 3 CPUs / 4\)\), the agent was still starting: enabling events \([0-9]+/1000000\), last progress 0\.[0-9] s ago, 0 of 3 begin markers in\. Start again with a larger --timeout' echo "$out"

# One report, then nothing: stuck, at that step, with no repeats counted.
run_start stuck-start
check "a guest that stops reporting: start fails" test $rc -ne 0
echo "$out"
check_out "named stuck at its last step" \
	'is stuck: it was enabling events \(1/6\), 0 of 3 begin markers in, and nothing moved for 2\.[0-9] s \(--timeout 2 s; 0 repeated reports' echo "$out"
check "no daemon left behind" test ! -e "$RUN/$VM.sock"
finish
