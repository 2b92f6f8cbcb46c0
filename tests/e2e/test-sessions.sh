# SPDX-License-Identifier: GPL-2.0-only
# e2e: two sessions in one boot with the agent restarted in the guest between them, and stale
# bytes (garbage + pages of the first session, its begin marker included) left in the
# trace-path FIFOs before the second start. The second session must hold its own lines only.
. "$(dirname "$0")/lib.sh"

e2e_init sessions
# One TCG thread for both vCPUs: the agent restarted in the guest enables its events again and
# exits at poweroff, each a patch of the guest's code, and QEMU 7.2's multi-threaded TCG hung on
# one of them about once in several CI runs (collector/daemon/daemon.c TCG_PATCH_HANG). This test
# checks sessions and streams, not the vCPU threads.
check "boot: guest ready, agent waiting" e2e_boot --tcg-single
check_out "start (session 1)" "^$VM/sessions/" e2e_start -e 'sched,irq'
s1=$(e2e_session)
check "guest workload (150 lines)" e2e_run 150
check_out "stop (session 1)" 'losses: .*transport 0 pages$' e2e_stop -o "$T/one.data"
check "session 1: all 150 markers" e2e_markers "$T/one.data" 150
e2e_say restart-agent
check "agent restarted in the guest" e2e_wait '^vt-e2e: agent restarted pid' 10
check "the new agent waits for the host" e2e_wait 'trace-agent: waiting for the host.*(\n.*)*' 10
# Stale bytes: garbage, then session 1's begin marker and first ring pages, then garbage.
for c in 0 1; do
	spool=$s1/cpu$c.spool
	off=$(python3 -c 'import sys,struct
d=open(sys.argv[1],"rb").read(); i=d.find(struct.pack("<Q",0x4B52414D54524956)); print(i)' "$spool")
	{ head -c 1000 /dev/urandom; tail -c +$((off + 1)) "$spool" | head -c $((3 * 4096)); head -c 777 /dev/urandom; } >"$T/stale$c"
	check "stale bytes into trace-path-cpu$c.out (begin marker at $off)" \
		timeout 5 dd if="$T/stale$c" of="$VM/trace-path-cpu$c.out" status=none
done
check_out "start (session 2)" "^$VM/sessions/" e2e_start -e 'sched,irq'
check "guest workload (80 lines)" e2e_run 80
sum=$(e2e_stop -v -o "$T/two.data" 2>&1)
echo "$sum"
check_out "session 2: all pages arrived, 0 lost" '^losses: ring overrun 0 events, ring dropped 0 events, ring missed-events 0 .*, transport 0 pages$' echo "$sum"
for c in 0 1; do
	check_out "session 2: cpu$c stream complete" "^cpu$c: ([0-9]+) pages .* spooled, guest sent \\1, 0 lost in transport" echo "$sum"
done
check "session 2: exactly its 80 markers, once, in order (nothing stale)" e2e_markers "$T/two.data" 80
check "session 2: no warnings" e2e_no_warnings "$T/two.data"
# The guest's kallsyms crossed the link once: session 2 (same boot, same modules, a restarted
# agent) got it from the VM's cache.
s1=$(ls -d "$VM"/sessions/* | head -n 1) s2=$(e2e_session)
check_out "session 1: kallsyms received and cached" 'metadata: .*kallsyms \([0-9]+ bytes\) received and cached \(key [0-9a-f]{16}\)' cat "$s1/collector.log"
check_out "session 2: kallsyms from the VM's cache, not the link" 'metadata: .*kallsyms unchanged \(key [0-9a-f]{16}\): [0-9]+ bytes from the VM.s cache' cat "$s2/collector.log"
check "session 2: the same kallsyms in its session dir" cmp -s "$s1/guest/kallsyms" "$s2/guest/kallsyms"
m1=$(sed -n 's/.*metadata: [0-9]* files, \([0-9]*\) bytes over the link.*/\1/p' "$s1/collector.log")
m2=$(sed -n 's/.*metadata: [0-9]* files, \([0-9]*\) bytes over the link.*/\1/p' "$s2/collector.log")
check "session 2's metadata moved kilobytes (${m2:-?} bytes), session 1's megabytes (${m1:-?})" \
	test "${m2:-99999999}" -lt 500000 -a "${m1:-0}" -gt 1000000
check "guest powers off cleanly" e2e_end
check_out "the restarted agent exited cleanly" '^vt-e2e: restarted agent exit 0' e2e_console
finish
