# SPDX-License-Identifier: GPL-2.0-only
# e2e: the pipeline tells the truth at any size (tests/e2e/lib.sh).
#   test-scale.sh vcpus16   16 vCPUs with setup's ports (spread over controllers): every
#                           CPU streams, every marker arrives, nothing is named missing
#   test-scale.sh vcpus32   32 vCPUs, the default events (sched,irq,timer): the first start
#                           succeeds (enabling 47 events under TCG took 7-11 s, past the old
#                           fixed 10 s; START's wait now follows the agent's progress) and
#                           every CPU streams: its pages arrive, its markers are in perf script
#   test-scale.sh partial   3 vCPUs, ports for 2: start fails naming cpu2 and what to do;
#                           --allow-partial traces the others and names cpu2 everywhere
#   test-scale.sh flood     a flood into a small ring: the ring's overrun reaches perf as
#                           LOST_SAMPLES, exactly the stop summary's figure
#   test-scale.sh onectl    16 vCPUs with all 17 ports on one controller (the old layout): the
#                           guest loses port announcements; start fails naming those CPUs
#   test-scale.sh burst     markers written slowly, a quiet second, then a SCHED_FIFO burst on
#                           the same CPUs into a 1 MiB ring: with --flush-interval 0 (pages go
#                           out only at half full) the burst overwrites them; by default
#                           (1 s) every slow marker arrives; an idle guest tracing kmem moves little
#                           (a flush that fed on its own kmem events moved 39,564 pages in 3 s)
#   test-scale.sh coarse-clock  a guest on the jiffies clocksource (mono steps 4 ms): the agent
#                           measures it, the host traces with x86-tsc instead and fits its rate:
#                           stop exits 0, the bound is far below a step, hold-outs within it
. "$(dirname "$0")/lib.sh"

mode=${1:?usage: test-scale.sh vcpus16|partial|flood}
e2e_init "scale-$mode"
out=$T/out.data

# The numbered lines of the workload in $1 that CPU filter $2 (awk condition on the cpu) keeps.
markers_of() {
	"$PERF" script -i "$1" -F event,trace 2>/dev/null |
		sed -n 's/.*guest_ftrace:print:.*vt-e2e line \([0-9]*\) cpu \([0-9]*\).*/\1 \2/p' |
		awk "$2 { print \$1 }" | tr '\n' ' '
}

# The 16-vCPU guests trace the agent too (--agent-events): leaving it out registers the kernel's
# pid-filter probes on four scheduler tracepoints, four more patches of the guest's code at
# start and four at the agent's exit, and QEMU 7.2's multi-threaded TCG can hang a vCPU on such
# a patch (collector/daemon/daemon.c TCG_PATCH_HANG; fixed in QEMU 8.1). With 16 vCPUs on 2 host cores
# two full CI runs in four had one guest that never powered off. The default (agent left out)
# is checked at 2 vCPUs by 'burst'.
AGENT_EVENTS=--agent-events
# The 32-vCPU guest runs single-threaded TCG: with 32 vCPUs enabling 47 events patches the
# guest's code often enough that QEMU 7.2's multi-threaded TCG hang came in CI (2026-11-27: the
# agent stuck at 31/47 events, 0 of 32 begin markers, start said so and named the QEMU bug).
# What this test checks (the START deadline that follows progress, every CPU streaming) is the
# same on one TCG thread; KVM ignores it.
TCG_SINGLE=--tcg-single

vcpus16() {
	local qpid sum n=400
	check "boot 16 vCPUs: guest ready, agent waiting" e2e_boot --cpus 16 --mem 512 --timeout 280
	qpid=$(e2e_qemu_pid)
	mapfile -t tids < <(e2e_vcpu_tids "$qpid" 16)
	check "QEMU runs 16 named vCPU threads" test "${#tids[@]}" -eq 16
	check "QEMU carries the 33 ports (control, 16 trace, 16 perf) on 5 virtio-serial controllers" \
		test "$(tr '\0' '\n' <"/proc/$qpid/cmdline" | grep -c '^virtio-serial-pci,')" -eq 5
	check_out "start: every CPU streams" "^$VM/sessions/" e2e_start -e 'sched:sched_switch' --buffer-kb 256 $AGENT_EVENTS
	check "guest workload ($n lines over 16 CPUs)" e2e_run "$n"
	check "status names no CPU missing" bash -c '! grep -q "NOT TRACED" <<<"$1"' _ "$(e2e_status)"
	sum=$(e2e_stop -v -o "$out" 2>&1)
	check "stop exits 0" test $? -eq 0
	echo "$sum"
	check "guest powers off cleanly" e2e_end
	for c in $(seq 0 15); do
		check_out "summary: cpu$c all pages arrived" "^cpu$c: ([0-9]+) pages .* spooled, guest sent \\1, 0 lost in transport" echo "$sum"
	done
	check "summary: no CPU missing, no spool without its begin marker" \
		bash -c '! grep -Eq "NOT TRACED|without this session.s begin marker|no end marker" <<<"$1"' _ "$sum"
	check_out "summary: 16/16 vCPU threads found" 'vcpu: .*\(16/16 vCPU threads found' echo "$sum"
	check "perf script/report: no warnings" e2e_no_warnings "$out" "$sum"
	check "all $n markers present once, in order" e2e_markers "$out" "$n"
	check "markers of all 16 CPUs" test "$(markers_of "$out" 1 | wc -w)" -eq "$n" -a \
		"$("$PERF" script -i "$out" -F event,trace 2>/dev/null | sed -n 's/.*vt-e2e line [0-9]* cpu \([0-9]*\).*/\1/p' | sort -u | wc -l)" -eq 16
}

# vcpus32: the first start of a 32-vCPU guest (issue 33). --agent-events as for 16 vCPUs.
vcpus32() {
	local qpid sum sess t0 n=320 cpus
	check "boot 32 vCPUs: guest ready, agent waiting" e2e_boot --cpus 32 --mem 1024 --timeout 400 $TCG_SINGLE
	qpid=$(e2e_qemu_pid)
	mapfile -t tids < <(e2e_vcpu_tids "$qpid" 32)
	if tr '\0' ' ' <"/proc/$qpid/cmdline" | grep -q 'thread=single'; then
		echo "QEMU runs one TCG thread for the 32 vCPUs (${#tids[@]} vCPU threads named)"
	else
		check "QEMU runs 32 named vCPU threads" test "${#tids[@]}" -eq 32
	fi
	t0=$SECONDS
	sess=$(e2e_start --buffer-kb 256 $AGENT_EVENTS 2>&1)
	check_out "the first start succeeds (default events, every CPU streams)" "^$VM/sessions/" echo "$sess"
	echo "first start took $((SECONDS - t0)) s; the steps the agent reported past 1 s:"
	grep 'start: the agent is' "$(e2e_session)/collector.log"
	check "guest workload ($n lines over 32 CPUs)" e2e_run "$n"
	check "status names no CPU missing" bash -c '! grep -q "NOT TRACED" <<<"$1"' _ "$(e2e_status)"
	sum=$(e2e_stop -v -o "$out" 2>&1)
	check "stop exits 0" test $? -eq 0
	echo "$sum"
	check "guest powers off cleanly" e2e_end
	for c in $(seq 0 31); do
		check_out "summary: cpu$c all pages arrived" "^cpu$c: ([0-9]+) pages .* spooled, guest sent \\1, 0 lost in transport" echo "$sum"
	done
	check "summary: no CPU missing, no spool without its begin marker" \
		bash -c '! grep -Eq "NOT TRACED|without this session.s begin marker|no end marker" <<<"$1"' _ "$sum"
	check "all $n markers present once, in order" e2e_markers "$out" "$n"
	cpus=$("$PERF" script -i "$out" -F event,trace 2>/dev/null | sed -n 's/.*vt-e2e line [0-9]* cpu \([0-9]*\).*/\1/p' | sort -u | wc -l)
	check "perf script: markers of all 32 CPUs ($cpus)" test "$cpus" -eq 32
}

partial() {
	local msg sum n=300 sess
	check "boot 3 vCPUs with ports for 2" e2e_boot --cpus 3 --port-cpus 2
	msg=$(e2e_start -e 'sched:sched_switch' 2>&1)
	check "start fails by default when a CPU cannot stream" test $? -ne 0
	echo "$msg"
	check_out "start names the CPU" 'cpu2' echo "$msg"
	check_out "start says what to do" "trace-collector setup.*--allow-partial|--allow-partial" echo "$msg"
	sess=$(e2e_start -e 'sched:sched_switch' --allow-partial --timeout 30 $AGENT_EVENTS)
	check_out "start --allow-partial goes on" "^$VM/sessions/" echo "$sess"
	check_out "status names the CPU not traced" '^cpu2 +NOT TRACED' e2e_status
	check "guest workload ($n lines over 3 CPUs)" e2e_run "$n"
	e2e_stop_end "$out" -v
	check_out "summary: cpu2 NOT TRACED" '^cpu2: NOT TRACED' echo "$sum"
	check_out "summary: the missing CPUs named" '^NOT TRACED: guest CPUs 2 ' echo "$sum"
	check_out "merge summary: the missing CPUs named" 'NOT TRACED: guest CPUs 2 ' echo "$sum"
	check_out "session.ini: missing_cpus=2" '^missing_cpus=2$' cat "$sess/session.ini"
	check "perf script/report: no warnings" e2e_no_warnings "$out" "$sum"
	check "the traced CPUs' markers all present, in order" \
		test "$(markers_of "$out" '$2 != 2')" = "$(seq 0 $((n - 1)) | awk '$1 % 3 != 2' | tr '\n' ' ')"
}

flood() {
	local sum overrun lost
	check "boot: guest ready, agent waiting" e2e_boot
	check_out "start with a 16 KiB ring" "^$VM/sessions/" e2e_start -e 'sched:sched_switch' --buffer-kb 16 --no-host
	check "guest flood (200000 lines, 100000 per CPU)" e2e_say "flood 200000 100000"
	check "flood done" e2e_wait '^vt-e2e: flood done 200000 status 0' 200
	sum=$(e2e_stop -v -o "$out" 2>&1)
	check "stop exits 0" test $? -eq 0
	echo "$sum"
	check "guest powers off cleanly" e2e_end
	overrun=$(sed -n 's/^losses: ring overrun \([0-9]*\) events.*/\1/p' <<<"$sum")
	lost=$(e2e_perf_lost "$out")
	echo "summary ring overrun: $overrun; perf Total Lost Samples: $lost"
	check "the ring overran (the flood outran a 16 KiB ring)" test "${overrun:-0}" -gt 0
	check "transport lost nothing" bash -c 'grep -q "transport 0 pages" <<<"$1"' _ "$sum"
	check "perf's lost samples equal the summary's ring overrun" test "$lost" = "$overrun"
	check "no page dropped as damaged" bash -c '! grep -q "damaged pages dropped" <<<"$1"' _ "$sum"
	check_out "merge summary: pages with missed events written as LOST_SAMPLES" \
		'ring pages with missed events \(LOST_SAMPLES written\): [1-9]' echo "$sum"
	check_out "perf report --stats counts LOST_SAMPLES records" 'LOST_SAMPLES events: +[1-9]' \
		"$PERF" report -i "$out" --stats
}

onectl() {
	local msg sess lost
	check "boot 16 vCPUs, all 17 ports on one controller" e2e_boot --cpus 16 --mem 512 --timeout 280 --one-controller 1
	# --timeout 30: in one CI run (QEMU 10, a host at half this one's speed) the agent's start
	# made no progress for 10 s while starting its 16 threads (8 begin markers in), and the start
	# failed on that instead of the broken ports. Not seen in 9 runs here, loaded or not.
	msg=$(e2e_start -e 'sched:sched_switch' --timeout 30 $AGENT_EVENTS 2>&1)
	check "start fails: some CPUs cannot stream" test $? -ne 0
	echo "$msg"
	check_out "start names them, Broken pipe, and what to do" \
		'start failed: [1-9][0-9]* of 16 guest CPUs cannot stream: cpu[0-9]+ \(Broken pipe\).*re-run .trace-collector setup.*--allow-partial' echo "$msg"
	lost=$(grep -o 'cpu[0-9]* (Broken pipe)' <<<"$msg" | cut -d' ' -f1 | sed 's/cpu//' | tr '\n' ',' | sed 's/,$//')
	check_out "the agent says why (the host side never seen open)" 'the guest never saw the host side open' e2e_console
	sess=$(e2e_start -e 'sched:sched_switch' --allow-partial --timeout 30 $AGENT_EVENTS)
	check_out "start --allow-partial goes on without cpus $lost" "^$VM/sessions/" echo "$sess"
	check "guest workload" e2e_run 160
	check_out "stop names them, in the short summary" "^missing: NOT TRACED: guest CPUs $lost " e2e_stop -o "$out"
	check_out "session.ini names them" "^missing_cpus=$lost\$" cat "$sess/session.ini"
	check "guest powers off cleanly" e2e_end
}

# wait_nth REGEX N SECONDS: the console has REGEX N times (the same line comes once per session).
wait_nth() {
	local deadline=$((SECONDS + $3))
	while [ $SECONDS -lt $deadline ]; do
		[ "$(e2e_console | grep -Ec -- "$1")" -ge "$2" ] && return 0
		sleep 0.1
	done
	echo "timed out waiting for /$1/ #$2" >&2
	return 1
}

burst_session() { # FLUSH_SEC OUT NTH: slow markers, a quiet spell, a burst; prints the slow ones that arrived
	local sess
	sess=$(e2e_start -e 'sched:sched_switch' --buffer-kb 1024 --no-host --flush-interval "$1") || return 1
	e2e_say "slow 200 5000" && wait_nth '^vt-e2e: slow done 200 status 0' "$3" 60 || return 1
	sleep 1.5
	e2e_say "burst 400000 200000" && wait_nth '^vt-e2e: burst done 400000 status 0' "$3" 120 || return 1
	e2e_stop -v -o "$2" 2>&1 | grep -E '^(losses|cpu[0-9]|  output)' >&2
	"$PERF" script -i "$2" -F trace 2>/dev/null | grep -c 'vt-e2e slow '
}

burst() {
	local got0 got1
	check "boot: guest ready, agent waiting" e2e_boot --timeout 280
	got0=$(burst_session 0 "$T/noflush.data" 1)
	echo "--flush-interval 0: $got0 of 200 slow markers"
	check "without the flush the burst eats the quiet spell (the check can fail: ${got0:-?} of 200)" test "${got0:-200}" -lt 200
	got1=$(burst_session 1 "$out" 2)
	echo "--flush-interval 1: $got1 of 200 slow markers"
	check "with the 1 s flush every slow marker arrives (${got1:-?} of 200)" test "${got1:-0}" -eq 200
	check_out "the burst itself overran the ring" 'LOST_SAMPLES events: +[1-9]' "$PERF" report -i "$out" --stats
	flush_kmem
	check "guest powers off cleanly" e2e_end
}

# The flush must not feed on itself: with kmem traced every write into the port makes new
# events, and a flush that read until EAGAIN streamed its own events without end (83% of a vCPU,
# ~30 MB/s: bench/RESULTS.md). An idle guest tracing kmem for 3 s moves little.
flush_kmem() {
	local sess sum pages
	sess=$(e2e_start -e 'kmem:kmalloc,kmem:kfree,sched:sched_switch' --no-host)
	check_out "start tracing kmem on an idle guest" "^$VM/sessions/" echo "$sess"
	sleep 3
	sum=$(e2e_stop -v -o "$T/kmem.data" 2>&1)
	check "stop exits 0" test $? -eq 0
	pages=$(sed -n 's/^pages: \([0-9]*\) in total/\1/p' <<<"$sum")
	check "the 1 s flush does not feed on its own kmem events: ${pages:-?} pages in 3 s (< 1000)" \
		test "${pages:-100000}" -lt 1000
	# The agent's own threads are left out of the events (set_event_notrace_pid), unless asked.
	agent_kmem() { "$PERF" script -i "$1" -F comm,event 2>/dev/null | grep trace-agent | grep -c guest_kmem; }
	check "no kmem event of the agent's own threads: $(agent_kmem "$T/kmem.data") (0)" \
		test "$(agent_kmem "$T/kmem.data")" -eq 0
	# kmem_2s OUT [start options]: a 2 s kmem session of the idle guest into OUT
	kmem_2s() {
		local o=$1
		shift
		sess=$(e2e_start -e 'kmem:kmalloc,kmem:kfree,sched:sched_switch' --no-host "$@")
		check_out "start $*" "^$VM/sessions/" echo "$sess"
		sleep 2
		check "stop exits 0" tc stop --name "$VM_NAME" --run-dir "$RUN" -o "$o"
	}
	kmem_2s "$T/kmem-self.data" --agent-events
	check "--agent-events: the agent's own kmem events are traced: $(agent_kmem "$T/kmem-self.data") (> 0)" \
		test "$(agent_kmem "$T/kmem-self.data")" -gt 0
	# Sessions add their threads to the list (the kmem session above was the third): after
	# --agent-events cleared it, the next one starts a new list.
	kmem_2s "$T/kmem-again.data"
	check "the agent's threads left out again: $(agent_kmem "$T/kmem-again.data") kmem events (0)" \
		test "$(agent_kmem "$T/kmem-again.data")" -eq 0
}

# Guest perf on the same guest: its events go on x86-tsc, its samples carry the coarse mono
# (perf has no TSC clock), which a second fit from the probes' mono readings maps.
coarse_clock_perf() {
	local psess psum pout=$T/perf-out pb fb
	psess=$(e2e_start -e 'sched:sched_switch' --clock ptp --guest-perf)
	check_out "start --guest-perf on the jiffies guest" "^$VM/sessions/" echo "$psess"
	check "guest: vt-spin on each vCPU for 1.5 s" e2e_spin 1500
	psum=$(e2e_stop -v -o "$pout" 2>&1)
	check "stop exits 0 (both clocks aligned)" test $? -eq 0
	echo "$psum"
	check_out "events traced with x86-tsc" '^guest_clock=x86-tsc$' cat "$psess/session.ini"
	check "the probes read the guest's mono too (perf-clock.samples)" test -s "$psess/perf-clock.samples"
	check_out "merge: guest perf's mono fitted on its own" 'perf clock: guest mono \(the trace clock is x86-tsc\), fitted from perf-clock.samples' echo "$psum"
	pb=$(sed -n 's/.*perf clock: .*error bound \([0-9]*\) ns.*/\1/p' <<<"$psum")
	fb=$(sed -n 's/^error_bound_ns=//p' "$psess/clock.ini")
	check "perf clock bound ${pb:-?} ns covers mono's 4 ms step and two stale ticks after idle" test "${pb:-0}" -ge 10000000
	check "every vt-spin sample between its vCPU's x86-tsc markers (+- perf and trace bounds)" \
		e2e_spin_in_window "$pout" "$((${pb:-0} + ${fb:-0}))"
}

coarse_clock() {
	local sum sess res bound n=300
	check "boot with clocksource=jiffies" e2e_boot --append clocksource=jiffies
	sess=$(e2e_start -e 'sched:sched_switch' --clock ptp --probe-interval 0.25 --holdout-probes)
	check_out "start" "^$VM/sessions/" echo "$sess"
	check "guest workload ($n lines)" e2e_run "$n"
	sleep 2 # hold-out probes
	sum=$(e2e_stop -v -o "$out" 2>&1)
	check "stop exits 0 (the clock aligned)" test $? -eq 0
	echo "$sum"
	coarse_clock_perf
	check "guest powers off cleanly" e2e_end
	check_out "merge: clock aligned from clock.ini" 'clock: +aligned \(ptp, [0-9]+ segments' echo "$sum"
	check "merge: not UNALIGNED" bash -c '! grep -q UNALIGNED <<<"$1"' _ "$sum"
	check_out "no guest time outside the session window" 'window: .*; 0 outside, clamped' echo "$sum"
	# The agent measured mono stepping every 4 ms, and x86-tsc fine: the host traced with x86-tsc
	# and the fit measured its rate, so the bound is far below a jiffy.
	check_out "hello: the agent measured mono's 4 ms steps" '^guest_clock_res=mono=4000000ns .*x86-tsc=[0-9]+cycles' cat "$sess/session.ini"
	check_out "auto-chosen guest trace clock: x86-tsc" '^guest_clock=x86-tsc$' cat "$sess/session.ini"
	check_out "clock.ini: the guest clock's rate measured (ns per cycle)" '^guest_scale=0\.[0-9]+' cat "$sess/clock.ini"
	bound=$(sed -n 's/^error_bound_ns=//p' "$sess/clock.ini")
	check "error bound ${bound:-?} ns, below a quarter of the 4 ms step mono would give" test "${bound:-9999999}" -lt 1000000
	check "all $n markers present once, in order across both CPUs" e2e_markers "$out" "$n"
	check "hold-out markers within the stated error bound ($bound ns) of their probe's [send, reply]" \
		python3 - "$sess/clock.holdout" "$out" "$bound" "$PERF" <<'PY'
import re, subprocess, sys
holdout = {int(l.split()[0]): (int(l.split()[1]), int(l.split()[3])) for l in open(sys.argv[1]) if l.strip()}
res = int(sys.argv[3])
out = subprocess.run([sys.argv[4], "script", "-i", sys.argv[2], "--ns", "-F", "time,event,trace"], capture_output=True, text=True).stdout
marks = {int(m.group(3)): int(m.group(1)) * 10**9 + int(m.group(2))
         for m in re.finditer(r"^\s*(\d+)\.(\d{9}):\s+guest_ftrace:print:.*vt-probe (\d+)", out, re.M)}
off = [max(h[0] - marks[k], marks[k] - h[1], 0) for k, h in holdout.items() if k in marks]
for k, h in sorted(holdout.items()):
    if k in marks:
        print(f"probe {k}: marker - send {marks[k] - h[0]} ns, reply - marker {h[1] - marks[k]} ns")
print(f"{len(holdout)} hold-out probes, {len(off)} markers, worst distance outside [send, reply] {max(off) if off else -1} ns, stated bound {res} ns")
sys.exit(0 if len(off) >= 3 and len(off) == len(holdout) and max(off) <= res else 1)
PY
}

"${mode//-/_}"
finish
