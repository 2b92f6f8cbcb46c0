# SPDX-License-Identifier: GPL-2.0-only
# e2e: guest perf (start --guest-perf) on the real guest, judged by the real perf (tests/e2e/lib.sh).
#   1. a "vt-spin" task per vCPU spins between two markers while the guest is sampled at 1000 Hz
#      with call chains: perf report shows vt-spin under the guest machine (cpu-clock:G), perf
#      script tags its samples VM:<qemu pid> VCPU:<n> on both vCPUs with call chains, every one of
#      them lies between its own vCPU's begin and end markers (within the clock's error bound),
#      guest samples interleave with host events, and perf prints no warning;
#      guest user functions are named by the command the summary prints (perf --buildid-dir
#      OUT/buildids report -i OUT): stop fetched the binaries the samples ran in into the output's
#      own build-id dir, so vt-spin's samples name workload_spin_hot, and $HOME/.debug (a fresh
#      HOME here) is never written; guest module functions (virtio_console's, in the agent's call chains
#      during a flood of marker lines) are named from the guest's kallsyms; a host recording's
#      guest-mode sample of this QEMU (made from a real host sample: no KVM here) too;
#   3. (run before 2) the same with --live-merge: merged while tracing, same events as offline;
#   4. (run before 2) with --flight-recorder 4M: perf streams cut, task records kept aside;
#   2. the same spinner at SCHED_FIFO beside an 8 KiB guest perf ring: the agent cannot drain it,
#      the kernel's LOST records reach perf (report --stats) and the stop summary says as much;
#      with --trust-guest-binaries: the workload binary goes to $HOME/.debug, plain perf report
#      names it.
. "$(dirname "$0")/lib.sh"

e2e_init gperf
gperf_flood() { e2e_say "flood $1 $2" && e2e_wait "^vt-e2e: flood done $1 status 0" 90; }
out=$T/out.data
export HOME=$T/home # perf's build-id cache: $HOME/.debug, for the daemon and perf alike (only --trust-guest-binaries writes it)
mkdir -p "$HOME"

check "boot 2 vCPUs (setup's ports include perf-path-cpuN)" e2e_boot --cpus 2
qpid=$(e2e_qemu_pid)
check "QEMU has the perf ports" grep -q 'perf-path-cpu1' "/proc/$qpid/cmdline"
check_out "start --guest-perf" "^$VM/sessions/" e2e_start -e 'sched:sched_switch' --guest-perf
qpid=$(e2e_qemu_pid) # after the start, which may have booted the guest again (lib.sh)
check_out "status: guest perf rows" '^perf cpu1: [0-9]+ records' e2e_status
check_out "auto trace clock with guest perf: mono, whatever it reads (events and samples on one clock)" '^guest_clock=mono$' \
	cat "$(e2e_session)/session.ini"
check "guest: vt-spin on each vCPU for 1.5 s" e2e_spin 1500
check "guest: a flood of marker lines (the agent streams them through virtio_console and virtio_ring, modules)" gperf_flood 100000 5000
sum=$(e2e_stop -v -o "$out" 2>&1)
check "stop exits 0" test $? -eq 0
echo "$sum"
check "agent: the perf rings went by vmsplice, no copy through user space (no write() fallback in its log)" \
	bash -c '! tr -d "\r" <"$1" | grep -E "trace-agent.*(from the mapping|refuses vmsplice)"' _ "$LOG"
check_out "summary: guest perf counted per vCPU, nothing lost in transport" '^perf cpu1: [0-9]+ records \([0-9]+ samples.*guest sent [0-9]+ bytes, 0 lost in transport' echo "$sum"
check_out "merge summary: guest perf records written" 'perf: +guest perf 1 event\(s\), 2/2 vCPU streams, [0-9]+ records written' echo "$sum"
check_out "merge summary: clock aligned" 'clock: +aligned' echo "$sum"
check "perf script/report: no warnings" e2e_no_warnings "$out" "$sum"
check_out "perf report: vt-spin's samples under the guest event" 'cpu-clock:G' "$PERF" report -i "$out" --stdio --sort comm
# The idle tasks (swapper/N) are left aside: their share is however long the host took over the
# markers and the flood (a slow CI host made swapper/1 the top line at 37%, vt-spin next), and
# so are their call chains (-g none: on QEMU 10 swapper/1 came first, and its chain's first line
# "|--16.68%--start_secondary" was taken for the next task).
check_out "perf report --sort comm: vt-spin is the guest's busiest task (idle aside)" '^ +[0-9.]+% +[0-9.]+% +vt-spin' \
	bash -c '"$1" report -i "$2" --stdio --sort comm -g none 2>/dev/null | awk "/of event .cpu-clock:G./ { on = 1; next } on && /%/ && !/ swapper\\// { print; exit }"' _ "$PERF" "$out"
check_out "perf script: guest samples tagged VM:<qemu pid> VCPU:000" "^VM: *$qpid +VCPU: *000 +vt-spin .*cpu-clock:G" \
	"$PERF" script -i "$out" -F machine_pid,vcpu,comm,event
check_out "perf script: and VCPU:001" "^VM: *$qpid +VCPU: *001 +vt-spin .*cpu-clock:G" \
	"$PERF" script -i "$out" -F machine_pid,vcpu,comm,event
check "perf script: vt-spin samples carry user call chains (3+ frames: the workload has frame pointers)" \
	bash -c '"$1" script -i "$2" -F comm,event,ip 2>/dev/null |
	awk "/^ *vt-spin .*cpu-clock:G/ { s = 1; n = 0; next } s && /^[ \t]+[0-9a-f]+\$/ { if (++n == 3) ok++; next } { s = 0 }
	END { print ok + 0, \"samples with 3+ frames\" > \"/dev/stderr\"; exit !(ok > 50) }"' _ "$PERF" "$out"
# Guest kernel symbols with no options: OUT is a perf.data directory with the guest's kallsyms.
check "stop -o OUT wrote a perf.data directory: OUT/data" test -f "$out/data"
check "... and OUT/kcore_dir__$qpid/kallsyms (the session's guest/kallsyms)" cmp -s "$out/kcore_dir__$qpid/kallsyms" "$(e2e_session)/guest/kallsyms"
gsyms=$("$PERF" report -i "$out" --stdio --no-children --sort dso,sym 2>/dev/null |
	awk '/of event .cpu-clock:G./ { on = 1; next } /of event/ { on = 0 } on && /\[guest\.kernel\.kallsyms\.[0-9]+\] +\[g\] / { print $NF }')
check "perf report names guest kernel functions ($(wc -w <<<"$gsyms"): $(head -c 120 <<<"$gsyms" | tr '\n' ' '))" test -n "$gsyms"
check "every one is a function of the guest kernel's kallsyms, none a raw address" bash -c '
	for s in $1; do grep -q " $s\$\| $s	" "$2" || { echo "not in guest kallsyms: $s" >&2; exit 1; }; done' _ "$gsyms" "$(e2e_session)/guest/kallsyms"
# virtio_console is a module on Debian 12's 6.1 (built into 6.12: VT_E2E_GUEST=6.12 says so)
if [ -n "${VT_E2E_GUEST:-}" ] && ! grep -q '	\[virtio_console\]$' "$(e2e_session)/guest/kallsyms"; then
	echo "virtio_console is built into this guest's kernel: no module frames to name"
else
	msyms=$("$PERF" script -i "$out" -F event,ip,sym,dso 2>/dev/null | awk '/cpu-clock:G/ { on = 1; next } /^[^ \t]/ { on = 0 }
		on && / \(\[virtio_console\]\)$/ { print $2 }' | sort -u)
	check "guest module functions named: call-chain frames in virtio_console ($(wc -w <<<"$msyms"): $(tr '\n' ' ' <<<"$msyms"))" \
		test "$(wc -w <<<"$msyms")" -ge 1
	check "every one is a virtio_console function of the guest's kallsyms" bash -c '
		for s in $1; do grep -q " $s	\[virtio_console\]\$" "$2" || { echo "not in guest kallsyms: $s" >&2; exit 1; }; done' _ "$msyms" "$(e2e_session)/guest/kallsyms"
fi
check_out "host samples still name host kernel functions (a name, not an address)" '\[kernel\.kallsyms\] +\[k\] [A-Za-z_][A-Za-z0-9_.]* *$' \
	bash -c '"$1" report -i "$2" --stdio --no-children --sort dso,sym 2>/dev/null | awk "/of event .sched:sched_switch./ { on = 1; next } /of event/ { on = 0 } on"' _ "$PERF" "$out"
# Guest user functions with no options: the binaries fetched at stop, by build-id.
check_out "stop summary: guest binaries fetched" '^guest binaries: [0-9]+ that user-mode samples ran in: [1-9][0-9]* fetched' echo "$sum"
check_out "merge summary: placed in the output's own build-id dir (the live merge's, renamed with it)" \
	"guest binaries: [1-9][0-9]* in .*buildids/? " echo "$sum"
check "OUT/buildids holds them in perf's layout" bash -c 'ls "$1"/.build-id/*/* >/dev/null' _ "$out/buildids"
# the command the summary prints: perf --buildid-dir DIR report -i OUT
gdir=$(sed -n 's/^  guest user functions: perf --buildid-dir \([^ ]*\) report -i .*/\1/p' <<<"$sum")
check "stop summary prints the perf command for guest user functions (--buildid-dir ${gdir:-none})" test "$gdir" = "$out/buildids"
check "\$HOME/.debug is not written" test ! -e "$HOME/.debug"
wbid=$(readelf -n "$(e2e_session)"/binaries/[0-9a-f]*[0-9a-f] 2>/dev/null | awk '/Build ID/ { print $3 }' | head -n 20)
check "the session's binaries are ELF files with the build-ids they are named by" bash -c '
	for f in "$1"/binaries/*; do case $f in *index|*.part) continue;; esac
		[ "$(readelf -n "$f" | awk "/Build ID/ { print \$3 }")" = "$(basename "$f")" ] || exit 1; done' _ "$(e2e_session)"
check_out "perf report (the summary's command): vt-spin's samples name workload_spin_hot in the guest's workload binary" \
	'^ +[0-9.]+% +vt-spin +workload +\[u\] workload_spin_hot' \
	bash -c '"$1" --buildid-dir "$3" report -i "$2" --stdio --no-children --sort comm,dso,sym 2>/dev/null | awk "/of event .cpu-clock:G./ { on = 1; next } /of event/ { on = 0 } on && /%/"' _ "$PERF" "$out" "$gdir"
# Host-side guest samples (a KVM host's perf record -e cycles:G): no KVM here, so one sample of
# the real host recording is made a guest kernel sample of this QEMU at native_safe_halt.
hs=$(e2e_session)
halt=native_safe_halt # 6.12: pv_native_safe_halt
grep -q ' [tT] native_safe_halt$' "$hs/guest/kallsyms" || halt=pv_native_safe_halt
addr=$(awk -v h="$halt" '$3 == h { print $1; exit }' "$hs/guest/kallsyms")
check "a host sample made guest-mode (pid $qpid, ip $halt+4: what cycles:G records on KVM)" \
	python3 "$E2E_DIR/host-guest-sample.py" "$hs/host.data" "$T/hg.data" "$qpid" "$(printf %x $((0x${addr:-0} + 4)))"
check "merge --host-data with it" tc merge "$hs" --host-data "$T/hg.data" -o "$T/hg.out"
check_out "perf script names the host's guest-mode sample from the guest's kallsyms, in the guest machine" \
	"^ *\[guest/$qpid\] +$qpid +sched:sched_(switch|wakeup): +ffffffff[0-9a-f]+ $halt \(\[guest\.kernel\.kallsyms\.$qpid\]\)" \
	"$PERF" script -i "$T/hg.out" -F comm,pid,event,ip,sym,dso
check_out "perf annotate disassembles workload_spin_hot from the guest's binary (the output's build-id dir's copy)" \
	'^ +: +[0-9]+ +0000000000[0-9a-f]+ <workload_spin_hot>:' "$PERF" --buildid-dir "$gdir" annotate -i "$out" --stdio workload_spin_hot
bound=$(sed -n 's/^clock_error_bound_ns=//p' "$(e2e_session)/merge.ini")
check "every vt-spin sample lies between its vCPU's markers (+- ${bound:-?} ns)" e2e_spin_in_window "$out" "${bound:-0}"
check "guest samples interleave with host events" bash -c '"$1" script -i "$2" -F event 2>/dev/null | awk "
	/cpu-clock:G/ { g++; if (h) between = 1; next } /sched:sched_switch/ && !/guest_/ { h++; if (between) ok = 1 }
	END { exit !(g && h && ok) }"' _ "$PERF" "$out"

# 3 (before 2, which ends the guest): --live-merge with guest perf. The follower merges the
# perf streams while tracing (each CPU's perf flush marker is its horizon) and stop hands out
# its file: the spin's samples within their markers, and the same events as an offline merge.
event_counts() { "$PERF" script -i "$1" -F event 2>/dev/null | sed 's/^ *//; s/[: ]*$//' | sort | uniq -c; }
lsess=$(e2e_start -e 'sched:sched_switch' --guest-perf --live-merge)
check_out "start --guest-perf --live-merge" "^$VM/sessions/" echo "$lsess"
check "guest: vt-spin on each vCPU for 1.5 s" e2e_spin 1500
grown=0
for _ in $(seq 100); do
	[ "$(stat -c %s "$lsess/live.data/data" 2>/dev/null || stat -c %s "$lsess/live.data" 2>/dev/null || echo 0)" \
		-gt $((256 << 10)) ] && { grown=1; break; }
	sleep 0.2
done
check "the live output grows while tracing (over 256 KiB before stop)" test "$grown" = 1
check "guest: 100 numbered markers" e2e_run 100
lsum=$(e2e_stop -v -o "$T/lv.data" 2>&1)
check "stop exits 0" test $? -eq 0
echo "$lsum"
check_out "stop hands out the live merge" '^  live: +merged while tracing' echo "$lsum"
check_out "merge summary: guest perf records written live" 'perf: +guest perf 1 event\(s\), 2/2 vCPU streams, [0-9]+ records written' echo "$lsum"
check "all 100 markers once, in order" e2e_markers "$T/lv.data" 100
check "perf script/report: no warnings" e2e_no_warnings "$T/lv.data" "$lsum"
lbound=$(sed -n 's/^clock_error_bound_ns=//p' "$lsess/merge.ini")
check "every vt-spin sample lies between its vCPU's markers (+- ${lbound:-?} ns)" e2e_spin_in_window "$T/lv.data" "${lbound:-0}"
check "offline merge of the same session" tc merge "$lsess" -o "$T/lv-off.data"
lc=$(event_counts "$T/lv.data")
oc=$(event_counts "$T/lv-off.data")
echo "live:"; echo "$lc"; echo "offline:"; echo "$oc"
check "the live merge holds the same events as the offline merge (cpu-clock:G too)" bash -c '[ "$1" = "$2" ] && grep -q "cpu-clock:G" <<<"$1"' _ "$lc" "$oc"

# 4 (before 2): --flight-recorder with guest perf. Each perf stream is cut at a record boundary
# once past the window, its task and mapping records kept aside (perf-cpuN.side): vt-spin's
# COMM and MMAP2 came before the window, yet its samples still carry its name and its binary's
# function; the perf spools stay within the bound on disk; a snapshot while spinning is a valid
# perf.data; the drop is counted as the flight recorder's, not as a loss in transport.
perf_du() { du -B1 -c "$1"/perf-cpu*.spool | tail -n 1 | cut -f1; }
FR=$((4 << 20))
fsess=$(e2e_start -e 'sched:sched_switch' --guest-perf --guest-freq 5000 --flight-recorder 4M)
check_out "start --guest-perf --flight-recorder 4M" "^$VM/sessions/" echo "$fsess"
# ~0.4 MB/s per vCPU: the window and a step past it within ~15 s here, but a slow host streams
# less in the same time (a CI run's cpu1 reached 6.0 MB in 45 s, short of its first cut). So the
# test waits on bytes, not time: the guest spins again while a stream is short of its cut, and a
# stream is due once its spool (apparent size: holes keep it) passed the window, the cut's step,
# one 1 MiB block and the block the buffer fills (FR + 3 MiB, a 512 KiB margin): a stream past
# that without perf-cpuN.side is a stream the daemon failed to cut.
spin_ms=24000
e2e_say "spin $spin_ms"
due=$((FR + (3 << 20) + (512 << 10)))
max=0 overdue=""
for _ in $(seq 1 480); do
	du=$(perf_du "$fsess")
	[ "$du" -gt "$max" ] && max=$du
	[ -f "$fsess/perf-cpu0.side" ] && [ -f "$fsess/perf-cpu1.side" ] && break
	for c in 0 1; do
		[ -f "$fsess/perf-cpu$c.side" ] || [ "$(stat -c %s "$fsess/perf-cpu$c.spool")" -le "$due" ] || overdue="$overdue cpu$c"
	done
	[ -n "$overdue" ] && break
	if grep -q "vt-e2e: spin done $spin_ms status" "$LOG" && [ "$spin_ms" -lt 24010 ]; then
		spin_ms=$((spin_ms + 1)) # a slow host: spin on (a count of its own, for its own 'done' line)
		e2e_say "spin $spin_ms"
	fi
	sleep 0.5
done
ls -ls "$fsess"/perf-cpu* >&2
check "no perf stream went past its first cut uncut (${overdue:-none} past $due bytes without perf-cpuN.side)" test -z "$overdue"
check "the daemon cut both perf streams (perf-cpuN.side written)" test -f "$fsess/perf-cpu0.side" -a -f "$fsess/perf-cpu1.side"
fsnap=$(tc snapshot --name "$VM_NAME" --run-dir "$RUN" -o "$T/fsnap.data" 2>&1)
check "snapshot while spinning exits 0" test $? -eq 0
echo "$fsnap"
check_out "snapshot: the oldest perf records dropped, their task records kept" 'flight recorder: the oldest [1-9][0-9]* records .* [1-9][0-9]* task and mapping records of them kept' echo "$fsnap"
check "snapshot: perf reads it without a warning" e2e_no_warnings "$T/fsnap.data" "$fsnap"
check_out "snapshot: vt-spin's samples name workload_spin_hot (with the first session's build-id dir: snapshots fetch no binaries)" '^ +[0-9.]+% +vt-spin +workload +\[u\] workload_spin_hot' \
	bash -c '"$1" --buildid-dir "$3" report -i "$2" --stdio --no-children --sort comm,dso,sym 2>/dev/null | awk "/of event .cpu-clock:G./ { on = 1; next } /of event/ { on = 0 } on && /%/"' _ "$PERF" "$T/fsnap.data" "$gdir"
check "guest: the spin ends" e2e_wait "^vt-e2e: spin done $spin_ms status 0" 60
for _ in 1 2 3 4; do du=$(perf_du "$fsess"); [ "$du" -gt "$max" ] && max=$du; sleep 0.2; done
# Per CPU: the window, the cut's step (max(1 MiB, window / 8)), one 1 MiB block (SPOOL_BUF), the partial tail, the begin page.
pbound=$((2 * (FR + (1 << 20) + (1 << 20) + 2 * 4096)))
check "perf spools on disk stayed within the bound: max $max bytes (<= $pbound)" test "$max" -le "$pbound"
fsum=$(e2e_stop -v -o "$T/fr.data" 2>&1)
check "stop exits 0" test $? -eq 0
echo "$fsum"
check_out "merge summary: the oldest guest perf records dropped by the flight recorder" 'oldest guest perf records dropped by the flight recorder .*: [1-9]' echo "$fsum"
check "merge summary: no guest perf bytes missing in transport" bash -c '! grep -q "guest perf bytes missing in transport" <<<"$1"' _ "$fsum"
check "perf script/report: no warnings" e2e_no_warnings "$T/fr.data" "$fsum"
check_out "vt-spin's samples still carry its name and workload_spin_hot (its COMM and MMAP2 came before the window)" \
	'^ +[0-9.]+% +vt-spin +workload +\[u\] workload_spin_hot' \
	bash -c '"$1" --buildid-dir "$2/buildids" report -i "$2" --stdio --no-children --sort comm,dso,sym 2>/dev/null | awk "/of event .cpu-clock:G./ { on = 1; next } /of event/ { on = 0 } on && /%/"' _ "$PERF" "$T/fr.data"
first=$("$PERF" script -i "$T/fr.data" -F comm,time,event 2>/dev/null | awk '/vt-spin .*cpu-clock:G/ { sub(/:$/, "", $2); print $2; exit }')
begin=$("$PERF" script -i "$T/fr.data" -F time,trace 2>/dev/null | awk '/vt-e2e spin begin/ { sub(/:$/, "", $1); print $1; exit }')
check "the oldest samples are gone: the first vt-spin sample kept (${first:-none}) is seconds after the spin began (${begin:-dropped})" \
	bash -c '[ -n "$1" ] && { [ -z "$2" ] || awk -v a="$1" -v b="$2" "BEGIN { exit !(a - b > 2) }"; }' _ "$first" "$begin"

# 2: the ring overflows; LOST reaches perf.
check_out "start --guest-perf --guest-perf-kb 8 --trust-guest-binaries" "^$VM/sessions/" e2e_start -e 'sched:sched_switch' --guest-perf --guest-perf-kb 8 --trust-guest-binaries
check "guest: vt-spin at SCHED_FIFO for 2 s" e2e_spin "2000 f"
sum=$(e2e_stop -v -o "$out" 2>&1)
check "stop exits 0" test $? -eq 0
echo "$sum"
check "guest powers off cleanly" e2e_end
check_out "trusted: the workload binary placed in \$HOME/.debug" "guest binaries: [1-9][0-9]* in $HOME/.debug \(perf's own cache" echo "$sum"
check "trusted: \$HOME/.debug holds the guest binaries in perf's layout" bash -c 'ls "$1"/.build-id/*/* >/dev/null' _ "$HOME/.debug"
check "stop -o on an existing perf.data directory keeps it as OUT.old (its build-id dir too), like perf record" \
	test -f "$out.old/data" -a -d "$out.old/buildids"
lost=$(sed -n 's/.* \([0-9][0-9]*\) LOST records for \([0-9][0-9]*\) samples lost.*/\1/p' <<<"$sum")
check "merge summary: the guest kernel's LOST records (${lost:-none})" test "${lost:-0}" -gt 0
check_out "perf report --stats counts them" "LOST events: +${lost:-x} " "$PERF" report -i "$out" --stats
check "perf script/report: no warning but perf's own about the LOST records" bash -c '
	e=$("$1" script -i "$2" 2>&1 >/dev/null; "$1" report -i "$2" --stdio 2>&1 >/dev/null)
	e=$(grep -vE "^(Warning:|Processed [0-9]+ events and lost [0-9]+ chunks!|Check IO/CPU overload!|)\$" <<<"$e")
	[ -z "$e" ] || { echo "perf said: $e" >&2; false; }' _ "$PERF" "$out"
finish
