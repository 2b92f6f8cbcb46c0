# SPDX-License-Identifier: GPL-2.0-only
# Root stays root (docs/security.md): QEMU's user (here 'nobody') gets its ports and nothing
# else of the VM dir; a VM dir another user can change, or a planted link, makes start refuse
# with the fix named and write nothing through the link; setup takes such a dir back; a
# socket not served by QEMU's user is refused. The fake guest runs as that user.
. "$(dirname "$0")/daemon-lib.sh"

command -v setpriv >/dev/null || { fail "setpriv missing (util-linux)"; finish; exit 1; }
chmod 0755 "$T"
# The fake guest as QEMU's user: a copy it can execute wherever the build tree is.
install -m 0755 "$FAKE_GUEST" "$T/fake-guest"
as_qemu() { setpriv --reuid nobody --regid nogroup --clear-groups -- "$@"; }
fake_guest_as_qemu() { fake_guest_as nobody "$@"; }
fake_guest_as() { # USER ARGS...
	local user=$1; shift
	coproc FG { exec setpriv --reuid "$user" --regid "$(id -g "$user")" --clear-groups -- "$T/fake-guest" "$@" 2>>"$T/fake-guest.log"; }
	FG_PID=$FG_PID
	local line
	read -r -t 10 line <&"${FG[0]}" || { echo "fake guest did not come up" >&2; cat "$T/fake-guest.log" >&2; exit 1; }
}
target=$T/elsewhere
mkdir -m 0777 "$target"

# 1. The README's setup with QEMU's user: the VM dir stays root's, the FIFOs are nobody's.
rmdir "$VMDIR"
collector setup --name "$VM" --cpus 2 --dir "$VMDIR" --owner nobody:nogroup >/dev/null
check "setup --owner exits 0" test $? -eq 0
check "VM dir root's 0755" test "$(stat -c %U:%a "$VMDIR")" = root:755
check "FIFOs nobody's 0600" test "$(stat -c %U:%a "$VMDIR/trace-path-cpu0.out")" = nobody:600
for what in "ln -s $target $VMDIR/sessions" "mkdir $VMDIR/cache" "touch $VMDIR/new" \
	    "mv $VMDIR/trace-path-cpu0.out $VMDIR/moved" "rm -f $VMDIR/agent-ctl-path.in" \
	    "ln -s $target $VMDIR/trace-path-cpu9.out"; do
	check "as QEMU's user, '$what' is refused" bash -c "! setpriv --reuid nobody --regid nogroup --clear-groups -- $what 2>/dev/null"
done
check "as QEMU's user, its own port opens for writing" as_qemu sh -c "exec 3<>'$VMDIR/trace-path-cpu0.in'"

# 2. A session with the guest as QEMU's user: works; what the daemon wrote stays root's.
fake_guest_as_qemu --dir "$VMDIR" --cpus 2 --pages 20
out=$(start --no-host 2>&1); rc=$?
check "start with the ports QEMU's user holds ($out)" test $rc -eq 0
S=$(tail -n 1 <<<"$out")
check "session dir root's 0700" test "$(stat -c %U:%a "$S")" = root:700
check "sessions/ root's 0700" test "$(stat -c %U:%a "$VMDIR/sessions")" = root:700
check "as QEMU's user, nothing can be created in sessions/" bash -c "! setpriv --reuid nobody --regid nogroup --clear-groups -- touch $VMDIR/sessions/x 2>/dev/null"
out=$(stop 2>&1); rc=$?
check "stop exits 0" test $rc -eq 0
check "the output is root's" test "$(stat -c %U "$T/out.data")" = root
kill "$FG_PID" 2>/dev/null; wait "$FG_PID" 2>/dev/null; FG_PID=

# 3. A VM dir as an older setup left it (QEMU's user owns it) with links planted in it.
old=$T/old
collector setup --name old --cpus 2 --dir "$old" >/dev/null
chown nobody:nogroup "$old"; chmod 0750 "$old"
as_qemu ln -s "$target" "$old/sessions"
as_qemu ln -s "$target" "$old/cache"
out=$(collector start --name old --dir "$old" --run-dir "$RUN" --timeout 5 --no-host 2>&1); rc=$?
check "start refuses a VM dir QEMU's user owns" test $rc -ne 0
grep -q "not safe for the root daemon.*owned by uid $(id -u nobody).*re-run 'trace-collector setup --name old" <<<"$out" &&
	ok "the refusal names the owner and the fix" || fail "refusal: $out"
check "nothing written through the planted link" test -z "$(ls -A "$target")"
chown root:root "$old"; chmod 0755 "$old"
out=$(collector start --name old --dir "$old" --run-dir "$RUN" --timeout 5 --no-host 2>&1); rc=$?
check "start refuses a planted sessions link even in a root dir" test $rc -ne 0
grep -q "sessions is owned by uid $(id -u nobody)" <<<"$out" && ok "the link is named" || fail "link refusal: $out"
check "still nothing written through the link" test -z "$(ls -A "$target")"
chown nobody:nogroup "$old"
out=$(collector setup --name old --cpus 2 --dir "$old" --owner nobody:nogroup 2>&1 >/dev/null)
check "setup takes the dir back" test "$(stat -c %U:%a "$old")" = root:755
check "setup removes the planted links" test ! -L "$old/sessions" -a ! -L "$old/cache"
grep -q "sessions was a symbolic link: removed" <<<"$out" && ok "setup says what it removed" || fail "setup: $out"
mkdir "$old/sessions"; chown nobody "$old/sessions"
out=$(collector setup --name old --cpus 2 --dir "$old" 2>&1 >/dev/null)
check "setup moves a sessions/ of QEMU's user aside" bash -c "test ! -e '$old/sessions' && ls -d '$old'/sessions.untrusted-* >/dev/null"
grep -q "moved to $old/sessions.untrusted-" <<<"$out" && ok "setup names where it went" || fail "setup aside: $out"

# 4. A run dir other users can write: refused, named.
mkdir -m 0777 "$T/openrun"
out=$(collector start --name "$VM" --dir "$VMDIR" --run-dir "$T/openrun" --timeout 5 --no-host 2>&1); rc=$?
check "start refuses a run dir every user can write" test $rc -ne 0
grep -q "run dir $T/openrun is not safe.*can be written by every user" <<<"$out" && ok "the run dir is named" || fail "run dir: $out"
check "no pidfile in it" test -z "$(ls -A "$T/openrun")"

# 5. Sockets: sock/ is QEMU's user's; a socket served by another user is not QEMU's.
sd=$T/sockvm
collector setup --name sockvm --cpus 2 --dir "$sd" --transport socket --owner nobody:nogroup >/dev/null
check "sock/ nobody's 0750, VM dir root's" test "$(stat -c %U:%a "$sd/sock"):$(stat -c %U "$sd")" = nobody:750:root
fake_guest_as_qemu --dir "$sd" --cpus 2 --pages 20 --socket
out=$(collector start --name sockvm --dir "$sd" --run-dir "$RUN" --timeout 5 --no-host 2>&1); rc=$?
check "start over QEMU's user's sockets ($out)" test $rc -eq 0
out=$(collector stop --name sockvm --run-dir "$RUN" -o "$T/sock.data" 2>&1)
check "stop over sockets" test $? -eq 0
kill "$FG_PID" 2>/dev/null; wait "$FG_PID" 2>/dev/null; FG_PID=
rm -f "$sd"/sock/*.sock
chmod 0777 "$sd/sock"  # another user's service can now put its socket there
fake_guest_as daemon --dir "$sd" --cpus 2 --pages 20 --socket
out=$(collector start --name sockvm --dir "$sd" --run-dir "$RUN" --timeout 5 --no-host 2>&1); rc=$?
check "start refuses a socket not served by sock/'s owner" test $rc -ne 0
grep -q "is not QEMU.s socket: it, or the process serving it, does not belong to the owner of $sd/sock" <<<"$out" && ok "the socket refusal names it" || fail "socket: $out"
finish
