# SPDX-License-Identifier: GPL-2.0-only
# e2e under real KVM (run by test-kvm.sh inside tests/e2e/kvm-l1's L1): the stall report on the
# host's real kvm:kvm_exit/kvm_entry. A session with every default (host perf records sched and
# kvm events when the host has them); the guest runs vt-pio on each vCPU for PIO_MS, reading the
# CMOS clock's port in a loop: each access exits to QEMU's RTC model in user space (AMD's IOIO
# exit, 0x7b; Intel's IO_INSTRUCTION, 30). Then: the host recording holds those exits, with the
# guest's rip; the report's per-vCPU exit counts name the reason ("io") with at least as many
# exits as the pio loop's markers bracket, on each vCPU; every vm_exit stall carries its exit's
# name (text "vm_exit:NAME", JSON exit_name); markers, no perf warning.
#   test-kvm-report.sh [PIO_MS]
. "$(dirname "$0")/lib.sh"

pio_ms=${1:-3000}
e2e_init kvm-report
out=$T/out.data

[ "${VT_E2E_ACCEL:-}" = kvm ] || { echo "test-kvm-report.sh runs under KVM (tests/e2e/test-kvm.sh)"; exit 1; }
check "boot: guest ready, agent waiting" e2e_boot
check_out "start (every default)" "^$VM/sessions/[0-9TZ]+\$" e2e_start
qpid=$(e2e_qemu_pid)
mapfile -t tids < <(e2e_vcpu_tids "$qpid")
check "QEMU runs 2 vCPU threads CPU n/KVM (${tids[*]})" \
	bash -c '[ "$(cat /proc/$1/task/$2/comm /proc/$1/task/$3/comm | tr "\n" ,)" = "CPU 0/KVM,CPU 1/KVM," ]' _ "$qpid" "${tids[@]}"
check "guest workload (200 lines)" e2e_run 200
pio() { e2e_say "pio $1" && e2e_wait "^vt-e2e: pio done $1 status 0" 120; }
check "guest: vt-pio on each vCPU for $pio_ms ms" pio "$pio_ms"
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
text=$(tc report "$out" --top 50 2>&1)
echo "$text"
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
finish
