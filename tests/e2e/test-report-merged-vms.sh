# SPDX-License-Identifier: GPL-2.0-only
# e2e: trace-collector report of two VMs merged into one file (merge A --guest B) names the
# culprit of A's stalls as B's vCPU and the guest task B's own events show on it (tests/e2e/lib.sh).
# Guests vtA and vtB boot side by side; vCPU 0's QEMU thread of both is pinned to host CPU 1
# (vCPU 1's to CPU 0), so the two vCPU n threads take turns on one host CPU. A spins "vt-spin"
# on every vCPU, B spins "vt-busyB" (a name only B's guest knows). A's session records the host,
# B's is --no-host (A's host recording covers both QEMUs); both trace the guest's sched_switch.
# In the merged file, of A's stalls inside B's spin on that vCPU whose culprit is B's vCPU n
# thread, most (>= 75%) are named "VM <B's pid> vCPU n running vt-busyB": not all, because B's
# vCPU also runs B's trace-agent (its threads splice the ring to the host) and kernel threads
# (kworker, kcompactd) while vt-busyB spins, and B's guest task then is one of those (printed).
# VT_KEEP=DIR keeps the merged file.
. "$(dirname "$0")/lib.sh"

e2e_init report-merged-vms
e2e_two_vms
declare -A QPID=() TIDS=() SESS=()

for v in A B; do
	vm_use $v
	check "boot $v" e2e_boot --name "$VM_NAME"
	BOOT[$v]=$BOOT_PID
done
e2e_pin_two_vms
vm_use A
SESS[A]=$(e2e_start -e 'sched:sched_switch' --host-events 'sched:sched_switch,sched:sched_wakeup')
check_out "start A (host sched_switch + sched_wakeup)" "^$VM/sessions/" echo "${SESS[A]}"
vm_use B
SESS[B]=$(e2e_start -e 'sched:sched_switch' --no-host)
check_out "start B (--no-host)" "^$VM/sessions/" echo "${SESS[B]}"
e2e_pin_two_vms # again: a start may have booted its guest again (lib.sh)
vm_use A; e2e_say "spin 3000"
vm_use B; e2e_say "spinas vt-busyB 3000"
vm_use A; check "guest A: vt-spin done" e2e_wait "^vt-e2e: spin done 3000 status 0" 60
vm_use B; check "guest B: vt-busyB done" e2e_wait "^vt-e2e: spinas vt-busyB done 3000 status 0" 60
for v in B A; do
	vm_use $v
	check "stop $v exits 0" e2e_stop -o "$T/$v.data"
	check "guest $v powers off" e2e_end
	BOOT[$v]=
done

out=$T/both.data
sum=$(tc merge "${SESS[A]}" --guest "${SESS[B]}" -o "$out" 2>&1)
check "merge A --guest B exits 0" test $? -eq 0
[ -n "${VT_KEEP:-}" ] && cp -r "$out" "$VT_KEEP/report-merged-vms.data" # fuzz-report's seeds (tests/fuzz/capture-report.py)
check_out "merge: 2 VMs" '^  guests: 2 VMs' echo "$sum"
check "report --json" bash -c '"$1" report "$2" --json >"$3"' _ "$TRACE_COLLECTOR" "$out" "$T/r.json"
# B's spin window per vCPU: its markers, guest2_ftrace:print (B is the second VM)
"$PERF" script -i "$out" -F time,event,trace --ns 2>/dev/null | grep 'guest2_ftrace:print' |
	sed -n 's/^ *\([0-9]*\)\.\([0-9]*\): .*vt-e2e spin \(begin\|end\) cpu \([0-9]\).*/\4 \3 \1\2/p' >"$T/bspin"
check "B's spin markers: begin and end of both vCPUs ($(tr '\n' ';' <"$T/bspin"))" test "$(wc -l <"$T/bspin")" -eq 4
set -- ${TIDS[B]}
check "A's stalls inside B's spin caused by B's vCPU n thread: 10+, each named VM ${QPID[B]} vCPU n and on A's vCPU n; >= 75% running vt-busyB" \
	python3 - "$T/r.json" "$T/bspin" "${QPID[A]}" "${QPID[B]}" "$1" "$2" <<'PY'
import collections, json, sys
d = json.load(open(sys.argv[1]))
win = collections.defaultdict(dict)
for line in open(sys.argv[2]):
    c, k, t = line.split()
    win[int(c)][k] = int(t)
apid, bpid, btid = int(sys.argv[3]), int(sys.argv[4]), [int(sys.argv[5]), int(sys.argv[6])]
vms = {v['machine_pid']: v for v in d['vms']}
print(f"VMs in the report: {sorted(vms)}; guest sched_switch per VM: {[(p, v['guest_switches']) for p, v in vms.items()]}", file=sys.stderr)
ok = apid in vms and bpid in vms and all(v['guest_switches'] > 0 for v in vms.values())
by_b = [s for s in d['stalls'] if s['machine_pid'] == apid and s['culprit_pid'] in btid]
inside = [s for s in by_b if win[s['vcpu']].get('begin', 1 << 62) <= s['start_ns'] and s['end_ns'] <= win[s['vcpu']].get('end', 0)]
named = [s for s in by_b if s['culprit_vm'] == bpid and s['culprit_vcpu'] == btid.index(s['culprit_pid'])]
# inside B's spin both VMs' threads are pinned (a start that booted B again left them unpinned
# before it): A's vCPU n is stalled by B's vCPU n, the one thread on its host CPU
paired = [s for s in inside if s in named and s['culprit_vcpu'] == s['vcpu']]
busy = [s for s in inside if s['culprit_guest_comm'] == 'vt-busyB' and s['culprit_guest_pid'] > 0]
rest = collections.Counter((s['culprit_guest_comm'], s['culprit_guest_pid']) for s in inside if s not in busy)
print(f"{len(d['stalls'])} stalls; A's by B's vCPU threads: {len(by_b)}, named VM {bpid} vCPU n: {len(named)}; inside B's spin: "
      f"{len(inside)} ({len(paired)} on the same vCPU n), running vt-busyB: {len(busy)}; the others' guest task: {dict(rest)}", file=sys.stderr)
ok = ok and len(inside) >= 10 and len(named) == len(by_b) and len(paired) == len(inside) and len(busy) >= 0.75 * len(inside)
sys.exit(0 if ok else 1)
PY
check_out "report (text) names B's vCPU 0 and its guest task" "CPU 0/TCG \\($1\\) = VM ${QPID[B]} vCPU 0 running vt-busyB \\([0-9]+\\)" \
	tc report "$out" --vcpu 0 --top 1000
check "report --svg" tc report "$out" --svg "$T/r.svg"
check_out "the picture's tooltips name B's vCPU and its guest task" "culprit CPU [01]/TCG \\([0-9]+\\) = VM ${QPID[B]} vCPU [01] running vt-busyB" \
	grep -o 'culprit [^<]*' "$T/r.svg"
finish
