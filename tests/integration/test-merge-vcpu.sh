# SPDX-License-Identifier: GPL-2.0-only
# trace-collector merge: vCPU → host CPU, guest tgids, guest build-id, clock recovery and the
# session window, against the real perf 6.1. A fake QEMU (fake-qemu: real threads named
# "CPU n/KVM" hopping between host CPUs) runs while the host is recorded with
# perf record -a -e sched:sched_switch -k CLOCK_MONOTONIC; its pid is the session's qemu_pid.
# Guest pages come from a real tracefs instance of this host (capture-session).
. "$(dirname "$0")/lib.sh"

T=/sys/kernel/tracing
CHECK_CPU="$(dirname "$0")/check-vcpu-cpu.py"
[ -x "$PERF" ] || { fail "perf not found at $PERF (install linux-perf)"; finish; exit 1; }
[ -e $T/instances ] || mount -t tracefs nodev $T || { fail "cannot mount tracefs"; finish; exit 1; }
[ "$(nproc)" -ge 2 ] || { fail "needs at least 2 host CPUs for vCPU threads to move"; finish; exit 1; }
INST=${VT_TEST_INSTANCE_PREFIX:-vt_merge2_test}_$$
I=$T/instances/$INST
W=$(mktemp -d /tmp/vt-merge-vcpu.XXXXXX)
FQ=
cleanup() {
	[ -n "$FQ" ] && kill "$FQ" 2>/dev/null && wait "$FQ"
	[ -d "$I" ] && { echo 0 > "$I/tracing_on"; echo > "$I/set_event"; rmdir "$I"; }
	rm -rf "$W"
}
trap cleanup EXIT

mono_ns() { python3 -c 'import time; print(time.monotonic_ns())'; }

# start_qemu [--no-names]: fake QEMU with one thread per host CPU; sets FQ.
start_qemu() {
	"$FAKE_QEMU" "$(nproc)" "$@" > "$W/fq.out" &
	FQ=$!
	until grep -q ready "$W/fq.out" 2>/dev/null; do kill -0 "$FQ" || return 1; sleep 0.01; done
}
stop_qemu() { kill "$FQ" && wait "$FQ"; FQ=; }
# tids of the fake QEMU's threads, by vCPU (thread n is "CPU n/KVM" or "worker n").
qemu_tids() {
	local n
	for n in $(seq 0 $(($(nproc) - 1))); do
		grep -lx -e "CPU $n/KVM" -e "worker $n" /proc/"$FQ"/task/*/comm | cut -d/ -f5
	done
}

# capture DIR SID: guest instance + host perf record of sched_switch, qemu_pid = $FQ, the
# session window in session.ini, an identity clock.ini (guest mono = host CLOCK_MONOTONIC).
capture() {
	local dir=$1 sid=$2 started stopped
	mkdir -p "$dir"
	started=$(mono_ns)
	mkdir "$I" && echo mono > "$I/trace_clock" && echo 2048 > "$I/buffer_size_kb" &&
		echo 1 > "$I/events/sched/sched_switch/enable" && echo 1 > "$I/events/sched/sched_wakeup/enable" || return 1
	"$PERF" record -q -a -k CLOCK_MONOTONIC -e sched:sched_switch -o "$dir/host.data" -- sh -c \
		"for i in 1 2 3 4 5; do echo vt-marker-\$i > $I/trace_marker; sleep 0.05; done" >/dev/null 2>&1 || return 1
	echo 0 > "$I/tracing_on"
	stopped=$(mono_ns)
	VT_QEMU_PID=$FQ "$CAPTURE_SESSION" $T "$INST" "$dir" "$sid" 0 -1 >/dev/null || return 1
	echo 0 > "$I/tracing_on"; echo > "$I/set_event"; rmdir "$I"
	printf 'started_mono_ns=%s\nstopped_mono_ns=%s\n' "$started" "$stopped" >> "$dir/session.ini"
	printf 'method=ptp\nsegments=1\nseg0.guest_start=0\nseg0.offset_ns=0\nseg0.slope=1.0\nsamples=3\nerror_bound_ns=1000\n' > "$dir/clock.ini"
}
expected() { sed -n 's/^read_events=//p' "$1/expected.ini"; }
nguest() { "$PERF" script -i "$1" -F event 2>/dev/null | grep -c '^ *guest_'; }
no_warnings() { local e; e=$("$PERF" script -i "$1" 2>&1 >/dev/null); [ -z "$e" ] || { echo "$e" >&2; return 1; }; }
sorted() { "$PERF" script -i "$1" -F time 2>/dev/null | tr -d ' :' | sort -c -g; }
# max_guest_ns FILE / min_guest_ns FILE: extreme guest sample time in ns.
guest_times() { "$PERF" script -i "$1" --ns -F time,event 2>/dev/null | awk '/guest_/ {t=$1; sub(":", "", t); sub("\\.", "", t); print t}' | sort -n; }
window() { sed -n 's/.*window: guest times kept in \[\([0-9]*\), \([0-9]*\)\].*/\1 \2/p' <<<"$1"; }

# --- F: named vCPU threads, saved_tgids, guest notes
F=$W/f
check "F: fake qemu" start_qemu
mapfile -t TIDS < <(qemu_tids)
QPID=$FQ
check "F: capture" capture "$F" 21
for t in "${TIDS[@]}"; do echo "$t $FQ"; done > "$F/guest/saved_tgids"
cp /sys/kernel/notes "$F/guest/notes"
bid=$(od -An -tx1 -j16 -N20 /sys/kernel/notes | tr -d ' \n')
stop_qemu
out=$("$TRACE_COLLECTOR" merge "$F" -o "$W/f.data" 2>&1)
echo "$out"
check_out "F: summary: host CPU from the named threads" "vcpu: +guest sample cpu = host CPU .*\($(nproc)/$(nproc) vCPU threads found" echo "$out"
check_out "F: summary: nothing outside the session window" 'window: .*; 0 outside, clamped' echo "$out"
check "F: no warnings" no_warnings "$W/f.data"
check "F: guest events = kernel read events" test "$(nguest "$W/f.data")" -eq "$(expected "$F")"
check "F: time-sorted" sorted "$W/f.data"
check "F: every guest sample carries its vCPU thread's host CPU at that time" python3 "$CHECK_CPU" "$W/f.data" "${TIDS[@]}"
check_out "F: ID_INDEX tid = vCPU 0 thread" "tid: ${TIDS[0]} +machine_pid: $QPID +vcpu: 0" "$PERF" report -D -i "$W/f.data"
check_out "F: ID_INDEX tid = vCPU 1 thread" "tid: ${TIDS[1]} +machine_pid: $QPID +vcpu: 1" "$PERF" report -D -i "$W/f.data"
check_out "F: guest sample pid/tid from saved_tgids" "^VCPU: ?[0-9]+ +$QPID/${TIDS[0]} +guest_" "$PERF" script -i "$W/f.data" -F vcpu,pid,tid,event
check_out "F: guest COMM with pid = tgid" "PERF_RECORD_COMM: CPU 0/KVM:$QPID/${TIDS[0]}" "$PERF" report -D -i "$W/f.data"
check_out "F: buildid-list shows the guest kernel" "^$bid \[guest.kernel.kallsyms.$QPID\]" "$PERF" buildid-list -i "$W/f.data"
check_out "F: buildid-list keeps the host kernel" "^[0-9a-f]+ \[kernel.kallsyms\]" "$PERF" buildid-list -i "$W/f.data"
check_out "F: merge.ini" '^vcpu_cpu=host_sched_switch' cat "$F/merge.ini"

# --- H: deliberately bad clocks: +1000 s and -1000 s offsets. Guest times are clamped into the
# session window and counted.
for sign in + -; do
	H=$W/h$sign
	cp -a "$F" "$H"
	printf 'method=ptp\nsegments=1\nseg0.guest_start=0\nseg0.offset_ns=%s1000000000000\nseg0.slope=1.0\nsamples=3\nerror_bound_ns=1000\n' $sign > "$H/clock.ini"
	out=$("$TRACE_COLLECTOR" merge "$H" -o "$W/h.data" 2>&1)
	n=$(expected "$H")
	check_out "H$sign: all $n guest events reported outside the window" "outside the session window, clamped: $n\$" echo "$out"
	read -r lo hi < <(window "$out")
	times=$(guest_times "$W/h.data")
	check "H$sign: window stated" test -n "$lo" -a -n "$hi"
	check "H$sign: no guest sample before the window" test "$(head -n1 <<<"$times")" -ge "${lo:-0}"
	check "H$sign: no guest sample after the window" test "$(tail -n1 <<<"$times")" -le "${hi:-0}"
	check "H$sign: no warnings" no_warnings "$W/h.data"
	check_out "H$sign: merge.ini counts them" "^guest_outside_window=$n\$" cat "$H/merge.ini"
done

# --- R: daemon killed before the fit: clock.samples, no clock.ini → the merge fits and writes it
R=$W/r
cp -a "$F" "$R"
rm "$R/clock.ini"
read -r lo hi < <(sed -n 's/^started_mono_ns=//p; s/^stopped_mono_ns=//p' "$R/session.ini" | paste -s -d ' ')
python3 - "$lo" "$hi" > "$R/clock.samples" <<'PY'
import sys
lo, hi = int(sys.argv[1]), int(sys.argv[2])
for i in range(40):
    g = lo + (hi - lo) * i // 39
    print(i, g - 3000 - (i % 3) * 500, g, g + 3000 + (i % 5) * 500)
PY
out=$("$TRACE_COLLECTOR" merge "$R" -o "$W/r.data" 2>&1)
check_out "R: summary: recovered fit, 40 samples" 'clock: +aligned \(ptp, [0-9]+ segments, 40 samples, error bound [0-9]+ ns\): recovered, fitted clock.samples, clock.ini written' echo "$out"
check_out "R: clock.ini written" '^method=ptp$' cat "$R/clock.ini"
check_out "R: merge.ini: recovered, 40 samples" '^clock_recovered=1$' cat "$R/merge.ini"
check_out "R: merge.ini: sample count" '^clock_samples=40$' cat "$R/merge.ini"
check_out "R: no guest event outside the window" 'window: .*; 0 outside, clamped' echo "$out"
check "R: guest events" test "$(nguest "$W/r.data")" -eq "$(expected "$R")"
check_out "R: second merge reads the written clock.ini" 'clock: +aligned \(ptp, [0-9]+ segments, 40 samples, error bound [0-9]+ ns\)$' "$TRACE_COLLECTOR" merge "$R" -o "$W/r.data"

# --- G: threads not named "CPU n/KVM" (QEMU without debug-threads): fall back, and say so
G=$W/g
check "G: fake qemu without names" start_qemu --no-names
mapfile -t GTIDS < <(qemu_tids)
check "G: capture" capture "$G" 22
stop_qemu
rm -f "$G/guest/saved_cmdlines"
out=$("$TRACE_COLLECTOR" merge "$G" -o "$W/g.data" 2>&1)
check_out "G: summary says it fell back" 'vcpu: +FALLBACK: guest sample cpu = vCPU number, because no "CPU n/KVM" threads of QEMU pid' echo "$out"
check "G: every guest sample cpu = its vCPU number" test "$("$PERF" script -i "$W/g.data" -F vcpu,cpu,event 2>/dev/null | awk '/guest_/ {v=$1; sub("VCPU:", "", v); c=$2; gsub("[][]", "", c); if (v+0 != c+0) n++} END {print n+0}')" -eq 0
check "G: the checker rejects vCPU numbers where the threads moved" bash -c "! python3 '$CHECK_CPU' '$W/g.data' ${GTIDS[*]} >/dev/null"
check_out "G: ID_INDEX tid unknown (-1)" "tid: -1 +machine_pid: [0-9]+ +vcpu: 0" "$PERF" report -D -i "$W/g.data"
check_out "G: no guest build-id stated" 'kernel: no guest build-id \(no guest/notes\)' echo "$out"

# --- N: no host recording: fall back, and say so
N=$W/n
cp -a "$G" "$N"
rm "$N/host.data"
check_out "N: guest only falls back" 'FALLBACK: .* because no host recording' "$TRACE_COLLECTOR" merge "$N" -o "$W/n.data"
finish
