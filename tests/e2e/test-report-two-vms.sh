# SPDX-License-Identifier: GPL-2.0-only
# e2e: trace-collector report names another VM's vCPU as the culprit (tests/e2e/lib.sh). Guests
# vtA and vtB boot side by side; vCPU 0's QEMU thread of both is pinned to host CPU 1 (vCPU 1's
# to CPU 0), and a vt-spin task spins on every vCPU of both: the two vCPU 0 threads take turns
# on CPU 1. Only A records the host (B is a --no-host session, whose stop says its stalls are
# not known); B's threads are named from A's host recording's COMM records.
# A's vCPU 0 stalls, and the culprit of many of them is "CPU 0/TCG" of B's QEMU, named as VM
# <B's pid> vCPU 0 in the JSON and in the text.
. "$(dirname "$0")/lib.sh"

e2e_init report-two-vms
e2e_two_vms
declare -A QPID=() TIDS=()

for v in A B; do
	vm_use $v
	check "boot $v" e2e_boot --name "$VM_NAME"
	BOOT[$v]=$BOOT_PID
done
e2e_pin_two_vms
vm_use A
check_out "start A (host sched_switch + sched_wakeup)" "^$VM/sessions/" \
	e2e_start -e 'sched:sched_switch' --host-events 'sched:sched_switch,sched:sched_wakeup'
vm_use B # its spinners write their markers into the agent's trace instance: B is traced too, guest only
check_out "start B (--no-host)" "^$VM/sessions/" e2e_start -e 'sched:sched_switch' --no-host
e2e_pin_two_vms # again: a start may have booted its guest again (lib.sh)
for v in A B; do vm_use $v; e2e_say "spin 3000"; done
for v in A B; do vm_use $v; check "guest $v: vt-spin done" e2e_wait "^vt-e2e: spin done 3000 status 0" 60; done
vm_use B
sum=$(e2e_stop -o "$T/B.data" 2>&1)
check "stop B exits 0" test $? -eq 0
check_out "stop B: a --no-host session's stalls are not known, said" '^stalls: +not known \(no host recording' echo "$sum"
vm_use A
sum=$(e2e_stop -o "$T/A.data" 2>&1)
check "stop A exits 0" test $? -eq 0
echo "$sum" | grep -E '^(stalls|vcpu):'
for v in A B; do vm_use $v; check "guest $v powers off" e2e_end; BOOT[$v]=; done
set -- ${TIDS[B]}
btid=$1
check "report --json" bash -c '"$1" report "$2" --json >"$3"' _ "$TRACE_COLLECTOR" "$T/A.data" "$T/r.json"
check "A's vCPU 0 stalls: 5+ by B's vCPU 0 thread ($btid), each named VM ${QPID[B]} vCPU 0; none by B named otherwise" \
	python3 - "$T/r.json" "$btid" "${QPID[B]}" <<'PY'
import json, sys
d, btid, bpid = json.load(open(sys.argv[1])), int(sys.argv[2]), int(sys.argv[3])
by_b = [s for s in d['stalls'] if s['culprit_pid'] == btid]
named = [s for s in by_b if s['culprit_vm'] == bpid and s['culprit_vcpu'] == 0]
v0 = [s for s in by_b if s['vcpu'] == 0]
print(f"{len(d['stalls'])} stalls, {len(by_b)} by B's vCPU 0 thread ({len(v0)} of A's vCPU 0), {len(named)} named VM {bpid} vCPU 0; "
      f"culprits of vCPU 0: {[(c['comm'], c['pid'], round(c['ns'] / 1e6, 1)) for v in d['vcpus'] if v['vcpu'] == 0 for c in v['culprits']][:5]}", file=sys.stderr)
sys.exit(0 if len(v0) >= 5 and len(named) == len(by_b) else 1)
PY
check_out "report (text) names the other VM's vCPU" "CPU 0/TCG \\($btid\\) = VM ${QPID[B]} vCPU 0" tc report "$T/A.data" --vcpu 0 --top 30
finish
