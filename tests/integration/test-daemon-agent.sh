# SPDX-License-Identifier: GPL-2.0-only
# The daemon with the REAL trace-agent on this machine's tracefs (own instance), over the
# FIFO pairs 'trace-collector setup' makes; a holder process plays QEMU's pipe chardev.
# Cycle 1: stale bytes queued before start are dropped, numbered trace_marker lines on every
# CPU come out of perf script once and in order, spool and counters agree end to end, a
# second start is refused. Cycle 2: SIGKILL of the daemon, then 'merge' recovers the session.
# Cycle 3: with host perf record: guest and host events interleave in time. Cycle 4: the host
# dies and nobody reads the FIFOs; one SIGTERM still ends the agent.
. "$(dirname "$0")/daemon-lib.sh"

: "${TRACE_AGENT:?}"
HELP=$VT_SOURCE_ROOT/tests/integration/agent-fifo.py
VM=vt_fifo_vm
INST=${VT_TEST_INSTANCE_PREFIX:-vt_fifo_test}_$$
NCPU=$(nproc)
N=4000 # marker lines per CPU per cycle: ~0.6 MB, over half the 1 MiB ring, under all of it
TRACEFS=/sys/kernel/tracing
AGENT_PID= HOLD_PID=

agent_cleanup() {
	[ -n "$AGENT_PID" ] && kill -9 "$AGENT_PID" 2>/dev/null
	[ -n "$HOLD_PID" ] && kill "$HOLD_PID" 2>/dev/null
	[ -d "$TRACEFS/instances/$INST" ] && { sleep 0.2; rmdir "$TRACEFS/instances/$INST" 2>/dev/null; }
	cleanup
}
trap agent_cleanup EXIT

for dep in perf python3; do
	command -v $dep >/dev/null || { fail "$dep not installed: scripts/bootstrap installs it"; finish; exit 1; }
done
[ "$(id -u)" = 0 ] || { fail "needs root (trace-agent creates an ftrace instance)"; finish; exit 1; }
[ -d "$TRACEFS/instances" ] || mount -t tracefs nodev "$TRACEFS" ||
	{ fail "cannot mount tracefs on $TRACEFS"; finish; exit 1; }

py() { python3 "$HELP" "$@"; }
agent_stat() { sed -n "s/^cpu$2\.$3=//p" "$1/agent-stats.ini"; }
# marker_check SESSION_DIR DATA TAG N [prefix]: perf script's view of the numbered lines.
marker_check() { perf script -i "$2" -F cpu,time,event,trace 2>/dev/null | py check "$3" "$4" "$NCPU" ${5:-}; }
# status_cpus_busy: status shows pages on every CPU.
status_cpus_busy() {
	local s c
	s=$(status 2>&1) || return 1
	for c in $(seq 0 $((NCPU - 1))); do grep -Eq "^cpu$c +[1-9]" <<<"$s" || return 1; done
}

check "setup makes the FIFO pairs" collector setup --name $VM --cpus "$NCPU" --dir "$VMDIR"
check "FIFO pair of cpu0 exists" test -p "$VMDIR/trace-path-cpu0.in" -a -p "$VMDIR/trace-path-cpu0.out"

coproc HOLD { exec python3 "$HELP" hold "$VMDIR"; }
HOLD_PID=$HOLD_PID
read -r -t 10 line <&"${HOLD[0]}" || { fail "FIFO holder did not come up"; finish; exit 1; }
check "holder has every FIFO open ($line)" test "$line" = "ready $((2 * (2 * NCPU + 1)))"

# Stale bytes before anything runs: an old session's pages on cpu0, junk in both control
# directions (the agent must skip what waits on agent-ctl-path.in).
stale_data=$(py stale "$VMDIR/trace-path-cpu0.out" data)
py stale "$VMDIR/agent-ctl-path.in" junk >/dev/null
py stale "$VMDIR/agent-ctl-path.out" junk >/dev/null

"$TRACE_AGENT" --ports-dir "$VMDIR" --instance "$INST" --subbuf-kb 0 -v 2>"$T/agent.log" & # pages on any host kernel
AGENT_PID=$!
# (a function: wait_for runs it again each try; a $(...) in its arguments would be read once)
ctl_in_empty() { test "$(py queued "$VMDIR/agent-ctl-path.in")" = 0; }
check "agent reads the stale junk off agent-ctl-path.in" wait_for 10 ctl_in_empty
check "agent created its instance" wait_for 10 test -d "$TRACEFS/instances/$INST"
check "agent running" kill -0 "$AGENT_PID"

# ---- cycle 1: guest only ----
out=$(start --no-host -e sched:sched_switch --buffer-kb 1024 2>&1); rc=$?
check "start with the real agent succeeds ($out)" test $rc -eq 0
S=$(tail -n 1 <<<"$out")
sid=$(ini "$S" session_id)
check "session.ini state=tracing" test "$(ini "$S" state)" = tracing
check "session.ini ncpus=$NCPU" test "$(ini "$S" ncpus)" = "$NCPU"
check "guest metadata: ftrace:print format" test -f "$S/guest/events/ftrace/print/format"
check "guest metadata: sched_switch format" test -f "$S/guest/events/sched/sched_switch/format"
check_out "collector dropped the stale cpu0 bytes ($stale_data)" \
	"trace-path-cpu0.out: dropped $stale_data stale bytes queued before this session" cat "$S/collector.log"
check "instance buffer set by CONFIG (>= 1024 KiB)" test "$(cat "$TRACEFS/instances/$INST/buffer_size_kb")" -ge 1024
TAG=vtfifo$$a
py mark "$INST" $TAG $N
check "status shows pages on every CPU" wait_for 20 status_cpus_busy
check_out "status names the session" "session: $S" status
check_out "second start refused, naming the session" "already running.*$S" start --no-host
out=$(stop 2>&1); rc=$?
check "stop succeeds ($(head -c 300 <<<"$out"))" test $rc -eq 0
check "session.ini state=merged" test "$(ini "$S" state)" = merged
read_sum=0
for c in $(seq 0 $((NCPU - 1))); do
	sent=$(agent_stat "$S" $c pages_sent)
	r=$(spool_check "$S/cpu$c.spool" "$sid")
	check "cpu$c.spool: begin marker first, $sent pages (= pages_sent), end marker ($r)" \
		test "$r" = "pages=$sent end=1 stale=0"
	grep -Eq "^cpu$c: $sent pages .*guest sent $sent, 0 lost in transport; ring overrun 0, dropped 0" "$S/stop-summary.txt" &&
		ok "stop-summary.txt cpu$c: $sent pages, no loss" || fail "stop-summary.txt cpu$c: $(cat "$S/stop-summary.txt")"
	check "agent-stats cpu$c error=0" test "$(agent_stat "$S" $c error)" = 0
	read_sum=$((read_sum + $(agent_stat "$S" $c read_events)))
done
check "no stale byte reached a spool" bash -c "! grep -q STALE $S/cpu*.spool"
check_out "perf script: every CPU's $N marker lines once, in order, on their CPU" '^ok ' \
	marker_check "$S" "$T/out.data" $TAG $N
perf script -i "$T/out.data" >/dev/null 2>"$T/perf.err"
check "perf script printed no warnings ($(head -c 300 "$T/perf.err"))" test ! -s "$T/perf.err"
samples=$(perf report --stats -i "$T/out.data" 2>/dev/null | awk '/^ *SAMPLE events:/ { print $3; exit }')
check "perf report --stats samples ($samples) = sum of the agent's read_events ($read_sum)" \
	test "$samples" = "$read_sum"
check_out "merge kept every guest time inside the session window" '^guest_outside_window=0$' cat "$S/merge.ini"
check "daemon gone after stop" wait_for 5 test ! -e "$RUN/$VM.sock"
check "agent still running after the session" kill -0 "$AGENT_PID"

# ---- cycle 2: the daemon is SIGKILLed mid-session; merge recovers the spools ----
out=$(start --no-host -e sched:sched_switch --buffer-kb 1024 2>&1); rc=$?
check "second session starts ($out)" test $rc -eq 0
S2=$(tail -n 1 <<<"$out")
TAG2=vtfifo$$b
py mark "$INST" $TAG2 $N
check "status shows pages on every CPU (session 2)" wait_for 20 status_cpus_busy
pid=$(daemon_pid)
kill -9 "$pid"
check "daemon killed" wait_for 5 bash -c "! kill -0 $pid 2>/dev/null"
check "session.ini left consistent (state=tracing)" test "$(ini "$S2" state)" = tracing
check_out "stop without a daemon points at the session to merge" "$S2" stop
out=$(collector merge "$S2" -o "$T/rec.data" 2>&1); rc=$?
check "merge of the killed session succeeds ($(tail -n 3 <<<"$out"))" test $rc -eq 0
check_out "perf reads the recovered file" 'SAMPLE events' perf report --stats -i "$T/rec.data"
check_out "recovered markers: a gapless prefix per CPU, in order" '^ok ' marker_check "$S2" "$T/rec.data" $TAG2 $N prefix
check "agent kept its session through the host's death" kill -0 "$AGENT_PID"

# ---- cycle 3: with host perf record (default host events); the old agent session is reset ----
out=$(start -e sched:sched_switch --buffer-kb 1024 2>&1); rc=$?
check "start with host perf succeeds after the kill ($out)" test $rc -eq 0
S3=$(tail -n 1 <<<"$out")
check_out "collector stopped the agent's orphaned session" "still tracing an earlier session: stopping it first" cat "$S3/collector.log"
TAG3=vtfifo$$c
py mark "$INST" $TAG3 200
out=$(stop -o "$T/both.data" 2>&1); rc=$?
check "stop with host perf succeeds ($(tail -n 3 <<<"$out"))" test $rc -eq 0
check_out "markers of session 3 complete (read at stop from partial pages)" '^ok ' \
	marker_check "$S3" "$T/both.data" $TAG3 200
r=$(perf script -i "$T/both.data" -F time,event 2>"$T/perf3.err" | py sorted)
check "guest and host events time-sorted ($r)" test "${r##*back=}" = 0
read -r g h sw _ <<<"$(tr -c '0-9\n' ' ' <<<"$r")"
check "both guest ($g) and host ($h) events present" test "${g:-0}" -gt 0 -a "${h:-0}" -gt 0
check "guest and host events interleave ($sw alternations)" test "${sw:-0}" -gt 10
check "perf script printed no warnings ($(head -c 300 "$T/perf3.err"))" test ! -s "$T/perf3.err"
check_out "merge kept every guest time inside the window" '^guest_outside_window=0$' cat "$S3/merge.ini"

# ---- cycle 4: the daemon dies, the FIFOs fill up (nobody reads them), then the agent gets
# one SIGTERM (a guest shutting down): it must give up the blocked streams and exit 0.
out=$(start --no-host -e sched:sched_switch --buffer-kb 1024 2>&1); rc=$?
check "fourth session starts ($out)" test $rc -eq 0
kill -9 "$(daemon_pid)"
py mark "$INST" vtfifo$$d $((N * 3)) # the daemon raised the FIFOs' buffers to 1 MiB
check "cpu0's FIFO is full (1 MiB queued, nobody reading)" \
	wait_for 20 bash -c "test \"\$(python3 '$HELP' queued '$VMDIR/trace-path-cpu0.out')\" -ge 1048576"
kill -TERM "$AGENT_PID"
check "agent exits on one SIGTERM though its ports are blocked" wait_for 20 bash -c "! kill -0 $AGENT_PID 2>/dev/null"
kill -0 "$AGENT_PID" 2>/dev/null && kill -9 "$AGENT_PID"
wait "$AGENT_PID"; rc=$?
AGENT_PID=
check "agent exits 0 on SIGTERM" test $rc -eq 0
check "agent removed its instance" test ! -d "$TRACEFS/instances/$INST"
check_out "agent says it gave up the blocked streams" 'CPU threads still draining their rings into their ports after 3000 ms: aborting them' cat "$T/agent.log"
[ "$vt_fail" -eq 0 ] || { echo "--- agent log"; tail -n 40 "$T/agent.log"; } >&2
finish
