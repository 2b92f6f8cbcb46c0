# SPDX-License-Identifier: GPL-2.0-only
# e2e under real KVM (run by test-kvm.sh inside tests/e2e/kvm-l1's L1): two VMs in one session
# with every default (start --name vtA --name vtB). Both guests boot with -accel kvm; one start
# traces both with one host recording; each writes its own count of numbered markers and runs
# vt-zero. Checked: clock auto chose kvm for each, every marker of each once and in order, each
# VM's vCPU threads (CPU n/KVM) mapped with no fallback, each VM's exit samples (guest_kvm and
# guest2_kvm:kvm_exit) carry its own QEMU pid and name its kernel's functions, perf no warning.
. "$(dirname "$0")/lib.sh"

e2e_init kvm-vms
[ "${VT_E2E_ACCEL:-}" = kvm ] || { echo "test-kvm-vms.sh runs under KVM (tests/e2e/test-kvm.sh)"; exit 1; }
declare -A N=([A]=150 [B]=250) QPID=()
e2e_set_init A B
check "boot vtA and vtB at once (-accel kvm, 2 vCPUs each)" e2e_set_boot 400
for v in "${VMS[@]}"; do
	set_use "$v"
	QPID[$v]=$(e2e_qemu_pid)
done
check "two different QEMUs (${QPID[A]}, ${QPID[B]})" test -n "${QPID[A]}" -a -n "${QPID[B]}" -a "${QPID[A]}" != "${QPID[B]}"
out=$(tc start --name vtA --name vtB --vm-root "$ROOT" --run-dir "$RUN" -o "$T/all.data" 2>&1)
check "start of the two (every default) exits 0" test $? -eq 0
echo "$out"
check_out "the group line: 2 of 2 VMs, host recorded by vtA" "^group [0-9a-f]+: 2 of 2 VMs traced, host recorded by vtA" echo "$out"
for v in "${VMS[@]}"; do set_use "$v"; e2e_say "run ${N[$v]}"; done
for v in "${VMS[@]}"; do
	set_use "$v"
	check "guest $v workload (${N[$v]} lines)" e2e_wait "^vt-e2e: workload done ${N[$v]} status 0" 120
done
for v in "${VMS[@]}"; do set_use "$v"; e2e_say "zero 2000"; done
for v in "${VMS[@]}"; do
	set_use "$v"
	check "guest $v: vt-zero for 2 s" e2e_wait "^vt-e2e: zero done 2000 status 0" 120
done
sum=$(tc stop --name vtB --run-dir "$RUN" 2>&1); rc=$?
echo "$sum"
check "stop of the set by vtB's name merges it (exit $rc)" test $rc -eq 0
for v in "${VMS[@]}"; do
	set_use "$v"
	s=$(ls -d "$VM"/sessions/* | tail -n 1)
	check_out "$v: clock auto chose kvm" '^clock_method=kvm$' cat "$s/session.ini" "$s/merge.ini"
	check_out "$v: its vCPU threads mapped (no fallback)" '^vcpu_cpu=host_sched_switch$' cat "$s/merge.ini"
	check_out "$v: exit samples written" '^exit_samples=[1-9][0-9]*$' cat "$s/merge.ini"
	check "guest $v powers off cleanly" e2e_end
	BOOT[$v]=
done
check "perf script/report: no warnings" e2e_no_warnings "$T/all.data"
guest_script() { "$PERF" script -i "$1" -F machine_pid,event,trace 2>/dev/null | awk -v p="$2" '{ s = $0 } sub(/^ *VM: */, "", s) && $0 ~ /./ { split(s, a, " "); if (a[1] == p) print }'; }
declare -A EV=([A]=guest_ [B]=guest2_)
"$PERF" script -i "$T/all.data" -G -F machine_pid,event,ip,sym,dso 2>/dev/null >"$T/exits.txt"
for v in "${VMS[@]}"; do
	got=$(guest_script "$T/all.data" "${QPID[$v]}" | sed -n 's/.*guest[0-9]*_ftrace:print:.*vt-e2e line \([0-9]*\) cpu.*/\1/p' | tr '\n' ' ')
	check "$v: its ${N[$v]} markers, once and in order" test "$got" = "$(seq -s ' ' 0 $((N[$v] - 1))) "
	check "$v: its exit samples (${EV[$v]}kvm:kvm_exit) carry its QEMU pid and name its kernel's functions (90%+)" \
		python3 - "$T/exits.txt" "${QPID[$v]}" "${EV[$v]}kvm:kvm_exit" <<'PY'
import re, sys
pid, ev = sys.argv[2], sys.argv[3]
n = named = other = 0
for l in open(sys.argv[1]):
    m = re.match(r"^VM: *(\d+) +(\S+): +([0-9a-f]+) (\S+) \((.*)\)$", l.strip())
    if not m or m.group(2) != ev or int(m.group(3), 16) < 0xffff800000000000:
        continue
    if m.group(1) != pid:
        other += 1
        continue
    n += 1
    named += m.group(4) != "[unknown]" and m.group(5) == f"[guest.kernel.kallsyms.{pid}]"
print(f"{ev}: {n} guest kernel exit samples of VM {pid}, {named} named in its kernel, {other} of another VM", file=sys.stderr)
sys.exit(0 if n >= 500 and named >= 0.9 * n and not other else 1)
PY
done
finish
