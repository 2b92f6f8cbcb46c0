# SPDX-License-Identifier: GPL-2.0-only
# e2e: two VMs traced at once by two daemons (tests/e2e/lib.sh). Guests vtA and vtB boot side
# by side, each with its own per-VM dir, run dir and daemon; A writes 300 marker lines, B 500.
# Each merged file holds only its own guest: its own QEMU pid as machine_pid, exactly its own
# marker count, every CPU complete.
. "$(dirname "$0")/lib.sh"

e2e_init two-vms
e2e_two_vms

declare -A N=([A]=300 [B]=500) QPID=()
for v in A B; do
	vm_use $v
	check "boot $v: guest ready, agent waiting" e2e_boot --name "$VM_NAME"
	BOOT[$v]=$BOOT_PID
	QPID[$v]=$(e2e_qemu_pid)
done
check "two different QEMUs" test -n "${QPID[A]}" -a -n "${QPID[B]}" -a "${QPID[A]}" != "${QPID[B]}"
for v in A B; do
	vm_use $v
	check_out "start $v" "^$VM/sessions/" e2e_start -e 'sched:sched_switch' --buffer-kb 512
	QPID[$v]=$(e2e_qemu_pid) # after the start, which may have booted the guest again (lib.sh)
done
for v in A B; do
	vm_use $v
	e2e_say "run ${N[$v]}"
done
for v in A B; do
	vm_use $v
	check "guest $v workload (${N[$v]} lines)" e2e_wait "^vt-e2e: workload done ${N[$v]} status 0" 120
done
for v in A B; do
	vm_use $v
	sum=$(e2e_stop -v -o "$T/$v.data" 2>&1)
	check "stop $v exits 0" test $? -eq 0
	echo "$sum"
	check_out "$v: summary names its own QEMU" "vm pid: ${QPID[$v]}\$" echo "$sum"
	for c in 0 1; do
		check_out "$v: cpu$c all pages arrived" "^cpu$c: ([0-9]+) pages .* spooled, guest sent \\1, 0 lost in transport" echo "$sum"
	done
	check "$v: guest powers off cleanly" e2e_end
	BOOT[$v]=
done
for v in A B; do
	pids=$("$PERF" script -i "$T/$v.data" -F machine_pid 2>/dev/null | sed -n 's/^ *VM: *\([0-9]*\).*/\1/p' | sort -u | tr '\n' ' ')
	check "$v.data: guest records carry only $v's QEMU pid (${QPID[$v]}; got: $pids)" test "$pids" = "${QPID[$v]} "
	check "$v.data: exactly $v's ${N[$v]} markers, once and in order" e2e_markers "$T/$v.data" "${N[$v]}"
	check "$v.data: perf script/report: no warnings" e2e_no_warnings "$T/$v.data"
done
finish
