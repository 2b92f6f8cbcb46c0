# SPDX-License-Identifier: GPL-2.0-only
# e2e fault: QEMU is SIGKILLed mid-trace. The daemon must notice, finalize the session on its
# own, and stop must still give a perf.data perf reads, with the shortfall stated.
. "$(dirname "$0")/lib.sh"

e2e_init qemu-killed
check "boot: guest ready, agent waiting" e2e_boot
# Periodic probes every 0.5 s: the guest may trace with x86-tsc, whose rate needs probes 0.1 s
# apart or more; the live merge's flushes bring both CPUs' pages within a second, before the
# default 3 s probe.
check_out "start" "^$VM/sessions/" e2e_start -e 'sched,irq,timer' --probe-interval 0.5
qpid=$(e2e_qemu_pid) # after the start: it may have booted the guest again (e2e_start)
check "QEMU pid found" test -n "$qpid"
e2e_say "run 5000"
check "workload running in the guest" e2e_wait 'trace-agent: session .* started' 10
# Kill it once pages of both CPUs arrived (the agent sends when a ring is half full).
both_cpus() { [ "$(e2e_status | grep -cE '^cpu[01] +[1-9]')" -eq 2 ]; }
for _ in $(seq 150); do both_cpus && break; sleep 0.2; done
check "pages of both CPUs arrived" both_cpus
sleep 1 # at least one periodic probe after the start burst
check "QEMU killed mid-trace" kill -9 "$qpid"
check "QEMU gone, its boot ended" e2e_boot_ended 10
BOOT_PID=
# The daemon ends the session by itself (QEMU gone) and waits for stop to collect the summary.
for _ in $(seq 100); do e2e_status 2>/dev/null | grep -q '^state: stopped' && break; sleep 0.2; done
check_out "status: the session ended by itself, and says why" '^(state: stopped|stopped: QEMU gone)' e2e_status
sum=$(e2e_stop -v -o "$T/out.data" 2>&1)
st=$?
echo "$sum"
check "stop exits 0 (a usable file)" test "$st" -eq 0
check_out "summary: why it stopped" '^stopped: QEMU gone' echo "$sum"
check_out "summary: the shortfall is stated (no end marker)" '^cpu[01]: [1-9][0-9]* pages .* spooled; no end marker' echo "$sum"
check_out "summary: losses line says some CPUs are unknown" '^losses: .*some CPUs unknown' echo "$sum"
check_out "merge summary: spools without an end marker counted" "vCPU spools without an end marker .*: 2\$" echo "$sum"
check "perf.data written" test -s "$T/out.data"
check "perf script/report: no warnings" e2e_no_warnings "$T/out.data"
check "guest and host events interleaved by time" e2e_interleaved "$T/out.data"
check_out "guest markers made it" 'guest_ftrace:print:.*vt-e2e line 0 cpu 0' "$PERF" script -i "$T/out.data" -F event,trace
check_out "session.ini says stopped, reason QEMU gone" '^stop_reason=QEMU gone' cat "$(e2e_session)/session.ini"
finish
