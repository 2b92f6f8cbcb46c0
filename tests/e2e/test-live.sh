# SPDX-License-Identifier: GPL-2.0-only
# e2e: start --live-merge on the real guest (tests/e2e/lib.sh). A flood, then numbered markers:
# the follower ('merge --follow') writes the output while the session traces (it grows before
# stop); a snapshot is cut from it (every marker before it, host events too, while tracing goes
# on); stop hands out its file: every marker once and in order, host and guest interleaved,
# perf reads it without a warning, and it holds the same events as an offline merge of the same
# session dir. Then a session whose follower is killed mid-way: stop merges offline, complete.
# Then the live view: start -o - | perf script -i - shows guest markers before stop, and all
# of them once the stream ends at stop.
. "$(dirname "$0")/lib.sh"

e2e_init live
out=$T/out.data

# Bytes of the live output so far (a perf.data file, or the data file of a perf.data dir).
live_size() { stat -c %s "$1/live.data/data" 2>/dev/null || stat -c %s "$1/live.data" 2>/dev/null || echo 0; }
# timed VAR WHAT CMD...: CMD's output into VAR (and printed), its exit status checked, its wall time.
timed() {
	local var=$1 what=$2 t0 t1 o st
	shift 2
	t0=$(date +%s.%N)
	o=$("$@" 2>&1)
	st=$?
	t1=$(date +%s.%N)
	printf -v "$var" '%s' "$o"
	check "$what exits 0" test "$st" -eq 0
	echo "$o"
	awk -v a="$t0" -v b="$t1" -v w="$what" 'BEGIN { printf "%s took %.2f s (live merge)\n", w, b - a }'
}
# "event count" lines of a perf.data, sorted (guest and host events by name).
# (perf pads the names to the file's longest event name: the live merge's file has one more, its
# guest_virtio_trace:migration, reserved for a migration while it follows)
event_counts() { "$PERF" script -i "$1" -F event 2>/dev/null | sed 's/^ *//; s/[: ]*$//' | sort | uniq -c; }

check "boot: guest ready, agent waiting" e2e_boot
sess=$(e2e_start -e 'sched:sched_switch' --live-merge)
check_out "start --live-merge" "^$VM/sessions/" echo "$sess"
check "guest: a flood in the background" e2e_say bgflood
check "guest: flood started" e2e_wait '^vt-e2e: bgflood started' 30
grown=0
for _ in $(seq 100); do
	[ "$(live_size "$sess")" -gt $((2 << 20)) ] && { grown=1; break; }
	sleep 0.2
done
check "the live output grows while tracing (over 2 MiB before stop)" test "$grown" = 1
check_out "status shows the live merge" '^live merge: following \(pid [0-9]+\), [0-9.]+ MB written, host perf acked [1-9]' e2e_status
check "guest: flood stopped" e2e_say bgstop
check "guest: 300 numbered markers" e2e_run 300
# A snapshot while it traces: cut from the live output at the request (host events too). The
# follower converts guest times once its probes span 5 s: the session is at least 7 s old.
started=$(sed -n 's/^started_realtime_ns=//p' "$sess/session.ini")
while [ $(($(date +%s) - ${started:-0} / 1000000000)) -lt 7 ]; do sleep 0.5; done
# OUT on another file system when there is one (/dev/shm): the snapshot is copied there, not renamed.
sd=$T
[ -d /dev/shm ] && [ "$(stat -f -c %T /dev/shm)" != "$(stat -f -c %T "$T")" ] && sd=$(mktemp -d /dev/shm/vt-e2e-live.XXXXXX)
timed snap snapshot tc snapshot --name "$VM_NAME" --run-dir "$RUN" -o "$sd/snap.data"
check_out "snapshot: cut from the live merge" '^snapshot: .*cut from the live merge' echo "$snap"
check_out "collector.log: the follower wrote it" 'snapshot 1: .*snapshot-1.data, cut from the live merge' cat "$sess/collector.log"
check "snapshot: all 300 markers once, in order" e2e_markers "$sd/snap.data" 300
check "snapshot: host and guest interleaved (the host's events came with the live merge)" e2e_interleaved "$sd/snap.data"
check "snapshot: perf script/report: no warnings" e2e_no_warnings "$sd/snap.data"
check_out "snapshot: zstd-compressed, as the live output" 'compressed : Zstd' "$PERF" report -i "$sd/snap.data" --header-only
[ "$sd" != "$T" ] && rm -rf "$sd"
check "snapshot: nothing left in the session dir" bash -c '! ls -d "$1"/snapshot-* 2>/dev/null' _ "$sess"
check_out "the session still traces after the snapshot" '^state: tracing' e2e_status
timed sum stop e2e_stop -v -o "$out"
check_out "stop hands out the live merge" '^  live: +merged while tracing' echo "$sum"
check_out "collector.log: the follower finished" 'live merge: done' cat "$sess/collector.log"
check "all 300 markers once, in order" e2e_markers "$out" 300
check "host and guest interleaved" e2e_interleaved "$out"
check "perf script/report: no warnings" e2e_no_warnings "$out" "$sum"
check_out "the output is zstd-compressed (the default, written while tracing)" 'compressed : Zstd' "$PERF" report -i "$out" --header-only
check "no transport loss" bash -c 'grep -q "transport 0 pages" <<<"$1"' _ "$sum"
# the host queue, sorted at each horizon the daemon gives (host.c queue_release), kept time order
check "the live merge wrote host records in time order (its losses list, none out of order)" \
	bash -c 'grep -q "^  losses:" <<<"$1" && ! grep -q "host records out of order" <<<"$1"' _ "$sum"
# stop's stalls line came from the live merge (no pass over the output at stop): the same as
# 'report' finds reading the file
live_stalls=$(sed -n 's/^stalls: *//p' <<<"$sum")
file_stalls=$(tc report "$out" | sed -n 's/^stalls: *//p')
echo "stalls: live '$live_stalls', file '$file_stalls'"
check "the live merge made stop's stalls line" test -s "$sess/live-stalls.txt"
check "stop's stalls line is what report reads in the file" test -n "$live_stalls" -a "$live_stalls" = "$file_stalls"
off=$T/offline.data
check "offline merge of the same session" tc merge "$sess" -o "$off"
live_counts=$(event_counts "$out")
off_counts=$(event_counts "$off")
echo "live:"; echo "$live_counts"; echo "offline:"; echo "$off_counts"
check "the live merge holds the same events as the offline merge" test "$live_counts" = "$off_counts"

# The follower killed mid-session: stop merges offline, nothing lost.
sess2=$(e2e_start -e 'sched:sched_switch' --live-merge)
check_out "start --live-merge (2)" "^$VM/sessions/" echo "$sess2"
follower=
for _ in $(seq 100); do
	follower=$(pgrep -f "merge --follow $sess2" | head -n 1)
	[ -n "$follower" ] && break
	sleep 0.1
done
check "the follower runs" test -n "$follower"
kill -9 "$follower" 2>/dev/null
check "guest: 200 numbered markers" e2e_run 200
sum2=$(e2e_stop -v -o "$T/out2.data" 2>&1)
check "stop exits 0 after the follower died" test $? -eq 0
echo "$sum2"
check "stop merged offline (no live line)" bash -c '! grep -q "^  live:" <<<"$1"' _ "$sum2"
check_out "collector.log says the follower failed" 'live merge: the follower failed' cat "$sess2/collector.log"
check "all 200 markers once, in order" e2e_markers "$T/out2.data" 200
# The live view: start -o - streams pipe-mode perf.data; perf script reads it as it comes.
view=$T/view.txt
( tc start --name "$VM_NAME" --dir "$VM" --run-dir "$RUN" -e 'sched:sched_switch' -o - 2>"$T/view.err" |
	"$PERF" script -i - >"$view" 2>"$T/view.perr"; echo "exit ${PIPESTATUS[*]}" >"$T/view.rc" ) &
viewer=$!
for _ in $(seq 300); do e2e_status 2>/dev/null | grep -q '^state: tracing' && break; sleep 0.1; done
check_out "start -o -: tracing, in the foreground" '^state: tracing' e2e_status
check "guest: 200 numbered markers" e2e_run 200
seen=0
for _ in $(seq 200); do
	seen=$(grep -c 'vt-e2e line' "$view" 2>/dev/null)
	[ "${seen:-0}" -gt 0 ] && break
	sleep 0.1
done
check "perf script shows guest markers while tracing ($seen before stop)" test "${seen:-0}" -gt 0
sum3=$(e2e_stop -o "$T/out3.data" 2>&1)
check "stop exits 0" test $? -eq 0
for _ in $(seq 300); do [ -f "$T/view.rc" ] && break; sleep 0.1; done
check_out "the stream ends at stop: start and perf script exit 0" '^exit 0 0$' cat "$T/view.rc"
check "perf script read the stream without a warning" bash -c '! test -s "$1" || { head -c 600 "$1" >&2; false; }' _ "$T/view.perr"
check "the stream holds all 200 markers" test "$(grep -c 'vt-e2e line' "$view")" -eq 200
check "the stream holds host events too" grep -q ' sched:sched_switch:' "$view"
check "stop still writes its file (offline)" e2e_markers "$T/out3.data" 200
check "guest powers off cleanly" e2e_end
finish
