# SPDX-License-Identifier: GPL-2.0-only
# One agent per ftrace instance: a second trace-agent on the same instance refuses, naming it,
# and leaves the first one's instance alone (it would otherwise remove it under the first's
# pumps); another --instance is fine. The first agent waits for a control port that never comes.
. "$(dirname "$0")/lib.sh"

[ -d /sys/kernel/tracing/instances ] || { fail "no tracefs at /sys/kernel/tracing: scripts/bootstrap mounts it"; finish; exit 1; }
tmp=$(mktemp -d)
inst=vt_claim_$$
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	rmdir "/sys/kernel/tracing/instances/$inst" "/sys/kernel/tracing/instances/${inst}_2" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
"$TRACE_AGENT" --ports-dir "$tmp" --instance "$inst" 2>"$tmp/first.log" &
pids+=($!)
for _ in $(seq 50); do [ -d "/sys/kernel/tracing/instances/$inst" ] && break; sleep 0.1; done
check "the first agent made its instance" test -d "/sys/kernel/tracing/instances/$inst"
ino=$(stat -c %i "/sys/kernel/tracing/instances/$inst")
out=$(timeout 10 "$TRACE_AGENT" --ports-dir "$tmp" --instance "$inst" 2>&1); rc=$?
check "a second agent on the same instance exits non-zero (rc $rc)" test "$rc" -ne 0 -a "$rc" -ne 124
grep -q "another trace-agent runs with ftrace instance '$inst'" <<<"$out" && ok "it says why" || fail "second agent: $out"
check "the first agent's instance is untouched (same inode)" test "$(stat -c %i "/sys/kernel/tracing/instances/$inst")" = "$ino"
check "the first agent still runs" kill -0 "${pids[0]}"
"$TRACE_AGENT" --ports-dir "$tmp" --instance "${inst}_2" 2>"$tmp/second.log" &
pids+=($!)
for _ in $(seq 50); do [ -d "/sys/kernel/tracing/instances/${inst}_2" ] && break; sleep 0.1; done
check "an agent on another instance runs beside it" test -d "/sys/kernel/tracing/instances/${inst}_2"
finish
