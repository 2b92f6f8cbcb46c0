#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The merged output compressed by default (PERF_RECORD_COMPRESSED + HEADER_COMPRESSED, as perf
# record -z writes it) and plain with --no-compress: perf 6.1 must read both the same, with
# nothing on stderr. Sessions: the fixture tests/fixtures/coarse-clock-fork (guest ftrace and
# guest perf, no host), and a capture of this host's tracefs beside a host perf record (host and
# guest ftrace). Also: start's choice (session.ini opt_compress=0) followed by merge and
# overridden by -z, and trace-collector report reading both files alike.
. "$(dirname "$0")/lib.sh"

T=/sys/kernel/tracing
[ -x "$PERF" ] || { fail "perf not found at $PERF (install linux-perf)"; finish; exit 1; }
W=$(mktemp -d /tmp/vt-merge-zstd.XXXXXX)
INST=${VT_TEST_INSTANCE_PREFIX:-vt_zstd_test}_$$
I=$T/instances/$INST
cleanup() {
	[ -d "$I" ] && { echo 0 > "$I/tracing_on"; echo > "$I/set_event"; rmdir "$I"; }
	rm -rf "$W"
}
trap cleanup EXIT

data_of() { if [ -d "$1" ]; then echo "$1/data"; else echo "$1"; fi; }
# perf's output of FILE with ARGS into W/NAME.out, its stderr into W/NAME.err
# (perf report's random "# (Tip: ...)" line left out)
run_perf() { local name=$1 file=$2; shift 2; "$PERF" "$@" -i "$file" 2>"$W/$name.err" | grep -v '^# (Tip:' >"$W/$name.out"; }
# Both files (compressed Z, plain P) read with the same perf command: equal, stderr empty.
same_reading() {
	local label=$1 z=$2 p=$3; shift 3
	run_perf z "$z" "$@"; run_perf p "$p" "$@"
	check "$label: perf $* reads the compressed file as the plain one" diff "$W/z.out" "$W/p.out"
	check "$label: perf $* prints nothing on stderr (compressed)" test ! -s "$W/z.err"
	check "$label: perf $* prints nothing on stderr (plain)" test ! -s "$W/p.err"
	check "$label: perf $* printed something" test -s "$W/z.out"
}
has_compressed() { "$PERF" report -i "$1" --stats 2>/dev/null | grep -q 'COMPRESSED events'; }
header_zstd() { "$PERF" report -i "$1" --header-only 2>/dev/null | grep -q "compressed : Zstd, level = $2,"; }

both() { # LABEL SESSION: default and --no-compress merges (same name, two dirs), read alike
	local label=$1 s=$2 z=$W/$1-z/out.data p=$W/$1-p/out.data
	mkdir -p "$W/$1-z" "$W/$1-p"
	"$TRACE_COLLECTOR" merge "$s" -o "$z" >"$W/$label-z.sum" 2>&1
	"$TRACE_COLLECTOR" merge "$s" -o "$p" --no-compress >"$W/$label-p.sum" 2>&1
	check_out "$label: default merge says zstd" 'output: .*, zstd\)' cat "$W/$label-z.sum"
	check "$label: default output has COMPRESSED records" has_compressed "$z"
	check "$label: default output has HEADER_COMPRESSED (zstd, the default level)" header_zstd "$z" 1
	check "$label: --no-compress output has no COMPRESSED record" bash -c "! '$PERF' report -i '$p' --stats 2>/dev/null | grep -q COMPRESSED"
	check "$label: compressed output is smaller ($(du -sb "$(data_of "$z")" | cut -f1) vs $(du -sb "$(data_of "$p")" | cut -f1) bytes)" \
		test "$(stat -c %s "$(data_of "$z")")" -lt "$(stat -c %s "$(data_of "$p")")"
	same_reading "$label" "$z" "$p" script
	same_reading "$label" "$z" "$p" script -F +machine_pid,+vcpu
	same_reading "$label" "$z" "$p" report --stdio
	same_reading "$label" "$z" "$p" report --stdio --sort comm,dso,sym
	(cd "$W/$1-z" && "$TRACE_COLLECTOR" report out.data >"$W/rz.out" 2>&1); (cd "$W/$1-p" && "$TRACE_COLLECTOR" report out.data >"$W/rp.out" 2>&1)
	check "$label: trace-collector report reads both alike" diff "$W/rz.out" "$W/rp.out"
}

# --- the fixture: guest ftrace + guest perf (a perf.data directory), no host
F=$W/fixture
cp -r "$VT_SOURCE_ROOT/tests/fixtures/coarse-clock-fork" "$F"
both fixture "$F"

# --- a capture of this host: guest pages from a tracefs instance, host perf record beside it
if [ -e $T/instances ] || mount -t tracefs nodev $T; then
	C=$W/capture
	mkdir -p "$C"
	if mkdir "$I" && echo mono > "$I/trace_clock" && echo 2048 > "$I/buffer_size_kb" &&
		echo 1 > "$I/events/sched/sched_switch/enable" && echo 1 > "$I/events/sched/sched_wakeup/enable" &&
		"$PERF" record -q -k CLOCK_MONOTONIC -e sched:sched_switch -e sched:sched_wakeup -a -o "$C/host.data" -- \
			sh -c "for i in 1 2 3 4 5; do echo vt-marker-\$i > $I/trace_marker; sleep 0.05; done" >/dev/null 2>&1; then
		echo 0 > "$I/tracing_on"
		VT_QEMU_PID=4242 "$CAPTURE_SESSION" $T "$INST" "$C" 42 0 -1 >/dev/null
		printf 'method=ptp\nsegments=1\nseg0.guest_start=0\nseg0.offset_ns=0\nseg0.slope=1.0\nsamples=3\nerror_bound_ns=1000\n' > "$C/clock.ini"
		both capture "$C"
		# more vCPUs than the host has CPUs: NRCPUS raised to them, the host's CPU_TOPOLOGY
		# padded to match (perf 6.1 reads its per-CPU ids for NRCPUS' count; past a short
		# section it read garbage, gave up on the later features and lost HEADER_COMPRESSED)
		cp -r "$C" "$W/wide"
		n=$(sed -n 's/^ncpus=//p' "$C/session.ini")
		sed -i "s/^ncpus=$n\$/ncpus=$((n + 4))/" "$W/wide/session.ini"
		both wide "$W/wide"
		for f in "$W/wide-z/out.data" "$W/wide-p/out.data"; do
			check_out "wide: perf reads the padded topology ($(basename "$(dirname "$f")"))" \
				"CPU $((n + 3)): Core ID -1, Die ID -1, Socket ID -1" "$PERF" report -i "$f" --header-only -I
		done
	else
		fail "capture: cannot set up the tracefs instance or perf record"
	fi
fi

# --- start --no-compress (session.ini opt_compress=0): merge follows it, -z overrides
echo opt_compress=0 >> "$F/session.ini"
"$TRACE_COLLECTOR" merge "$F" -o "$W/opt0.data" >/dev/null 2>&1
check "opt_compress=0: merge writes plain perf.data" bash -c "! '$PERF' report -i '$W/opt0.data' --stats 2>/dev/null | grep -q COMPRESSED"
"$TRACE_COLLECTOR" merge "$F" -o "$W/opt0z.data" -z >/dev/null 2>&1
check "opt_compress=0: merge -z compresses anyway" has_compressed "$W/opt0z.data"
sed -i 's/^opt_compress=0$/opt_compress=5/' "$F/session.ini"
"$TRACE_COLLECTOR" merge "$F" -o "$W/opt5.data" >/dev/null 2>&1
check "opt_compress=5: merge uses level 5" header_zstd "$W/opt5.data" 5
finish
