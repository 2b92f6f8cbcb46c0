# SPDX-License-Identifier: GPL-2.0-only
# e2e (a): the guest boots with the ports 'trace-collector setup' generates and sees
# /dev/virtio-ports/agent-ctl-path, trace-path-cpu0/1 and perf-path-cpu0/1.
#   test-boot.sh pipe|socket
. "$VT_SOURCE_ROOT/tests/integration/lib.sh"

transport=${1:?usage: test-boot.sh pipe|socket}
tmp=$(mktemp -d /tmp/vt-e2e-boot.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
log=$tmp/console.log

# vt.agent_exit=1: init stops the agent before poweroff (no session ran: nothing to unpatch)
"$VT_E2E_BOOT" --dir "$tmp/vm" --log "$log" --transport "$transport" --timeout 60 --append vt.agent_exit=1
st=$?
check "boot ($transport) reached 'vt-e2e: done' (status $st)" test "$st" -eq 0
check_out "guest init ran with 2 cpus" '^vt-e2e: init reached, .* 2 cpus' cat "$log"
for p in agent-ctl-path trace-path-cpu0 trace-path-cpu1 perf-path-cpu0 perf-path-cpu1; do
	check_out "guest sees /dev/virtio-ports/$p" "^vt-e2e: port $p -> vport[0-9]+p[0-9]+\$" tr -d '\r' <"$log"
done
check_out "exactly these five ports" '^vt-e2e: ports: agent-ctl-path perf-path-cpu0 perf-path-cpu1 trace-path-cpu0 trace-path-cpu1 $' tr -d '\r' <"$log"
check_out "the static agent started" '^vt-e2e: agent started pid [0-9]+' cat "$log"
check_out "the agent exits 0 on SIGTERM and removes its instance" '^vt-e2e: agent exit 0' cat "$log"
check "no insmod failure" bash -c "! grep -q 'insmod .* failed' '$log'"
[ "$vt_fail" -eq 0 ] || { echo "--- console log"; cat "$log"; }
finish
