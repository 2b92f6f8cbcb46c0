# SPDX-License-Identifier: GPL-2.0-only
# Helpers for the daemon tests: a temp VM dir with the ports QEMU would hold, the fake
# guest (tests/integration/fake-guest.c) in the background, and cleanup of what we started.
. "$(dirname "$0")/lib.sh"

: "${TRACE_COLLECTOR:?}" "${FAKE_GUEST:?}"
T=$(mktemp -d /tmp/vt-daemon-test.XXXXXX)
VM=vm$$
VMDIR=$T/vm
RUN=$T/run
FG_PID=
mkdir -p "$VMDIR"

cleanup() {
	local pid
	pid=$(head -n 1 "$RUN/$VM.pid" 2>/dev/null)
	[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
	[ -n "$FG_PID" ] && kill -9 "$FG_PID" 2>/dev/null
	mountpoint -q "$T/small" 2>/dev/null && umount "$T/small"
	[ -n "${VT_KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT

# mkfifos NCPUS [DIR]: the FIFO pairs 'trace-collector setup' would make.
mkfifos() {
	local d=${2:-$VMDIR}
	for n in agent-ctl-path $(seq -f 'trace-path-cpu%g' 0 $(($1 - 1))); do
		mkfifo -m 0600 "$d/$n.in" "$d/$n.out"
	done
}

# fake_guest ARGS...: starts the fake guest, waits until its ports are open.
fake_guest() {
	coproc FG { exec "$FAKE_GUEST" "$@" 2>>"$T/fake-guest.log"; }
	FG_PID=$FG_PID
	local line
	read -r -t 10 line <&"${FG[0]}" || { echo "fake guest did not come up" >&2; cat "$T/fake-guest.log" >&2; exit 1; }
}

collector() { "$TRACE_COLLECTOR" "$@"; }
start() { collector start --name "$VM" --dir "$VMDIR" --run-dir "$RUN" --timeout 5 "$@"; }
status() { collector status --name "$VM" --run-dir "$RUN" "$@"; }
stop() { collector stop --name "$VM" --run-dir "$RUN" -o "$T/out.data" "$@"; }
ini() { sed -n "s/^$2=//p" "$1/session.ini"; }
# status_has REGEX: the daemon's status matches now.
status_has() { status 2>&1 | grep -Eq -- "$1"; }
daemon_pid() { head -n 1 "$RUN/$VM.pid"; }

# wait_for SECONDS COMMAND...: polls a condition (the daemon works asynchronously).
wait_for() {
	local t=$(( $1 * 10 )); shift
	while ! "$@" >/dev/null 2>&1; do
		t=$((t - 1)); [ $t -gt 0 ] || return 1; sleep 0.1
	done
}

# Whether FILE has N lines at least (for wait_for: read again on each try).
lines_at_least() { test "$(wc -l <"$1" 2>/dev/null || echo 0)" -ge "$2"; }

# spool_check SPOOL SESSION_ID: prints "pages=N end=1|0 stale=BYTES" as a reader of the
# session dir would see it (docs/session-dir.md): begin marker of this session, pages, end marker.
spool_check() {
	python3 - "$1" "$2" <<'PY'
import struct, sys
data = open(sys.argv[1], 'rb').read(); sid = int(sys.argv[2]); P = 4096
magic = struct.pack('<QQ', 0x4b52414d54524956, 2**64 - 1)
off = 0
while True:
    off = data.find(magic, off)
    if off < 0: print("pages=0 end=0 no-begin"); sys.exit(0)
    kind, ver, s = struct.unpack_from('<IIQ', data, off + 16)
    if kind == 1 and s == sid: break
    off += 1
stale, off, pages, end = off, off + P, 0, 0
while off + P <= len(data):
    if data[off:off+16] == magic:
        kind, ver, s = struct.unpack_from('<IIQ', data, off + 16)
        if kind == 2 and s == sid: end = 1; break
    pages += 1; off += P
print(f"pages={pages} end={end} stale={stale}")
PY
}
