# SPDX-License-Identifier: GPL-2.0-only
# trace-collector merge against the real perf 6.1: host recordings made here with perf record
# (several tracepoints, one tracepoint, -z, -k CLOCK_MONOTONIC, cpu-clock), guest pages captured
# from a real tracefs instance of this host (capture-session), checks with perf script/report.
. "$(dirname "$0")/lib.sh"

T=/sys/kernel/tracing
[ -x "$PERF" ] || { fail "perf not found at $PERF (install linux-perf)"; finish; exit 1; }
[ -e $T/instances ] || mount -t tracefs nodev $T || { fail "cannot mount tracefs"; finish; exit 1; }
INST=${VT_TEST_INSTANCE_PREFIX:-vt_merge_test}_$$
I=$T/instances/$INST
W=$(mktemp -d /tmp/vt-merge-test.XXXXXX)
cleanup() {
	[ -d "$I" ] && { echo 0 > "$I/tracing_on"; echo > "$I/set_event"; rmdir "$I"; }
	rm -rf "$W"
}
trap cleanup EXIT

# capture DIR SID STALE DROP PERF_RECORD_ARGS...: guest instance + host perf record side by side.
capture() {
	local dir=$1 sid=$2 stale=$3 drop=$4
	shift 4
	mkdir -p "$dir"
	[ -d "$I" ] && { echo 0 > "$I/tracing_on"; echo > "$I/set_event"; rmdir "$I"; }
	mkdir "$I" && echo mono > "$I/trace_clock" && echo 2048 > "$I/buffer_size_kb" &&
		echo 1 > "$I/events/sched/sched_switch/enable" && echo 1 > "$I/events/sched/sched_wakeup/enable" || return 1
	if [ $# -gt 0 ]; then
		"$PERF" record -q "$@" -a -o "$dir/host.data" -- sh -c \
			"for i in 1 2 3 4 5; do echo vt-marker-\$i > $I/trace_marker; sleep 0.05; done" >/dev/null 2>&1 || return 1
	else
		for i in 1 2 3 4 5; do echo vt-marker-$i > "$I/trace_marker"; sleep 0.05; done
	fi
	echo 0 > "$I/tracing_on"
	VT_QEMU_PID=4242 "$CAPTURE_SESSION" $T "$INST" "$dir" "$sid" "$stale" "$drop" >/dev/null
}
expected() { sed -n 's/^read_events=//p' "$1/expected.ini"; }
# Counts of perf script lines: host lines (no guest_ prefix) and guest lines.
# (by the event field only: host -a recordings of cpu-clock print symbols, some named guest_*)
nguest() { "$PERF" script -i "$1" -F event 2>/dev/null | grep -c '^ *guest_'; }
nhost() { "$PERF" script -i "$1" -F event 2>/dev/null | grep -vc -e '^ *guest_' -e '^$'; }
no_warnings() { local e; e=$("$PERF" script -i "$1" 2>&1 >/dev/null); [ -z "$e" ] || { echo "$e" >&2; return 1; }; }
sorted() { "$PERF" script -i "$1" -F time 2>/dev/null | tr -d ' :' | sort -c -g; }
stats_of() { "$PERF" report -i "$1" --stats 2>/dev/null | awk -v ev="$2" '$1 == ev && $2 == "stats:" {f=1; next} f && /SAMPLE events/ {print $3; exit}'; }
same_count() { [ -n "$1" ] && [ "$1" -eq "$2" ]; }

# --- A: several tracepoints, -k CLOCK_MONOTONIC, stale bytes, edited guest format, clock.ini
A=$W/a
check "A: capture" capture "$A" 42 100 -1 -k CLOCK_MONOTONIC -e sched:sched_switch -e sched:sched_wakeup
sed -i 's/print fmt: "prev_comm=/print fmt: "GUESTFMT prev_comm=/' "$A/guest/events/sched/sched_switch/format"
printf 'method=ptp\nsegments=1\nseg0.guest_start=0\nseg0.offset_ns=0\nseg0.slope=1.0\nsamples=3\nerror_bound_ns=1000\n' > "$A/clock.ini"
check_out "A: merge summary" 'clock: +aligned \(ptp' "$TRACE_COLLECTOR" merge "$A" -o "$W/a.data"
check "A: perf script prints no warnings" no_warnings "$W/a.data"
check "A: guest events = kernel read events" test "$(nguest "$W/a.data")" -eq "$(expected "$A")"
check "A: host events unchanged" test "$(nhost "$W/a.data")" -eq "$(nhost "$A/host.data")"
check "A: time-sorted output" sorted "$W/a.data"
check "A: guest sched_switch uses the guest format" test "$("$PERF" script -i "$W/a.data" 2>/dev/null | grep guest_sched:sched_switch | grep -vc GUESTFMT)" -eq 0
check "A: host sched_switch keeps the host format" test "$("$PERF" script -i "$W/a.data" 2>/dev/null | grep ' sched:sched_switch' | grep -c GUESTFMT)" -eq 0
check_out "A: guest lines carry VM and VCPU" '^VM: ?4242 VCPU: ?00[01] .*guest_sched' "$PERF" script -i "$W/a.data" -F +machine_pid,+vcpu
check "A: 5 markers" test "$("$PERF" script -i "$W/a.data" 2>/dev/null | grep -c 'guest_ftrace:print:.*vt-marker-')" -eq 5
for ev in sched:sched_switch sched:sched_wakeup; do
	check "A: report --stats $ev host count" same_count "$(stats_of "$W/a.data" $ev)" "$(stats_of "$A/host.data" $ev)"
done
sum=0
for ev in guest_sched:sched_switch guest_sched:sched_wakeup guest_ftrace:print; do
	sum=$((sum + $(stats_of "$W/a.data" $ev || echo 0)))
done
check "A: report --stats guest counts sum to read events" test "$sum" -eq "$(expected "$A")"
check "A: guest_ftrace:print stats = 5" same_count "$(stats_of "$W/a.data" guest_ftrace:print)" 5
(cd "$W" && "$PERF" script -i a.data -g python >/dev/null 2>&1)
check "A: python handler guest_sched__sched_switch" grep -q '^def guest_sched__sched_switch' "$W/perf-script.py"
check "A: python handler sched__sched_switch" grep -q '^def sched__sched_switch' "$W/perf-script.py"
check_out "A: -z merge" 'zstd' "$TRACE_COLLECTOR" merge "$A" -o "$W/az.data" -z
check "A: -z output reads identically" cmp <("$PERF" script -i "$W/a.data" 2>&1) <("$PERF" script -i "$W/az.data" 2>&1)
check "A: -z file has COMPRESSED records" bash -c "'$PERF' report -i '$W/az.data' --stats 2>/dev/null | grep -q 'COMPRESSED events'"

# --- B: one tracepoint (no PERF_SAMPLE_IDENTIFIER in the host file), default clock
B=$W/b
check "B: capture" capture "$B" 7 0 -1 -e sched:sched_switch
check "B: merge (no clock.ini: written, exit 3 for the unaligned clock)" \
	bash -c '"$1" merge "$2" -o "$3" >/dev/null 2>&1; test $? -eq 3' _ "$TRACE_COLLECTOR" "$B" "$W/b.data"
check "B: no warnings" no_warnings "$W/b.data"
check "B: guest events" test "$(nguest "$W/b.data")" -eq "$(expected "$B")"
check "B: host events" test "$(nhost "$W/b.data")" -eq "$(nhost "$B/host.data")"
check_out "B: host attr gained IDENTIFIER" 'sched:sched_switch.*IDENTIFIER' "$PERF" evlist -v -i "$W/b.data"
check "B: time-sorted" sorted "$W/b.data"

# --- C: host -z with cpu-clock and a tracepoint, -k CLOCK_MONOTONIC
C=$W/c
check "C: capture" capture "$C" 9 0 -1 -z -k CLOCK_MONOTONIC -e cpu-clock -e sched:sched_switch
check "C: merge of a -z host file" bash -c '"$1" merge "$2" -o "$3" >/dev/null 2>&1; test $? -eq 3' _ "$TRACE_COLLECTOR" "$C" "$W/c.data"
check "C: no warnings" no_warnings "$W/c.data"
check "C: guest events" test "$(nguest "$W/c.data")" -eq "$(expected "$C")"
check "C: host events" test "$(nhost "$W/c.data")" -eq "$(nhost "$C/host.data")"
check "C: time-sorted" sorted "$W/c.data"

# --- A2: the same guest pages said to be x86-tsc (cycles) with a fit that has no guest_scale
# (probes too close together to measure the rate): unaligned, saying why, not a wrong "aligned".
A2=$W/a2
cp -r "$A" "$A2"
sed -i 's/^guest_clock=.*/guest_clock=x86-tsc/' "$A2/session.ini"
grep -q '^guest_clock=' "$A2/session.ini" || echo 'guest_clock=x86-tsc' >> "$A2/session.ini"
check_out "A2: x86-tsc without a measured rate: UNALIGNED, saying why" \
	'UNALIGNED \(the guest traced with x86-tsc \(cycles\) and the probes span too short' \
	"$TRACE_COLLECTOR" merge "$A2" -o "$W/a2.data"

# --- D: guest only
D=$W/d
check "D: capture" capture "$D" 11 0 -1
check_out "D: guest-only merge" 'none \(guest only\)' "$TRACE_COLLECTOR" merge "$D" -o "$W/d.data"
spooled=$(cat "$D"/cpu*.spool | wc -c)
read_bytes=$("$TRACE_COLLECTOR" merge "$D" -o "$W/d.data" 2>/dev/null | sed -n 's/.*input read: \([0-9]*\) bytes.*/\1/p')
check "D: the merge reads every spool byte once (read $read_bytes of $spooled)" test "${read_bytes:-0}" -eq "$spooled"
check_out "D: unaligned clock stated" 'UNALIGNED' "$TRACE_COLLECTOR" merge "$D" -o "$W/d.data"
check_out "D: ... as an error naming the file" 'error: guest clock UNALIGNED \(.*\): .*/d.data has the guest' "$TRACE_COLLECTOR" merge "$D" -o "$W/d.data"
check "D: merge exits 3 (written, unaligned)" bash -c '"$1" merge "$2" -o "$3" >/dev/null 2>&1; test $? -eq 3' _ "$TRACE_COLLECTOR" "$D" "$W/d.data"
check "D: no warnings" no_warnings "$W/d.data"
check "D: report has no warnings" test -z "$("$PERF" report -i "$W/d.data" --stdio 2>&1 >/dev/null)"
check "D: guest events" test "$(nguest "$W/d.data")" -eq "$(expected "$D")"

# --- O: a real ring overrun (8 KiB ring, a marker flood on one CPU): the kernel's sign-extended
# missed-events pages are read, never dropped, and perf's lost samples equal the ring's overrun.
O=$W/o
capture_overrun() {
	[ -d "$I" ] && { echo 0 > "$I/tracing_on"; echo > "$I/set_event"; rmdir "$I"; }
	mkdir -p "$O" && mkdir "$I" && echo mono > "$I/trace_clock" && echo 8 > "$I/buffer_size_kb" || return 1
	taskset -c 0 python3 -c "
import sys
with open(sys.argv[1], 'w') as m:
    for i in range(3000):
        m.write('vt-flood %d\\n' % i); m.flush()" "$I/trace_marker" || return 1
	echo 0 > "$I/tracing_on"
	VT_CAPTURE_OVERRUN=1 VT_QEMU_PID=4242 "$CAPTURE_SESSION" $T "$INST" "$O" 77 0 -1 >/dev/null
}
check "O: capture of an overrun ring" capture_overrun
ov=$(sed -n 's/^overrun=//p' "$O/expected.ini")
out=$("$TRACE_COLLECTOR" merge "$O" -o "$W/o.data" 2>&1)
lost=$("$PERF" report -i "$W/o.data" --stdio 2>/dev/null | awk '/^# Total Lost Samples:/ { n += $5 } END { print n + 0 }')
echo "O: ring overrun $ov, perf Total Lost Samples $lost"
check "O: the ring overran" test "${ov:-0}" -gt 0
check "O: perf's lost samples = the ring's overrun" test "$lost" = "$ov"
check "O: guest events = kernel read events (no page dropped)" test "$(nguest "$W/o.data")" -eq "$(expected "$O")"
check "O: no damaged page" bash -c '! grep -q "damaged pages" <<<"$1"' _ "$out"
check_out "O: perf report --stats counts LOST_SAMPLES" 'LOST_SAMPLES events: +[1-9]' "$PERF" report -i "$W/o.data" --stats

# --- F: guest perf on a coarse (jiffies) guest clock: a FORK and the child's COMM on another vCPU
# share a stamp (tests/fixtures/coarse-clock-fork/README.md)
F=$W/f
cp -r "$VT_SOURCE_ROOT/tests/fixtures/coarse-clock-fork" "$F"
out=$("$TRACE_COLLECTOR" merge "$F" -o "$W/f.data" 2>&1)
check_out "F: merge of the coarse-clock session" 'perf: +guest perf 1 event\(s\), 2/2 vCPU streams' echo "$out"
# "VCPU:000 vt-spin 150 cpu-clock:G:": samples of the vt-spin tids by the name perf gives them
spin_names() { "$PERF" script -i "$1" -F vcpu,comm,tid,event 2>/dev/null | awk '$4 == "cpu-clock:G:" && ($3 == 150 || $3 == 151) { print $3, $2 }' | sort | uniq -c; }
echo "F: $(spin_names "$W/f.data" | tr '\n' ';')"
check "F: every sample of tids 150 and 151 is named vt-spin (or vt-spun after): their FORK goes before the COMM of the same tick" \
	test "$(spin_names "$W/f.data" | awk '$3 ~ /^vt-sp[iu]n$/ { v += $1; next } { o += $1 } END { print (v > 600 && !o) ? "ok" : "bad" }')" = ok

# --- S: a real host.data whose MMAP2 records carry a stale build-id flag (the kernel's, left by
# another perf event with attr.build_id: tests/fixtures/host-mmap2-stale-bid/README.md)
S=$W/s
SF=$VT_SOURCE_ROOT/tests/fixtures/host-mmap2-stale-bid/host.data
mmap2_of() { "$PERF" report --stats -i "$1" 2>/dev/null | sed -n 's/^ *MMAP2 events: *\([0-9]*\).*/\1/p'; }
check_out "S: the fixture itself makes perf 6.1 warn (util/build-id.c)" 'assertion failed at util/build-id.c' \
	bash -c '"$1" script -i "$2" 2>&1 >/dev/null' _ "$PERF" "$SF"
cp -r "$VT_SOURCE_ROOT/tests/fixtures/coarse-clock-fork" "$S"
out=$("$TRACE_COLLECTOR" merge "$S" --host-data "$SF" -o "$W/s.data" 2>&1)
check "S: merge with the fixture as --host-data exits 0" test $? -eq 0
check_out "S: the summary counts the stale flags cleared" '311 MMAP2 records. stale build-id flag cleared' echo "$out"
check "S: perf script and report read the output without a word on stderr" \
	test -z "$("$PERF" script -i "$W/s.data" 2>&1 >/dev/null; "$PERF" report -i "$W/s.data" --stdio 2>&1 >/dev/null)"
check "S: every host mapping kept ($(mmap2_of "$SF") in the fixture)" \
	test "$(mmap2_of "$W/s.data")" -eq $(($(mmap2_of "$SF") + $(mmap2_of "$W/f.data")))

# --- P: a real host.data of perf 6.12 (152-byte attrs: tests/fixtures/host-perf612/README.md)
P=$W/p
PF=$VT_SOURCE_ROOT/tests/fixtures/host-perf612/host.data
cp -r "$VT_SOURCE_ROOT/tests/fixtures/coarse-clock-fork" "$P"
out=$("$TRACE_COLLECTOR" merge "$P" --host-data "$PF" -o "$W/p.data" 2>&1)
check "P: merge of perf 6.12's host recording exits 0 ($(grep -m1 -i 'attr' <<<"$out"))" test -s "$W/p.data"
check_out "P: every host sample in, every one written" '^  host: +recording merged, 92 samples in, 92 written' echo "$out"
check "P: perf reads the output without a word on stderr" \
	test -z "$("$PERF" script -i "$W/p.data" 2>&1 >/dev/null; "$PERF" report -i "$W/p.data" --stdio 2>&1 >/dev/null)"
out=$("$TRACE_COLLECTOR" merge "$P" --host-data "$VT_SOURCE_ROOT/tests/fuzz/perf-reader/perf612-config3" -o "$W/p3.data" 2>&1)
check_out "P: an attr that sets a field past perf 6.1's (config3) is refused, named" 'attr 0 sets a field past perf 6.1.s 128 bytes \(byte 128' echo "$out"
check "P: its 92 host sched_switch in the output" \
	test "$("$PERF" script -i "$W/p.data" -F event 2>/dev/null | grep -c '^ *sched:sched_switch:')" -eq 92

# --- E: damaged guest: a page lost in transport, a scribbled page, a broken format file
E=$W/e
check "E: capture" capture "$E" 13 3 1 -e sched:sched_switch
printf 'name: sched_wakeup\nID: 99999999\n' > "$E/guest/events/sched/sched_wakeup/format"
printf '\xff\xff\xff\x7f' | dd of="$E/cpu0.spool" bs=1 seek=$((3 + 4096 + 8)) conv=notrunc status=none
out=$("$TRACE_COLLECTOR" merge "$E" -o "$W/e.data" 2>&1)
check "E: merge of damaged guest data succeeds" test -s "$W/e.data"
check_out "E: transport loss reported" 'pages missing in transport.*: 1' echo "$out"
check_out "E: damaged page reported, with its reason" 'damaged pages dropped: bad ring page header: 1' echo "$out"
check_out "E: broken format reported" 'event formats dropped: 1' echo "$out"
# perf rightly warns about the lost share; nothing else may appear.
check "E: only the lost-samples warning" test -z "$("$PERF" script -i "$W/e.data" 2>&1 >/dev/null | grep -v -e '^Warning:$' -e '^Processed [0-9]* samples and lost [0-9.]*%!$')"
check_out "E: LOST_SAMPLES in the file" 'LOST_SAMPLES events' "$PERF" report -i "$W/e.data" --stats
finish
