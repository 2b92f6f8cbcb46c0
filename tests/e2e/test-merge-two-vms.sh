# SPDX-License-Identifier: GPL-2.0-only
# e2e: two VMs in one perf.data (trace-collector merge A --guest B), judged by perf 6.1
# (tests/e2e/lib.sh). Guests vtA and vtB (2 vCPUs each) boot side by side; A's session records the
# host (perf record -a covers both QEMUs), B's is --no-host; both stream ftrace and guest perf.
# A writes 300 numbered marker lines, B 500, and both spin (guest perf samples). The merged file
# holds both guests, each its own perf guest machine: every marker of each once and in order,
# each guest's records carry its own QEMU pid, its kernel functions named from its own
# kcore_dir, its vCPU threads found in the one host recording, and perf prints no warning.
. "$(dirname "$0")/lib.sh"

e2e_init merge-two-vms
e2e_two_vms

declare -A N=([A]=300 [B]=500) QPID=() SESS=() EV=([A]=guest_ [B]=guest2_)
for v in A B; do
	vm_use $v
	check "boot $v (2 vCPUs)" e2e_boot --name "$VM_NAME" --cpus 2
	BOOT[$v]=$BOOT_PID
	QPID[$v]=$(e2e_qemu_pid)
done
check "two different QEMUs (${QPID[A]}, ${QPID[B]})" test -n "${QPID[A]}" -a -n "${QPID[B]}" -a "${QPID[A]}" != "${QPID[B]}"
vm_use A
SESS[A]=$(e2e_start -e 'sched:sched_switch' --guest-perf)
check_out "start A (host recording, guest perf)" "^$VM/sessions/" echo "${SESS[A]}"
vm_use B
SESS[B]=$(e2e_start -e 'sched:sched_switch' --guest-perf --no-host)
check_out "start B (--no-host: A's host recording covers it; guest perf)" "^$VM/sessions/" echo "${SESS[B]}"
for v in A B; do vm_use $v; QPID[$v]=$(e2e_qemu_pid); done # a start may have booted its guest again (lib.sh)
for v in A B; do vm_use $v; e2e_say "run ${N[$v]}"; done
for v in A B; do vm_use $v; check "guest $v workload (${N[$v]} lines)" e2e_wait "^vt-e2e: workload done ${N[$v]} status 0" 120; done
for v in A B; do vm_use $v; e2e_say "spin 1000"; done
for v in A B; do vm_use $v; check "guest $v: vt-spin done" e2e_wait "^vt-e2e: spin done 1000 status 0" 60; done
for v in B A; do
	vm_use $v
	check "stop $v exits 0" e2e_stop -o "$T/$v.data"
	check "guest $v powers off cleanly" e2e_end
	BOOT[$v]=
done
check "B's session has no host recording of its own" test ! -e "${SESS[B]}/host.data"

out=$T/both.data
sum=$(tc merge "${SESS[A]}" --guest "${SESS[B]}" -o "$out" 2>&1)
check "merge A --guest B exits 0" test $? -eq 0
echo "$sum"
check_out "summary: 2 VMs" '^  guests: 2 VMs, each its own perf guest machine' echo "$sum"
for v in A B; do
	block=$(awk -v n="vt$v" '$1 == "==" && $2 == "vm" { on = ($3 == n) } on' <<<"$sum")
	check_out "summary, vt$v: its QEMU pid" "^  vm pid: ${QPID[$v]}\$" echo "$block"
	check_out "summary, vt$v: clock aligned" '^  clock:  aligned' echo "$block"
	check_out "summary, vt$v: both vCPU threads found in A's host recording" '^  vcpu:   guest sample cpu = host CPU .*\(2/2 vCPU threads found' echo "$block"
	check_out "summary, vt$v: guest perf merged" '^  perf:   guest perf 1 event\(s\), 2/2 vCPU streams' echo "$block"
done

lines=$("$PERF" script -i "$out" -F machine_pid,event,trace 2>/dev/null)
pids=$(sed -n 's/^ *VM: *\([0-9]*\).*/\1/p' <<<"$lines" | sort -u | tr '\n' ' ')
check "guest records carry the two QEMU pids only (got: $pids)" test "$pids" = "$(printf '%s\n' "${QPID[A]}" "${QPID[B]}" | sort | tr '\n' ' ')"
# markers of one VM: its pid, its event names, "vt-e2e line N" in file order
markers() { awk -v p="${QPID[$1]}" -v e="${EV[$1]}ftrace:print:" '$1 == "VM:" && $2 == p && $3 == e || $1 == "VM:" p && $2 == e' <<<"$lines" |
	sed -n 's/.*vt-e2e line \([0-9]*\) cpu.*/\1/p' | tr '\n' ' '; }
for v in A B; do
	got=$(markers $v)
	check "vt$v: its ${N[$v]} markers, each once, in order, under its pid and ${EV[$v]}ftrace:print ($(wc -w <<<"$got") found)" \
		test "$got" = "$(seq -s ' ' 0 $((N[$v] - 1))) "
done
pev=$(sed -n 's/^ *VM: *\([0-9]*\) *\([^ ]*\).*/\1 \2/p' <<<"$lines" | sort -u)
echo "pid, event: $(tr '\n' ';' <<<"$pev")"
check "no guest2_ event under A's pid, no guest_ event under B's" \
	test -z "$(grep -E "^${QPID[A]} guest2_|^${QPID[B]} guest_" <<<"$pev")"
e=$("$PERF" script -i "$out" -F +machine_pid,+vcpu 2>&1 >/dev/null; "$PERF" report -i "$out" --stdio --sort comm,dso 2>&1 >/dev/null)
# as e2e_no_warnings: perf's lost-chunks warning only where the merge says host perf record lost events
if grep -q 'host events lost by perf record .*: [1-9]' <<<"$sum"; then
	echo "host perf record lost events (stated by the merge): perf's lost-chunks warning accepted"
	e=$(grep -vE '^(Warning:|Processed [0-9]+ events and lost [0-9]+ chunks!|Check IO/CPU overload!|)$' <<<"$e")
fi
check "perf script -F +machine_pid,+vcpu and perf report --sort comm,dso: nothing on stderr${e:+ (perf said: $(head -c 300 <<<"$e"))}" test -z "$e"
check_out "perf script: vCPU 1 of both guests" "VM: *${QPID[B]} +VCPU: *001" "$PERF" script -i "$out" -F machine_pid,vcpu,event
for v in A B; do
	q=${QPID[$v]}
	check "OUT/kcore_dir__$q/kallsyms is vt$v's guest/kallsyms" cmp -s "$out/kcore_dir__$q/kallsyms" "${SESS[$v]}/guest/kallsyms"
	syms=$("$PERF" report -i "$out" --stdio --no-children --sort dso,sym 2>/dev/null |
		awk -v d="[guest.kernel.kallsyms.$q]" '/of event .cpu-clock:G./ { on = 1; next } /of event/ { on = 0 } on && index($0, d) && / \[g\] / { print $NF }' | sort -u)
	check "perf report names vt$v's guest kernel functions under [guest.kernel.kallsyms.$q] ($(wc -w <<<"$syms"): $(head -c 100 <<<"$syms" | tr '\n' ' '))" test -n "$syms"
	check "... each a function of vt$v's own kallsyms" bash -c '
		for s in $1; do grep -q " $s\$\| $s	" "$2" || { echo "not in its kallsyms: $s" >&2; exit 1; }; done' _ "$syms" "${SESS[$v]}/guest/kallsyms"
done
check_out "perf report --sort comm,dso: vt-spin in a cpu-clock:G section of each guest" '^2$' bash -c '"$1" report -i "$2" --stdio --sort comm,dso 2>/dev/null |
	awk "/of event .cpu-clock:G./ { on = 1; seen = 0; next } /of event/ { on = 0 } on && !seen && / vt-spin / { n++; seen = 1 } END { print n + 0 }"' _ "$PERF" "$out"
check_out "A's merge.ini lists both VMs" "^vm1.machine_pid=${QPID[B]}\$" cat "${SESS[A]}/merge.ini"
finish
