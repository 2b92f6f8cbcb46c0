# SPDX-License-Identifier: GPL-2.0-only
# e2e: the flight recorder and snapshots on the real guest (tests/e2e/lib.sh). First a snapshot
# of an ordinary session (guest only, said so; stop after it complete). Then a session with
# --flight-recorder 4M: numbered markers, then a flood of markers until the daemon has dropped
# 16 MiB; the spools' disk use stays within the bound all along; a snapshot during the flood is
# a valid perf.data with guest and host events while tracing goes on; after the flood, 50 newest
# markers; stop: the oldest markers are gone, the newest all there, the drop counted as such
# (not as transport loss), perf reads it without a warning.
. "$(dirname "$0")/lib.sh"

e2e_init flight
out=$T/out.data
snap=$T/snap.data
FR=$((4 << 20))

# merged_ok WHAT SUMMARY FILE: the flight recorder's drop counted as such, perf reads FILE
# without a warning, host and guest events interleaved.
merged_ok() {
	check_out "$1: the drop counted as the flight recorder's" 'oldest pages dropped by the flight recorder .*: [1-9]' echo "$2"
	check "$1: perf script/report without a warning" e2e_no_warnings "$3" "$2"
	check "$1: host and guest events interleaved (host perf's ring dump)" e2e_interleaved "$3"
}

# pages_accounted SUMMARY SESSION: each CPU's ring pages as the daemon counted them arriving (the
# stop summary's "cpuN: X pages") are the merge's read, damaged and dropped by the flight
# recorder (merge.ini), to the page: a flush marker page in the hole is not a ring page.
pages_accounted() {
	local c n r b d st=0
	for c in 0 1; do
		n=$(sed -n "s/^cpu$c: \([0-9]*\) pages .*/\1/p" <<<"$1")
		r=$(sed -n "s/^cpu$c.pages_read=//p" "$2/merge.ini")
		b=$(sed -n "s/^cpu$c.pages_bad=//p" "$2/merge.ini")
		d=$(sed -n "s/^cpu$c.pages_dropped=//p" "$2/merge.ini")
		echo "cpu$c: ${n:-?} pages spooled; merge: ${r:-?} read, ${b:-?} damaged, ${d:-?} dropped by the flight recorder" >&2
		[ -n "$n" ] && [ -n "$r" ] && [ -n "$b" ] && [ -n "$d" ] && [ "$n" -eq $((r + b + d)) ] || st=1
	done
	return $st
}

# Disk use (allocated blocks) of the session's spools, in bytes.
spool_du() { du -B1 -c "$1"/cpu*.spool | tail -n 1 | cut -f1; }
dropped_mib() { sed -n 's/^flight recorder: .* kept, \([0-9.]*\) MiB dropped so far/\1/p' <<<"$1"; }

check "boot: guest ready, agent waiting" e2e_boot
# A snapshot of an ordinary session merged from its spools (--no-live-merge; with the live
# merge it is cut from the live output: e2e live): the guest's events so far; the host
# recording is written at stop only, and the snapshot says so. The periodic flush is off: the
# 100 markers (a few KiB, far from half a ring) reach the snapshot only because it asks the
# agent to FLUSH.
sess=$(e2e_start -e 'sched:sched_switch' --flush-interval 0 --no-live-merge)
check_out "start (no flight recorder, no periodic flush, no live merge)" "^$VM/sessions/" echo "$sess"
check "guest: 100 numbered markers" e2e_run 100
psum=$(tc snapshot --name "$VM_NAME" --run-dir "$RUN" -o "$T/plain-snap.data" 2>&1)
check "snapshot of an ordinary session exits 0" test $? -eq 0
echo "$psum"
check_out "snapshot: every CPU answered FLUSH (collector.log)" 'snapshot: every CPU flushed its ring [0-9]+ ms after the request' cat "$sess/collector.log"
check_out "snapshot: says the host recording comes at stop only" '^host: none \(without --flight-recorder' echo "$psum"
check "snapshot: all 100 markers, in order" e2e_markers "$T/plain-snap.data" 100
check "snapshot: perf reads it without a warning" e2e_no_warnings "$T/plain-snap.data" "$psum"
sum=$(e2e_stop -v -o "$T/plain.data" 2>&1) # -v: the per-CPU lines pages_accounted reads
check "stop after the snapshot exits 0" test $? -eq 0
check "stop: all 100 markers" e2e_markers "$T/plain.data" 100
check "stop: host and guest interleaved" e2e_interleaved "$T/plain.data"
check "stop: every CPU's ring pages accounted for" pages_accounted "$sum" "$sess"

sess=$(e2e_start -e 'sched:sched_switch' --buffer-kb 2048 --flight-recorder 4M)
check_out "start --flight-recorder 4M" "^$VM/sessions/" echo "$sess"
check_out "host perf records into its overwritable ring" '--overwrite --switch-output -m 4096K' \
	tr '\0' ' ' <"/proc/$(pgrep -f "perf record .*$sess/host.data" | head -n 1)/cmdline"
check "guest: 400 numbered markers (the oldest data)" e2e_run 400
e2e_say bgflood
check "flood started" e2e_wait '^vt-e2e: bgflood started' 30
# A first snapshot early in the flood: its flush marker pages fall into the hole later on.
sleep 1
check "first snapshot while the guest floods exits 0" tc snapshot --name "$VM_NAME" --run-dir "$RUN" -o "$T/snap0.data"
max=0 got=0 st=
for i in $(seq 1 240); do
	st=$(e2e_status)
	du=$(spool_du "$sess")
	[ "$du" -gt "$max" ] && max=$du
	got=$(dropped_mib "$st")
	[ "${got%.*}" -ge 16 ] 2>/dev/null && break
	sleep 0.5
done
echo "$st"
check "the flight recorder dropped ${got:-0} MiB of the oldest data (>= 16)" test "${got%.*}" -ge 16
# Per CPU: the window, one 1 MiB block (SPOOL_BUF) in memory's way to the disk, the partial tail, the begin page.
bound=$((2 * (FR + (2 << 20) + 4096)))
check "spools on disk stayed within the bound while flooding: max $max bytes (<= $bound)" test "$max" -le "$bound"
snapsum=$(tc snapshot --name "$VM_NAME" --run-dir "$RUN" -o "$snap" 2>&1)
check "snapshot exits 0 while the guest floods" test $? -eq 0
echo "$snapsum"
check_out "snapshot: says tracing goes on" '^snapshot: .* \(tracing goes on\)' echo "$snapsum"
check "snapshot: no spool without an end marker counted as a loss" bash -c '! grep -q "without an end marker" <<<"$1"' _ "$snapsum"
merged_ok snapshot "$snapsum" "$snap"
check "snapshot: guest flood markers" test "$("$PERF" script -i "$snap" -F trace 2>/dev/null | grep -c 'vt-e2e bg ')" -gt 100
check_out "the session still traces after the snapshot" '^state: tracing' e2e_status
check "snapshot dir removed" bash -c '! ls -d "$1"/snapshot-* 2>/dev/null' _ "$sess"
e2e_say bgstop
check "flood stopped" e2e_wait '^vt-e2e: bgflood stopped' 30
e2e_say "slow 50 2000"
check "guest: 50 newest markers" e2e_wait '^vt-e2e: slow done 50 status 0' 60
sum=$(e2e_stop -v -o "$out" 2>&1)
check "stop exits 0" test $? -eq 0
echo "$sum"
check_out "stop summary: per CPU, the oldest MiB dropped" '^cpu[01]: .*flight recorder: the oldest [0-9.]+ MiB dropped' echo "$sum"
check "merge summary: no page counted missing in transport" bash -c '! grep -q "pages missing in transport" <<<"$1"' _ "$sum"
check_out "the first snapshot's flush marker pages were freed and counted (cpu0.fr)" '^flush_pages=[1-9]' cat "$sess/cpu0.fr"
check "stop: every CPU's ring pages accounted for (the flush markers freed are not among the dropped)" \
	pages_accounted "$sum" "$sess"
merged_ok stop "$sum" "$out"
newest=$("$PERF" script -i "$out" -F trace 2>/dev/null | grep -c 'vt-e2e slow ')
oldest=$("$PERF" script -i "$out" -F trace 2>/dev/null | grep -c 'vt-e2e line ')
check "the 50 newest markers all kept: $newest" test "$newest" -eq 50
check "the oldest markers dropped: $oldest of 400 kept (< 400)" test "$oldest" -lt 400

# A daemon SIGKILLed in a flight-recorder session: merge SESSION_DIR recovers the window and the
# host perf's last ring dump (perf dumps it when the daemon dies: PDEATHSIG SIGINT).
sess=$(e2e_start -e 'sched:sched_switch' --buffer-kb 2048 --flight-recorder 4M --probe-interval 0.3)
check_out "second session: start --flight-recorder 4M" "^$VM/sessions/" echo "$sess"
e2e_say bgflood
check "flood started again" e2e_wait '^vt-e2e: bgflood started' 30
for i in $(seq 1 120); do
	got=$(dropped_mib "$(e2e_status)")
	[ "${got%.*}" -ge 8 ] 2>/dev/null && break
	sleep 0.5
done
sleep 1 # periodic probes: the x86-tsc guest clock's rate needs probes 0.1 s apart or more
dpid=$(head -n 1 "$RUN/$VM_NAME.pid")
check "daemon SIGKILLed (pid $dpid) after ${got:-0} MiB dropped" kill -9 "$dpid"
for _ in $(seq 50); do kill -0 "$dpid" 2>/dev/null || break; sleep 0.1; done
for _ in $(seq 50); do ls "$sess"/host.data.* >/dev/null 2>&1 && ! pgrep -f "perf record .*$sess" >/dev/null && break; sleep 0.2; done
ksum=$(tc merge "$sess" -o "$T/killed.data" 2>&1)
check "merge SESSION_DIR of the killed session exits 0" test $? -eq 0
echo "$ksum"
merged_ok "merge of the killed session (perf's dump when the daemon died)" "$ksum" "$T/killed.data"
# The flood ends before the poweroff: the agent's exit disables the events, a patch of the
# guest's code that QEMU 7.2's multi-threaded TCG can hang on under load (daemon.c TCG_PATCH_HANG).
e2e_say bgstop
check "flood stopped again" e2e_wait '^vt-e2e: bgflood stopped' 30
check "guest powers off cleanly" e2e_end
finish
