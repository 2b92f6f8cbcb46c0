# SPDX-License-Identifier: GPL-2.0-only
# e2e fault: the collector daemon is SIGKILLed mid-trace. stop must say how to recover, and
# trace-collector merge SESSION_DIR -o X must give a perf.data perf reads (clock recovered from
# clock.samples). The guest's agent must then serve a new session.
. "$(dirname "$0")/lib.sh"

e2e_init daemon-killed
check "boot: guest ready, agent waiting" e2e_boot
check_out "start" "^$VM/sessions/" e2e_start -e 'sched,irq,timer' --heartbeat 1
sess=$(e2e_session)
check "guest workload (300 lines)" e2e_run 300
sleep 1.5 # a heartbeat probe or two
dpid=$(head -n 1 "$RUN/$VM_NAME.pid")
check "daemon SIGKILLed (pid $dpid)" kill -9 "$dpid"
for _ in $(seq 50); do kill -0 "$dpid" 2>/dev/null || break; sleep 0.1; done
sleep 0.5 # its perf record dies with it (PDEATHSIG)
out=$(e2e_stop -o "$T/never.data" 2>&1)
echo "$out"
check_out "stop without a daemon points at the session to merge" "trace-collector merge $sess" echo "$out"
sum=$(tc merge "$sess" -o "$T/out.data" 2>&1)
st=$?
echo "$sum"
check "merge SESSION_DIR exits 0" test "$st" -eq 0
check_out "merge: clock recovered from clock.samples" 'clock: +aligned \(ptp.*recovered' echo "$sum"
check_out "merge: the shortfall is stated (no end markers)" "vCPU spools without an end marker .*: 2\$" echo "$sum"
check "perf.data written" test -s "$T/out.data"
check "perf script: no warnings" bash -c 'e=$("$1" script -i "$2" 2>&1 >/dev/null); [ -z "$e" ] || { echo "$e" >&2; false; }' _ "$PERF" "$T/out.data"
check_out "the guest markers made it" 'guest_ftrace:print:.*vt-e2e line 299 cpu 1' "$PERF" script -i "$T/out.data" -F event,trace
# The agent is still in the killed session: a new start must take over.
check_out "a new start works with the same agent" "^$VM/sessions/" e2e_start -e sched --no-host
check "guest workload (100 lines)" e2e_run 100
check_out "stop of the new session" 'losses: .*transport 0 pages$' e2e_stop -o "$T/second.data"
check "second session: all 100 markers once, in order" e2e_markers "$T/second.data" 100
check "guest powers off cleanly" e2e_end
finish
