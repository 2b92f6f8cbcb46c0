# SPDX-License-Identifier: GPL-2.0-only
# Socket transport (QEMU -chardev socket,server=on,wait=off): a full cycle, then QEMU
# going away mid-session (finalized, shortfall stated) and coming back (reconnect).
. "$(dirname "$0")/daemon-lib.sh"

fake_guest --dir "$VMDIR" --cpus 2 --pages 60 --socket
out=$(start --no-host 2>&1); rc=$?
check "start over sockets succeeds ($out)" test $rc -eq 0
S=$(tail -n 1 <<<"$out")
check "auto clock picks ptp without kvm debugfs for this VM" test "$(ini "$S" clock_method)" = ptp
check "qemu_pid found from the socket peer" test "$(ini "$S" qemu_pid)" = "$FG_PID"
wait_for 10 status_has 'cpu1 *60 '
check_out "status over sockets" '^cpu1 +60 ' status
sid=$(ini "$S" session_id)
out=$(stop -v 2>&1)
grep -Eq '^cpu1: 60 pages .*guest sent 60, 0 lost in transport' <<<"$out" && ok "socket cycle summary (stop -v)" || fail "socket summary: $out"
r=$(spool_check "$S/cpu0.spool" "$sid")
grep -q 'pages=60 end=1' <<<"$r" && ok "cpu0.spool over a socket ($r)" || fail "cpu0.spool: $r"

# QEMU gone: the guest side disappears while tracing.
out=$(start --no-host --heartbeat 1 2>&1); rc=$?
check "second session starts ($out)" test $rc -eq 0
S=$(tail -n 1 <<<"$out")
wait_for 10 status_has 'cpu1 *60 '
kill -9 "$FG_PID"; wait "$FG_PID" 2>/dev/null; FG_PID=
check "daemon notices QEMU gone and finalizes" wait_for 15 status_has 'state: stopped — QEMU gone'
check "session.ini state=stopped after QEMU gone" test "$(ini "$S" state)" = stopped
check_out "daemon still answers status" '^cpu0 +60 ' status
# QEMU back: the daemon connects again and keeps reading.
fake_guest --dir "$VMDIR" --cpus 2 --pages 60 --socket
check "daemon reconnects to the new QEMU" wait_for 10 grep -q 'agent-ctl-path reconnected' "$S/collector.log"
out=$(stop 2>&1); rc=$?
check "stop after QEMU gone succeeds" test $rc -eq 0
grep -q '^stopped: QEMU gone' <<<"$out" && ok "summary names the reason" || fail "reason: $out"
grep -Eq '^missing: .*no end marker and no stop report, shortfall unknown: cpu0, cpu1' <<<"$out" &&
	ok "summary states the shortfall" || fail "shortfall: $out"
grep -Eq '^cpu0: 60 pages .*no end marker and no stop report: shortfall unknown' "$S/stop-summary.txt" &&
	ok "stop-summary.txt states it per CPU" || fail "shortfall: $(cat "$S/stop-summary.txt")"
finish
