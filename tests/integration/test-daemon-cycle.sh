# SPDX-License-Identifier: GPL-2.0-only
# FIFO transport: start -> status -> second start refused -> stop, with stale bytes left
# in the FIFOs before start; markers and metadata checked in the session dir.
. "$(dirname "$0")/daemon-lib.sh"

mkfifos 2
fake_guest --dir "$VMDIR" --cpus 2 --pages 100 --stale
out=$(start --no-host --clock ptp 2>&1); rc=$?
check "start succeeds ($out)" test $rc -eq 0
S=$(tail -n 1 <<<"$out")
check "start prints the session dir" test -f "$S/session.ini"
check "session dir is owner-only" test "$(stat -c %a "$S")" = 700
check "session.ini state=tracing" test "$(ini "$S" state)" = tracing
check "session.ini clock_method=ptp" test "$(ini "$S" clock_method)" = ptp
check "session.ini guest_clock=mono" test "$(ini "$S" guest_clock)" = mono
check "session.ini ncpus=2 page_size=4096" test "$(ini "$S" ncpus)/$(ini "$S" page_size)" = 2/4096
check "control socket mode 0600" test "$(stat -c %a "$RUN/$VM.sock")" = 600
check "clock probes at start stored" test "$(wc -l <"$S/clock.samples")" -ge 8
check "metadata stored under guest/" test -f "$S/guest/events/fake/tick/format"
check "guest kallsyms stored" grep -q _stext "$S/guest/kallsyms"
wait_for 10 status_has 'cpu1 *100 '
check_out "status shows cpu0 with 100 pages" '^cpu0 +100 ' status
check_out "status shows the missed-events page" '^cpu0 +100 +[0-9]+ +[0-9.]+ +1 +7 ' status
check_out "status names the session" "session: $S" status
check_out "status: a total row (200 pages over both CPUs)" '^total +200 ' status
check_out "status: the clock's state" '^clock: ' status
status --watch=0.2 >"$T/watch.out" 2>&1 &
watch_pid=$!
wait_for 5 bash -c "test \$(grep -c '^(every 0.2 s; Ctrl-C to quit)' '$T/watch.out') -ge 3"
check "status --watch refreshes ($(grep -c '^(every' "$T/watch.out") times)" test "$(grep -c '^(every 0.2 s' "$T/watch.out")" -ge 3
check_out "status --watch=0 refused, naming the range" "option --watch: it takes seconds, 0.1..3600" status --watch=0
check_out "second start refused, naming the session" "already running.*$S" start --no-host
start --no-host >/dev/null 2>&1; rc=$?
check "second start fails (exit $rc)" test $rc -eq 1
pid=$(daemon_pid)
sid=$(ini "$S" session_id)
out=$(stop 2>&1); rc=$?
check "stop succeeds" test $rc -eq 0
wait_for 5 bash -c "! kill -0 $watch_pid 2>/dev/null"
check "status --watch ends with the session" bash -c "! kill -0 $watch_pid 2>/dev/null && wait $watch_pid 2>/dev/null; true"
check_out "status --watch says the session ended" "the session ended .*'trace-collector stop' writes its perf.data" cat "$T/watch.out"
kill "$watch_pid" 2>/dev/null
grep -Eq '^cpu0: 100 pages .*guest sent 100, 0 lost in transport' "$S/stop-summary.txt" &&
	ok "stop-summary.txt: cpu0 pages, no transport loss" || fail "stop-summary.txt: $(cat "$S/stop-summary.txt")"
grep -q '^losses: ring overrun 14 events.*; by CPU: cpu0 7 events, cpu1 7 events$' <<<"$out" &&
	ok "stop summary: ring losses by kind, and by CPU on the same line" || fail "losses line: $out"
! grep -Eq '^cpu[0-9]+: ' <<<"$out" && ok "stop summary: no per-CPU lines (they are in stop-summary.txt)" || fail "per-CPU lines: $out"
grep -q '^merged: 0 host samples, [1-9][0-9]* guest samples of 1 event type ' <<<"$out" &&
	ok "stop summary: what the merge wrote, one line" || fail "merged line: $out"
check_out "stop-summary.txt: the merge's per-event-type count" '^ +guest_fake:tick [1-9][0-9]*$' cat "$S/stop-summary.txt"
check "stop summary: the details' place named" grep -qF "details: $S/stop-summary.txt" <<<"$out"
grep -q "^output: $T/out.data" <<<"$out" && ok "stop merged into $T/out.data" || fail "merge output line: $out"
check "session.ini state=merged" test "$(ini "$S" state)" = merged
check "session.ini opt_compress=1 (start's default)" test "$(ini "$S" opt_compress)" = 1
check_out "the output is zstd-compressed (the default)" 'compressed : Zstd, level = 1,' perf report -i "$T/out.data" --header-only
n=$(perf script -i "$T/out.data" -F event 2>"$T/perf.err" | grep -c 'guest_fake:tick')
exp=$(python3 - "$S" <<'PYEOF'
import struct, sys
# Independent count: events per ring page = commit size / 20 (fake:tick records).
tot = 0
for c in (0, 1):
    d = open(f"{sys.argv[1]}/cpu{c}.spool", "rb").read()
    for off in range(0, len(d) - 4095):
        if d[off:off+8] == b"VIRTMARK" and d[off+8:off+16] == b"\xff" * 8:
            break
    off += 4096
    while off + 4096 <= len(d):
        if d[off:off+8] == b"VIRTMARK":
            off += 4096
            continue
        commit = struct.unpack_from("<Q", d, off + 8)[0]
        tot += (commit & ((1 << 27) - 1)) // 20
        off += 4096
print(tot)
PYEOF
)
check "perf script shows every guest event ($n of $exp)" test "$n" -eq "$exp"
check "perf printed no warnings" bash -c "! grep -Eiv 'lost' '$T/perf.err' | grep -q ."
check "stopped_mono_ns recorded" test "$(ini "$S" stopped_mono_ns)" -gt "$(ini "$S" started_mono_ns)"
check "clock probes at stop stored" test "$(wc -l <"$S/clock.samples")" -ge 16
check "agent-stats.ini from STOPPED" grep -q '^cpu1.pages_sent=100$' "$S/agent-stats.ini"
for c in 0 1; do
	r=$(spool_check "$S/cpu$c.spool" "$sid")
	grep -q 'pages=100 end=1' <<<"$r" && ok "cpu$c.spool: begin marker, 100 pages, end marker ($r)" || fail "cpu$c.spool: $r"
done
r=$(spool_check "$S/cpu0.spool" "$sid")
check "stale FIFO bytes from before start were drained, not spooled (junk before begin: 1000 + old marker)" test "${r##*stale=}" -eq $((1000 + 4096))
check "daemon exited after stop" wait_for 5 bash -c "! kill -0 $pid"
check "control socket removed" test ! -e "$RUN/$VM.sock"

# A second session after the first: works, new dir, the agent is reused; --no-compress.
out=$(start --no-host --clock ptp --no-compress 2>&1); rc=$?
check "a new start after stop works" test $rc -eq 0
S2=$(tail -n 1 <<<"$out")
check "new session dir" test "$S2" != "$S" -a -f "$S2/session.ini"
out=$(stop -v 2>&1)
grep -Eq '^cpu1: 100 pages .*0 lost in transport' <<<"$out" && ok "second session complete (stop -v: per CPU)" || fail "second session: $out"
grep -Eq '^ +guest_fake:tick [1-9][0-9]*$' <<<"$out" && ok "stop -v: the per-event-type counts" || fail "stop -v: $out"
check "start --no-compress: session.ini opt_compress=0" test "$(ini "$S2" opt_compress)" = 0
check "start --no-compress: a plain output" bash -c '! perf report -i "$1" --stats 2>/dev/null | grep -q COMPRESSED' _ "$T/out.data"
check "start --no-compress: perf reads it without a warning" test -z "$(perf script -i "$T/out.data" 2>&1 >/dev/null)"
finish
