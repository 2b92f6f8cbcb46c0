# SPDX-License-Identifier: GPL-2.0-only
# e2e: a live migration on one host while tracing (issue 46). The guest writes N numbered
# markers over ~N*US/1e6 s; a few seconds in, it is migrated by QMP to a second QEMU started
# with the same arguments (the VM's ports from setup) and -incoming; the source then quits, as
# libvirt's does. The session follows the guest: every marker once and in order in one merged
# file, stop exits 0, the migration named in the summary with both QEMU pids, the destination's
# vCPU threads carry the guest samples after it.
#   test-migrate.sh [pipe] [N] [US]
. "$(dirname "$0")/lib.sh"

transport=${1:-pipe} n=${2:-3000} us=${3:-5000}
e2e_init migrate
out=$T/out.data
Q1=$T/src.qmp Q2=$T/dst.qmp MIG=$T/mig.sock
LOG2=$T/console-dst.log CIN2=$T/console-dst.in
DST_PID=
trap '[ -z "$DST_PID" ] || kill "$DST_PID" 2>/dev/null; e2e_cleanup' EXIT
QMP() { python3 "$E2E_DIR/qmp.py" "$@"; }
within() { # SECONDS COMMAND...: COMMAND succeeds within SECONDS
	local deadline=$((SECONDS + $1))
	shift
	until "$@" 2>/dev/null; do [ $SECONDS -lt $deadline ] || return 1; sleep 0.2; done
}

check "boot the source QEMU" e2e_boot --qmp "$Q1" --transport "$transport"
SRC_BOOT=$BOOT_PID
src_q=$(e2e_qemu_pid)
check_out "start" "^$VM/sessions/[0-9TZ]+\$" e2e_start -e 'sched,irq,timer' --buffer-kb 512
check "the guest writes $n markers, $us us apart" e2e_say "paced $n $us"
sleep 3
"$VT_E2E_BOOT" --dir "$VM" --log "$LOG2" --script "$E2E_DIR/guest-cmd.sh" --console-in "$CIN2" \
	--timeout 200 --qmp "$Q2" --incoming "unix:$MIG" --transport "$transport" >"$T/dst-boot.out" 2>&1 &
DST_PID=$!
dst_up() { QMP "$Q2" query-status | grep -q inmigrate; }
check "the destination QEMU waits for the migration" within 60 dst_up
dst_q=$(pgrep -f -- "[ ]-incoming unix:$MIG" | head -n 1)
mig=$(QMP "$Q1" migrate "unix:$MIG" 120); rc=$?
echo "migration: $mig"
check "QMP migrate completed" test $rc -eq 0
downtime=$(sed -n 's/.*"downtime": \([0-9]*\).*/\1/p' <<<"$mig")
QMP "$Q1" quit >/dev/null
wait "$SRC_BOOT" 2>/dev/null # boot says the source never reached "done": it left
# From here on the guest is the destination's: its console, its boot.
LOG=$LOG2 CIN=$CIN2 BOOT_PID=$DST_PID DST_PID=
check "the guest finished its markers on the destination" e2e_wait "^vt-e2e: paced done $n status 0" 120
st=$(e2e_status 2>&1)
echo "$st"
check_out "status: still tracing after the migration" '^state: +tracing' echo "$st"
sum=$(e2e_stop -v -o "$out" 2>&1); rc=$?
echo "$sum"
check "stop exits 0" test $rc -eq 0
check_out "summary: the migration, both QEMU pids" "migrated: .*QEMU $src_q -> $dst_q" echo "$sum"
check "all $n markers present once, in order" e2e_markers "$out" "$n"
check "perf script/report: no warnings" e2e_no_warnings "$out" "$sum"
echo "QEMU's downtime: ${downtime:-?} ms"
check "guest powers off cleanly" e2e_end
finish
