# SPDX-License-Identifier: GPL-2.0-only
# e2e: four VMs (2 vCPUs each) in one session (start --name vtA ... --name vtD; tests/e2e/lib.sh).
# The guests boot side by side, each with its own VM dir under one root; one start traces them
# all with ONE host recording (vtA's daemon runs perf record; the others name its host.data);
# each guest writes its own count of numbered markers; one snapshot of the set; one stop merges
# the set. Checked: one perf record process, every guest's markers all there once and in order
# (in the snapshot too), each guest's hold-out probes within its stated clock bound, and perf
# reads both files with no warning.
. "$(dirname "$0")/lib.sh"

e2e_init four-vms
declare -A N=([A]=120 [B]=160 [C]=200 [D]=240) QPID=() OUT=()
e2e_set_init A B C D
boot_wait() { e2e_wait '^vt-e2e: ready' 150 && e2e_wait 'trace-agent: waiting for the host' 60; }
t0=$SECONDS

# Boot all four at once (2 vCPUs each), then wait for each.
for v in "${VMS[@]}"; do
	set_use $v
	"$VT_E2E_BOOT" --dir "$VM" --log "$LOG" --script "$E2E_DIR/guest-cmd.sh" --console-in "$CIN" \
		--timeout 400 --name "$VM_NAME" &
	BOOT[$v]=$!
done
for v in "${VMS[@]}"; do
	set_use $v
	check "boot $v: guest ready, agent waiting" boot_wait
	QPID[$v]=$(pgrep -f -- "-name $VM_NAME,debug-threads=on.*$VM/" | head -n 1)
done
echo "booted in $((SECONDS - t0)) s"
check "four different QEMUs" test "$(printf '%s\n' "${QPID[@]}" | sort -u | grep -c .)" = 4

t1=$SECONDS
out=$(tc start --name vtA --name vtB --name vtC --name vtD --vm-root "$ROOT" --run-dir "$RUN" \
	-e 'sched:sched_switch' --buffer-kb 256 --clock ptp --probe-interval 0.5 --holdout-probes -o "$T/all.data" 2>&1)
check "start of the four exits 0" test $? -eq 0
echo "$out"
echo "started in $((SECONDS - t1)) s"
declare -A S=()
for v in "${VMS[@]}"; do S[$v]=$(grep "^$ROOT/vt$v/sessions/" <<<"$out"); done
check_out "the group line: 4 of 4 VMs, host recorded by vtA" "^group [0-9a-f]+: 4 of 4 VMs traced, host recorded by vtA" echo "$out"
nperf=0
for v in "${VMS[@]}"; do
	n=$(pgrep -P "$(head -n 1 "$RUN/vt$v.pid")" -x perf | wc -l)
	nperf=$((nperf + n))
	[ "$v" = A ] && check "vtA's daemon runs perf record" test "$n" = 1
done
check "one host recording: one perf record among the four daemons ($nperf)" test "$nperf" = 1
for v in B C D; do
	check "vt$v names vtA's recording" test "$(sed -n 's/^host_data=//p' "${S[$v]}/session.ini")" = "${S[A]}/host.data"
done
for v in "${VMS[@]}"; do set_use $v; e2e_say "run ${N[$v]}"; done
for v in "${VMS[@]}"; do
	set_use $v
	check "guest $v workload (${N[$v]} lines)" e2e_wait "^vt-e2e: workload done ${N[$v]} status 0" 120
done
sleep 1.5 # hold-out probes after the workload
check_out "status of the set by vtC's name" "^== vtA: records the host ==" tc status --name vtC --run-dir "$RUN"
# One snapshot of the set in the middle: every VM's daemon asked at once, one file of the four
# guests (their workloads are done, so every marker is in it); the set goes on and stops below.
t3=$(date +%s.%N)
snap=$(tc snapshot --name vtB --run-dir "$RUN" -o "$T/snap.data" 2>&1); rc=$?
echo "$snap"
echo "snapshot of the set in $(awk -v a="$t3" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }') s"
check "snapshot of the set by vtB's name (exit $rc)" test $rc -eq 0
check_out "4 of 4 VMs' snapshots, asked at once" "^group [0-9a-f]+: 4 of 4 VMs' snapshots taken, asked at once" echo "$snap"
check "the snapshot dirs are removed" bash -c "! ls -d '$ROOT'/vt*/sessions/*/snapshot-* 2>/dev/null | grep -q ."
t2=$SECONDS
sum=$(tc stop --name vtA --run-dir "$RUN" 2>&1); rc=$?
echo "$sum"
echo "stopped and merged in $((SECONDS - t2)) s"
check_out "stop: vtA (the host recording) stopped last" "^== vtA: records the host ==" echo "$sum"
for v in "${VMS[@]}"; do # each VM's full stop summary: its session's stop-summary.txt
	for c in 0 1; do
		check_out "$v: cpu$c all pages arrived" "^cpu$c: ([0-9]+) pages .* spooled, guest sent \\1, 0 lost in transport" \
			cat "${S[$v]}/stop-summary.txt"
	done
done
check "stop merges the set into one file (exit $rc)" test $rc -eq 0
for v in "${VMS[@]}"; do OUT[$v]=$T/all.data; done
for v in "${VMS[@]}"; do
	set_use $v
	check "guest $v powers off cleanly" e2e_end
	BOOT[$v]=
done
echo "wall time: $((SECONDS - t0)) s"

# Guest $v's records by its QEMU pid (the set's file holds all four: machine_pid keeps them apart).
guest_script() { "$PERF" script -i "$1" -F machine_pid,time,event,trace --ns 2>/dev/null | awk -v p="$2" '{ s = $0 } sub(/^ *VM: */, "", s) && $0 ~ /./ { split(s, a, " "); if (a[1] == p) print }'; }
for v in "${VMS[@]}"; do
	f=${OUT[$v]}
	got=$(guest_script "$f" "${QPID[$v]}" | sed -n 's/.*guest[0-9]*_ftrace:print:.*vt-e2e line \([0-9]*\) cpu.*/\1/p' | tr '\n' ' ')
	check "$v: its ${N[$v]} markers, once and in order" test "$got" = "$(seq -s ' ' 0 $((N[$v] - 1))) "
	bound=$(sed -n 's/^clock_error_bound_ns=//p' "${S[$v]}/session.ini")
	guest_script "$f" "${QPID[$v]}" >"$T/$v.script"
	check "$v: hold-out probes within its stated clock bound (${bound:-?} ns) of [send, reply]" \
		python3 - "${S[$v]}/clock.holdout" "$bound" "$T/$v.script" <<'PY'
import re, sys
holdout = {int(l.split()[0]): (int(l.split()[1]), int(l.split()[3])) for l in open(sys.argv[1]) if l.strip()}
bound = int(sys.argv[2])
marks = {int(m.group(3)): int(m.group(1)) * 10**9 + int(m.group(2))
         for m in re.finditer(r"(\d+)\.(\d{9}):\s+guest[0-9]*_ftrace:print:.*vt-probe (\d+)", open(sys.argv[3]).read())}
off = [max(h[0] - marks[k], marks[k] - h[1], 0) for k, h in holdout.items() if k in marks]
print(f"{len(holdout)} hold-out probes, {len(off)} markers, worst distance outside [send, reply] "
      f"{max(off) if off else -1} ns, stated bound {bound} ns")
sys.exit(0 if len(off) >= 3 and len(off) == len(holdout) and max(off) <= bound else 1)
PY
	check "$v: perf script/report: no warnings" e2e_no_warnings "$f"
	got=$(guest_script "$T/snap.data" "${QPID[$v]}" | sed -n 's/.*guest[0-9]*_ftrace:print:.*vt-e2e line \([0-9]*\) cpu.*/\1/p' | tr '\n' ' ')
	check "$v: the snapshot holds its ${N[$v]} markers, once and in order" test "$got" = "$(seq -s ' ' 0 $((N[$v] - 1))) "
done
check "the snapshot: perf script/report: no warnings" e2e_no_warnings "$T/snap.data"
# The host's events too (the leader's host.data as far as host perf acked a ping): the vCPU
# threads' sched_switch, host samples not only the guests'.
hsw=$(perf script -i "$T/snap.data" -F event 2>/dev/null | grep -c ' sched:sched_switch:')
check "the snapshot holds host events: $hsw host sched:sched_switch" test "$hsw" -gt 0
check_out "the snapshot's host line: the leader's host.data prefix" "^host: vt[A-D]'s host.data, its first [0-9]+ bytes" echo "$snap"
finish
