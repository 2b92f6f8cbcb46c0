# SPDX-License-Identifier: GPL-2.0-only
# The socket transport against QEMU's user (here 'nobody', the owner of VMDIR/sock/), who
# swaps sock/agent-ctl-path.sock between a socket of its own and a symbolic link to a root-only
# socket of another service, as fast as it can, while root's daemon starts and retries: the
# daemon connects only through the descriptor it checked (docs/security.md), so the root
# service never sees a connection. A link left there is refused at once, named.
. "$(dirname "$0")/daemon-lib.sh"

command -v setpriv >/dev/null || { fail "setpriv missing (util-linux)"; finish; exit 1; }
chmod 0755 "$T"
# (a PATH of the system's: root's own, a pyenv's say, may be closed to nobody)
as_nobody() { setpriv --reuid nobody --regid nogroup --clear-groups -- env PATH=/usr/local/bin:/usr/bin:/bin "$@"; }
lacks() { ! grep -q -- "$1" <<<"$2"; }
sd=$T/sockvm
collector setup --name sockvm --cpus 2 --dir "$sd" --transport socket --owner nobody:nogroup >/dev/null
check "sock/ is nobody's" test "$(stat -c %U "$sd/sock")" = nobody
sstart() { collector start --name sockvm --dir "$sd" --run-dir "$RUN" --no-host "$@"; }

# Another service of root's: a listening socket in a root-only dir, logging every connection.
svc=$T/rootonly
mkdir -m 0700 "$svc"
python3 - "$svc/svc.sock" "$svc/log" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1]); s.listen(64)
log = open(sys.argv[2], 'a', buffering=1)
while True:
    c, _ = s.accept()
    log.write('connected\n')
    c.settimeout(1)
    try:
        log.write('bytes %d\n' % len(c.recv(65536)))
    except OSError:
        pass
    c.close()
PY
SVC_PID=$!
ATK_PID=
trap 'kill $SVC_PID $ATK_PID 2>/dev/null; cleanup' EXIT
check "the root service listens" wait_for 5 test -S "$svc/svc.sock"
: >"$svc/log"
touched() { test -s "$svc/log"; }

# 1. The swap: nobody exchanges a dead socket of its own (connect: refused, so the daemon
# retries every second) and a link to the root service's socket (renameat2 RENAME_EXCHANGE).
setpriv --reuid nobody --regid nogroup --clear-groups -- env PATH=/usr/local/bin:/usr/bin:/bin \
	python3 - "$sd/sock" "$svc/svc.sock" <<'PY' & # not through as_nobody: $! is then its own pid
import ctypes, os, socket, sys
libc = ctypes.CDLL(None, use_errno=True)
port, spare = (os.path.join(sys.argv[1], n).encode() for n in ('agent-ctl-path.sock', '.spare'))
for p in (port, spare):
    try: os.unlink(p)
    except FileNotFoundError: pass
s = socket.socket(socket.AF_UNIX); s.bind(port); s.close()  # a socket no one serves
os.symlink(sys.argv[2], spare)
while True:
    libc.renameat2(-100, port, -100, spare, 2)  # AT_FDCWD, RENAME_EXCHANGE
PY
ATK_PID=$!
check "nobody swaps the socket and the link" wait_for 5 test -L "$sd/sock/.spare" -o -L "$sd/sock/agent-ctl-path.sock"
tries=0 fails=0 said_link=0
while [ $tries -lt 8 ] && ! touched; do
	out=$(sstart --timeout 3 2>&1) && fail "start succeeded against the swapped socket: $out"
	tries=$((tries + 1))
	grep -q "agent-ctl-path.sock is a symbolic link.*: refused" <<<"$out" && said_link=$((said_link + 1))
done
kill $ATK_PID 2>/dev/null; wait $ATK_PID 2>/dev/null; ATK_PID=
check "the root service saw no connection in $tries starts against the swap ($(tr '\n' ' ' <"$svc/log"))" test ! -s "$svc/log"
check "the swapped-in link was refused by name ($said_link of $tries starts)" test $said_link -gt 0

# 2. A link left in place: refused at once, named, not taken for a guest without an agent.
rm -f "$sd/sock/.spare" "$sd/sock/agent-ctl-path.sock"
as_nobody ln -s "$svc/svc.sock" "$sd/sock/agent-ctl-path.sock"
t0=$(date +%s)
out=$(sstart --timeout 5 2>&1); rc=$?
check "start refuses the link (rc $rc)" test $rc -ne 0
grep -q "$sd/sock/agent-ctl-path.sock is a symbolic link (to $svc/svc.sock): refused, the daemon connects only to a socket QEMU made there, never through a link; remove the link and restart QEMU" <<<"$out" &&
	ok "the refusal names the link, where it points and what to do" || fail "link refusal: $out"
check "the refusal does not blame the guest's agent" lacks 'is trace-agent running' "$out"
check "refused at once, not after --timeout ($(( $(date +%s) - t0 )) s)" test $(( $(date +%s) - t0 )) -lt 5
check "the root service still saw no connection" test ! -s "$svc/log"

# 3. A socket no one serves: the start says it never connected, not that the agent is silent.
rm -f "$sd/sock/agent-ctl-path.sock"
as_nobody python3 -c "import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])" "$sd/sock/agent-ctl-path.sock"
out=$(sstart --timeout 2 2>&1); rc=$?
check "start with no QEMU serving the socket fails (rc $rc)" test $rc -ne 0
grep -q "no connection to $sd/sock/agent-ctl-path.sock within 2 s while .* (the last try: Connection refused) — is QEMU running with that socket?" <<<"$out" &&
	ok "it says the daemon never connected" || fail "no connection: $out"
finish
