#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# e2e_start's one reboot (tests/e2e/lib.sh): a start that fails with the daemon's words for QEMU
# 7.2's multi-threaded TCG hang boots the guest again and is tried once more. The hang cannot be
# made on purpose, so the first start here is a stand-in that fails with those words; the reboot,
# the second start, the session and the guest's power-off are the real ones. A second failure
# with the same words is not retried.
. "$VT_SOURCE_ROOT/tests/e2e/lib.sh"
e2e_init start-retry
check "boot: guest ready, agent waiting" e2e_boot
hang() { echo "start failed: the agent (stand-in) is stuck. This VM runs under TCG: QEMU before 8.1 (Debian 12 has 7.2) can hang (a stand-in)" >&2; return 1; }
tc() { # the first start fails as the hang does; every other command is the real one
	if [ "$1" = start ] && [ ! -e "$T/hung" ]; then : >"$T/hung"; hang; return 1; fi
	"$TRACE_COLLECTOR" "$@"
}
first=$BOOT_PID
out=$(e2e_start -e 'sched:sched_switch' --no-host 2>"$T/start.log")
st=$?
cat "$T/start.log"
check "start succeeds on the second try" test $st -eq 0 -a -d "$out"
check_out "the log says the guest was booted again" "booted again and start tried once more" cat "$T/start.log"
check "the guest is a new boot" test "$(e2e_boot_pid)" != "$first"
check "the first boot is gone" bash -c '! kill -0 "$1" 2>/dev/null || grep -q "^State:.Z" /proc/"$1"/status' _ "$first"
check "workload in the new guest" e2e_run 50
e2e_stop_end "$T/out.data"
check "its 50 markers, once each, in order" e2e_markers "$T/out.data" 50
# once per test and VM: the same words again fail the test's start
rm -f "$T/hung"
check "boot again" e2e_boot
tc() { if [ "$1" = start ]; then hang; return 1; fi; "$TRACE_COLLECTOR" "$@"; }
out=$(e2e_start -e 'sched:sched_switch' --no-host 2>&1)
check "a second hang in the same test is not retried" test $? -ne 0
check "... and not booted again" bash -c '! grep -q "booted again" <<<"$1"' _ "$out"
check "guest powers off" e2e_end
finish
