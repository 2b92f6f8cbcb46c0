# SPDX-License-Identifier: GPL-2.0-only
# e2e under real KVM (run by test-kvm.sh inside tests/e2e/kvm-l1's L1): what the host's real
# kvm:kvm_exit/kvm_entry give, in one boot.
# - A hardware event for guest perf: the rig's guest has no PMU, so start refuses it, naming
#   cpu-clock (with a PMU: cycles:G samples).
# - A session with every default plus --guest-perf (cpu-clock). The guest runs vt-pio on each vCPU
#   for PIO_MS, reading the CMOS clock's port in a loop: each access exits to QEMU's RTC model in
#   user space (AMD's IOIO exit, 0x7b; Intel's IO_INSTRUCTION, 30); then vt-zero for ZERO_MS,
#   reading /dev/zero: guest kernel time with no exit of its own. status shows the kvm clock's
#   bound so far.
# - The stall report: the host recording holds the io exits with the guest's rip; the per-vCPU
#   exit counts name the reason with at least 500 on each vCPU; every vm_exit stall carries its
#   exit's name (text "vm_exit:NAME", JSON exit_name).
# - Exit samples (collector/merge/exits.c: each host kvm:kvm_exit of a vCPU thread written again
#   as a guest sample at the exit's guest rip): tagged with the VM and both vCPUs, at least 90%
#   of those in the guest kernel named by the guest's kallsyms; vt-zero's asynchronous exits (a
#   host interrupt: SVM "interrupt", VMX EXTERNAL_INTERRUPT) land where its own cpu-clock:G
#   samples do (top function the same, their top 2 among its top 5); perf report heads the exit
#   event with a guest function. Synchronous exits (msr, hlt, io) name the instruction that
#   exits: printed, not compared. Markers, no perf warning.
#   test-kvm-exits.sh [PIO_MS [ZERO_MS]]
. "$(dirname "$0")/lib.sh"

pio_ms=${1:-1500}
zero_ms=${2:-2000}
e2e_init kvm-exits
out=$T/out.data

[ "${VT_E2E_ACCEL:-}" = kvm ] || { echo "test-kvm-exits.sh runs under KVM (tests/e2e/test-kvm.sh)"; exit 1; }
check "boot: guest ready, agent waiting" e2e_boot
# A hardware event: the rig's guest has no PMU (L1 under TCG has none to give it), so start
# refuses it and says why; on a host whose guest has one, it samples.
cycles() {
	local o
	if o=$(e2e_start --guest-perf=cycles 2>&1); then
		echo "$o"
		e2e_say "zero 500" && e2e_wait "^vt-e2e: zero done 500 status 0" 60 || return 1
		o=$(e2e_stop -o "$T/cycles.data" 2>&1) || { echo "$o"; return 1; }
		"$PERF" script -i "$T/cycles.data" -F event 2>/dev/null | grep -m1 'cycles:G' || echo "a guest PMU, but no cycles:G sample"
		return 0
	fi
	echo "$o"
}
check_out "start --guest-perf=cycles: refused for the guest's missing PMU, naming cpu-clock (or, with a PMU, cycles:G samples)" \
	'no PMU in this guest\? use cpu-clock|^ *cycles:G' cycles
check_out "start --guest-perf (every other default)" "^$VM/sessions/[0-9TZ]+\$" e2e_start --guest-perf
qpid=$(e2e_qemu_pid)
mapfile -t tids < <(e2e_vcpu_tids "$qpid")
check "QEMU runs 2 vCPU threads CPU n/KVM (${tids[*]})" \
	bash -c '[ "$(cat /proc/$1/task/$2/comm /proc/$1/task/$3/comm | tr "\n" ,)" = "CPU 0/KVM,CPU 1/KVM," ]' _ "$qpid" "${tids[@]}"
check "guest workload (200 lines)" e2e_run 200
pio() { e2e_say "pio $1" && e2e_wait "^vt-e2e: pio done $1 status 0" 120; }
check "guest: vt-pio on each vCPU for $pio_ms ms" pio "$pio_ms"
zero() { e2e_say "zero $1" && e2e_wait "^vt-e2e: zero done $1 status 0" 120; }
check "guest: vt-zero on each vCPU for $zero_ms ms (reads of /dev/zero: guest kernel time)" zero "$zero_ms"
check_out "status while tracing: the kvm clock's error bound so far (not 0 before clock.ini)" 'kvm \(host TSC .*error bound [1-9][0-9]* ns' e2e_status
sum=$(e2e_stop -o "$out" 2>&1)
st=$?
echo "$sum"
check "stop exits 0" test "$st" -eq 0
check "guest powers off cleanly" e2e_end
check_out "clock auto: kvm" '^clock: kvm ' echo "$sum"
# VT_KEEP_L1=1 (test-kvm.sh keeps its work dir): the session dir and the merged file outlive L1.
[ "${VT_KEEP_L1:-}" = 1 ] && [ -n "${VT_L1_WORK:-}" ] && cp -a "$(e2e_session)" "$out" "$VT_L1_WORK/"
check "perf script/report: no warnings" e2e_no_warnings "$out"
check "all 200 markers present once, in order" e2e_markers "$out" 200

# The host's exits while vt-pio ran: kvm_exit records of QEMU's vCPU threads, reason io.
"$PERF" script -i "$out" --ns -F tid,time,event,trace 2>/dev/null | grep -E ' kvm:kvm_exit: ' >"$T/exits.txt"
io_exits=$(grep -c -E 'reason (io|IO_INSTRUCTION) ' "$T/exits.txt") # SVM's and VMX's print names
check "host recording: kvm_exit records of the vCPU threads ($(wc -l <"$T/exits.txt")), $io_exits of them port I/O" \
	test "$io_exits" -ge 1000
check_out "host recording: each exit carries the guest's rip" 'kvm:kvm_exit: +vcpu [0-9]+ reason [A-Za-z_]+ rip 0x[0-9a-f]+' head -n 3 "$T/exits.txt"

check "report --json" bash -c '"$1" report "$2" --json >"$3"' _ "$TRACE_COLLECTOR" "$out" "$T/report.json"
# Every stall in the table (a busy host's preemptions outnumber the exits' in any top N), the
# first 60 lines printed.
text=$(tc report "$out" --top 1073741824 2>&1)
head -n 60 <<<"$text"
check_out "report (text): the host events include kvm_exit/entry" '^report of .*kvm_exit/entry\)$' echo "$text"
check_out "report (text): per-vCPU kvm exits name the io reason" '^    kvm exits: .* reason (123 io|30 io_instruction): [0-9]+' echo "$text"
check "report: on each vCPU, io exits ≥ the pio loop's and named; every vm_exit stall has its exit's name" \
	python3 - "$T/report.json" <<'PY'
import json, sys
rep = json.load(open(sys.argv[1]))
vcpus = rep["vcpus"]
bad = 0
for c in vcpus:
    io = [e for e in c["exits"] if e["name"] in ("io", "io_instruction")]
    n = sum(e["n"] for e in io)
    named = sum(e["n"] for e in c["exits"] if e["name"])
    total = sum(e["n"] for e in c["exits"])
    print(f"vCPU {c['vcpu']}: {total} exits, {named} named, io {n}", file=sys.stderr)
    if n < 500 or named < 0.99 * total:
        bad += 1
stalls = [s for s in rep["stalls"] if s["cause"] == "vm_exit"]
unnamed = [s for s in stalls if not s["exit_name"]]
print(f"vm_exit stalls: {len(stalls)}, unnamed {len(unnamed)}; by exit: "
      f"{sorted({s['exit_name'] for s in stalls if s['exit_name']})}", file=sys.stderr)
sys.exit(1 if bad or unnamed or len(vcpus) != 2 else 0)
PY
n_vmexit=$(python3 -c 'import json,sys; print(sum(1 for s in json.load(open(sys.argv[1]))["stalls"] if s["cause"] == "vm_exit"))' "$T/report.json")
echo "vm_exit stalls in this run: $n_vmexit"
if [ "$n_vmexit" -gt 0 ]; then
	check_out "report (text): a vm_exit stall names its exit" '^ +[0-9.]+ +[01] +[0-9.]+ +vm_exit:[a-z_]+ ' echo "$text"
fi

check_out "merge.ini: exit samples written" '^exit_samples=[1-9][0-9]*$' cat "$(e2e_session)/merge.ini"
check_out "stop summary: the exit samples counted" '^merged: .*, [1-9][0-9]* guest samples at VM exits \(guest_kvm:kvm_exit\)' echo "$sum"
# The exit samples' check (tests/e2e/check-exit-samples.py) reads perf script with the guest's
# symbols: under the KVM rig on the host after L1 (test-kvm.sh runs VT_L1_WORK/after), not at
# TCG's speed in L1; elsewhere here.
exit_check() { # OUT QPID KALLSYMS
	"$PERF" script -i "$1" -G -F machine_pid,vcpu,comm,event,ip,sym,dso,trace 2>/dev/null >"$T/script.txt" &&
		python3 "$E2E_DIR/check-exit-samples.py" "$T/script.txt" "$2" "$3"
}
what="exit samples: guest functions named from the guest's kallsyms; vt-zero's profile from its interrupt exits agrees with its own cpu-clock:G samples"
dst=${VT_L1_WORK:-}/exits
if [ -n "${VT_L1_WORK:-}" ] && mkdir -p "$dst" && cp -a "$out" "$dst/out.data" && cp "$(e2e_session)/guest/kallsyms" "$dst/kallsyms"; then
	{
		printf '%q script -i %q -G -F machine_pid,vcpu,comm,event,ip,sym,dso,trace 2>/dev/null >%q || exit 1\n' \
			"$PERF" "$dst/out.data" "$dst/script.txt"
		printf 'python3 %q %q %q %q && echo %q || { echo %q; exit 1; }\n' "$E2E_DIR/check-exit-samples.py" \
			"$dst/script.txt" "$qpid" "$dst/kallsyms" "ok   $what (after L1)" "FAIL $what (after L1)"
	} >>"$VT_L1_WORK/after"
	ok "exit samples handed to the host, checked there after L1"
else
	check "$what" exit_check "$out" "$qpid" "$(e2e_session)/guest/kallsyms"
fi
check_out "perf report --sort sym: a guest function heads the exit samples' profile" \
	"^ +[0-9.]+% +\[guest\.kernel\.kallsyms\.$qpid\] +\[g\] [A-Za-z_]" \
	bash -c '"$1" report -i "$2" --stdio --no-children --sort dso,sym 2>/dev/null | awk "/of event .guest_kvm:kvm_exit./ { on = 1; next } /of event/ { on = 0 } on && /%/ { print; exit }"' _ "$PERF" "$out"
finish
