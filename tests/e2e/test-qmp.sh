# SPDX-License-Identifier: GPL-2.0-only
# e2e: live attach to a plain QEMU. The guest boots with no virtio-serial controller and no
# port (only -name VM,debug-threads=on and a QMP monitor); 'trace-collector setup --qmp'
# hot-plugs the controller, the chardevs and the ports; the agent, which waited for its
# control port, serves the host; a session carries every marker and is judged by perf.
# A second 'setup --qmp' adds nothing.
#   test-qmp.sh [pipe|socket]
. "$(dirname "$0")/lib.sh"

n=300 transport=${1:-pipe}
e2e_init qmp
out=$T/out.data
QMP=$T/qmp.sock

"$VT_E2E_BOOT" --dir "$VM" --log "$LOG" --script "$E2E_DIR/guest-cmd.sh" --console-in "$CIN" \
	--timeout 150 --ports none --qmp "$QMP" --transport "$transport" &
BOOT_PID=$!
check "boot with no ports: guest ready" e2e_wait '^vt-e2e: ready' 60
check "the agent waits for its control port" e2e_wait 'agent-ctl-path.*waiting for it to appear' 30
no_ports_at_boot() { e2e_console | grep -q '^vt-e2e: ports: *$'; }
check "no virtio-serial port at boot" no_ports_at_boot
sout=$(tc setup --name "$VM_NAME" --cpus 2 --dir "$VM" --transport "$transport" --qmp "$QMP" 2>&1); rc=$?
echo "$sout"
check "setup --qmp succeeds" test $rc -eq 0
check_out "setup --qmp hot-plugged the controller" '^added: -device virtio-serial-pci,id=vt-serial0' echo "$sout"
check_out "setup --qmp hot-plugged cpu1's port" '^added: -device virtserialport,bus=vt-serial0.0,nr=3,chardev=vt-cpu1,name=trace-path-cpu1' echo "$sout"
check_out "setup --qmp says what it did" 'QMP .*: 11 devices and chardevs added, 0 already there' echo "$sout"
check "the agent found the hot-plugged control port" e2e_wait 'trace-agent: waiting for the host' 30
check_out "start on the hot-plugged ports" "^$VM/sessions/[0-9TZ]+\$" e2e_start -e 'sched,irq,timer' --buffer-kb 512
check "guest workload ($n lines)" e2e_run "$n"
sum=$(e2e_stop -v -o "$out" 2>&1); st=$?
echo "$sum"
check "stop exits 0" test $st -eq 0
for c in 0 1; do
	check_out "summary: cpu$c all pages arrived" "^cpu$c: ([0-9]+) pages .* spooled, guest sent \\1, 0 lost in transport" echo "$sum"
done
check_out "summary: vCPU threads found (debug-threads=on at boot)" 'vcpu: +guest sample cpu = host CPU .*\(2/2 vCPU threads found' echo "$sum"
check "all $n markers present once, in order" e2e_markers "$out" "$n"
check "perf script/report: no warnings" e2e_no_warnings "$out" "$sum"
again=$(tc setup --name "$VM_NAME" --cpus 2 --dir "$VM" --transport "$transport" --qmp "$QMP" 2>&1); rc=$?
check "setup --qmp again succeeds" test $rc -eq 0
check_out "setup --qmp again adds nothing" 'QMP .*: 0 devices and chardevs added, 11 already there' echo "$again"
check "guest powers off cleanly" e2e_end
finish
