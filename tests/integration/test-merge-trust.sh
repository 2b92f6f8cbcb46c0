# SPDX-License-Identifier: GPL-2.0-only
# root merges a session dir another user controls (docs/security.md, "A session dir merged as
# input"; issue 43 part 2): 'nobody' is handed a copy of a real session (fake guest, guest perf,
# one guest binary) and plays the attacker in it, root runs 'trace-collector merge DIR':
#  a. session.ini's opt_trust_guest_binaries=1 and buildid_dir=<root-only 0700 dir>: nothing is
#     created there, nothing in $HOME/.debug; the merge says which settings it ignored;
#  b. host_data=<a root-only host recording>: not read (its comm is not in the output), named;
#     the control: root's own --host-data of it is read;
#  c. a FIFO as host.data, one in place of cpu1.spool, and --host-data FIFO: the merge ends at
#     once (timeout 20), naming the FIFO;
#  d. the guest binary installed into OUT/buildids is root's, not a hard link to nobody's inode;
#  e. the summary names OUT/kcore_dir__PID/kallsyms only when it was written;
#  f. a link of nobody's on the way to an input (guest -> elsewhere) is not followed.
. "$(dirname "$0")/daemon-lib.sh"

command -v perf >/dev/null || { fail "perf not installed (linux-perf): scripts/bootstrap installs it"; finish; exit 1; }
command -v setpriv >/dev/null || { fail "setpriv missing (util-linux)"; finish; exit 1; }
[ "$(id -u)" = 0 ] || { fail "runs as root (it plays root against nobody)"; finish; exit 1; }
as_nobody() { setpriv --reuid nobody --regid nogroup --clear-groups -- "$@"; }
chmod 0711 "$T" # nobody reaches its own dir below; root's files here stay root's
mkfifos 2
for c in 0 1; do mkfifo -m 0600 "$VMDIR/perf-path-cpu$c.in" "$VMDIR/perf-path-cpu$c.out"; done
export HOME=$T/home
mkdir -p "$HOME"
honest=1122334455667788990011223344556677889900

# a real session: guest tracepoints, guest perf, one fetched binary, host perf
fake_guest --dir "$VMDIR" --cpus 2 --pages 20 --perf --bin "/usr/bin/tool=$FAKE_GUEST@0x$honest"
out=$(start --guest-perf 2>&1); rc=$?
check "start with guest perf ($out)" test $rc -eq 0
S=$(tail -n 1 <<<"$out")
wait_for 10 status_has 'cpu1 +20 '
out=$(stop 2>&1); rc=$?
check "stop succeeds" test $rc -eq 0
check "the session fetched the guest binary" test -f "$S/binaries/$honest"

# a root-only host recording of a program of its own name (new each run: the host's
# saved_cmdlines, which host perf's tracing data carries, keeps the names of earlier runs), and a
# root-only directory
secret=vts$$x$RANDOM
mkdir -m 0700 "$T/secret" "$T/rootonly"
cp "$(readlink -f /proc/$$/exe)" "$T/secret/$secret"
HOME=$T/secret perf record -q -N -e cpu-clock -o "$T/secret/host.data" -- "$T/secret/$secret" -c \
	'i=0; while [ $i -lt 200000 ]; do i=$((i + 1)); done' >/dev/null 2>&1
chmod 0600 "$T/secret/host.data"
check "a root-only host recording naming $secret" grep -qa $secret "$T/secret/host.data"

# handed over: a copy of the session that nobody owns, in nobody's own directory
mkdir -p "$T/att"; chown nobody:nogroup "$T/att"
handed() { # handed NAME: $T/att/NAME, nobody's copy of the session
	rm -rf "$T/att/$1"
	cp -a "$S" "$T/att/$1" && chown -R nobody:nogroup "$T/att/$1"
	echo "$T/att/$1"
}
# set_ini DIR KEY VALUE, as nobody
set_ini() { as_nobody sed -i "/^$2=/d" "$1/session.ini" && as_nobody sh -c 'echo "$1" >>"$2"' - "$2=$3" "$1/session.ini"; }
merge() { timeout 20 "$TRACE_COLLECTOR" merge "$@" 2>&1; }

# ---- a. session.ini chooses neither trust nor where the build-id cache is ----
A=$(handed a)
as_nobody rm -f "$A/merge.ini"
set_ini "$A" opt_trust_guest_binaries 1
set_ini "$A" buildid_dir "$T/rootonly"
out=$(merge "$A" -o "$T/out-a"); rc=$?
check "a: the merge succeeds ($rc)" test $rc -eq 0 -o $rc -eq 3
check "a: nothing created in the root-only dir session.ini named" test -z "$(ls -A "$T/rootonly")"
check "a: \$HOME/.debug not written" test ! -e "$HOME/.debug"
grep -q "input only.*owned by uid $(id -u nobody).*session.ini's opt_trust_guest_binaries, buildid_dir ignored" <<<"$out" &&
	ok "a: the merge names the settings it ignored, and why" || fail "a: no such message: $out"
check "a: the binary went to the output's own OUT/buildids" test -e "$T/out-a/buildids/.build-id/${honest:0:2}/${honest:2}/elf"
check "a: no merge.ini written into nobody's dir" test ! -e "$A/merge.ini"

# ---- d. what root installed is root's file, no hard link to nobody's inode ----
D=$(handed d) # session.ini as the daemon wrote it: the binary goes to OUT/buildids
out=$(merge "$D" -o "$T/out-d"); rc=$?
check "d: the merge succeeds ($rc)" test $rc -eq 0 -o $rc -eq 3
elf=$(readlink -f "$T/out-d/buildids/.build-id/${honest:0:2}/${honest:2}/elf")
st=$(stat -c %u:%h "$elf" 2>/dev/null)
check "d: OUT/buildids' binary is root's, one link ($st; nobody's: $(stat -c %u:%h "$D/binaries/$honest"))" \
	test "$st" = "0:1"
check "d: not nobody's inode" test "$(stat -c %i "$elf" 2>/dev/null)" != "$(stat -c %i "$D/binaries/$honest")"
check "d: the copy is what was checked (the same bytes)" cmp -s "$elf" "$S/binaries/$honest"
mode=$(stat -c %a "$elf" 2>/dev/null)
check "d: mode at most 0644 ($mode)" test -n "$mode" -a $((0$mode & ~0644)) -eq 0

# ---- e. the summary names only what was written ----
for k in $(grep -o "$T/out-d/kcore_dir__[0-9]*/kallsyms" <<<"$out"); do
	check "e: the summary's $k exists" test -f "$k"
done
grep -q "$T/out-d/data" <<<"$out" && ok "e: the summary names OUT/data" || fail "e: summary: $out"

# ---- b. an absolute host_data is not read from nobody's dir ----
B=$(handed b)
set_ini "$B" host_data "$T/secret/host.data"
out=$(merge "$B" --no-compress -o "$T/out-b"); rc=$?
check "b: the merge succeeds ($rc)" test $rc -eq 0 -o $rc -eq 3
check "b: the root-only recording is not in the output" bash -c "! grep -rqa $secret '$T/out-b'"
grep -q "input only.*session.ini's host_data ignored" <<<"$out" && ok "b: host_data named as ignored" ||
	fail "b: no such message: $out"
out=$(merge "$B" --no-compress --host-data "$T/secret/host.data" -o "$T/out-b2"); rc=$?
check "b: control: root's own --host-data of it is merged ($rc)" grep -rqa $secret "$T/out-b2"
set_ini "$B" host_data "../../secret/host.data"
out=$(merge "$B" --no-compress -o "$T/out-b3"); rc=$?
check "b: a host_data with '..' is refused ($rc)" test $rc -ne 0 -a $rc -ne 124
check "b: ... and not read" bash -c "! grep -rqa $secret '$T/out-b3' 2>/dev/null"

# ---- c. FIFOs in place of inputs: refused by name, at once ----
C=$(handed c)
as_nobody rm -f "$C/host.data"
as_nobody mkfifo "$C/host.data"
out=$(merge "$C" -o "$T/out-c1"); rc=$?
check "c: a FIFO as host.data: the merge ends, refusing ($rc)" test $rc -ne 124 -a $rc -ne 0
grep -q "$C/host.data is a FIFO, not a regular file" <<<"$out" && ok "c: the FIFO host.data is named" ||
	fail "c: host.data FIFO: $out"
C=$(handed c)
as_nobody rm -f "$C/cpu1.spool"
as_nobody mkfifo "$C/cpu1.spool"
out=$(merge "$C" -o "$T/out-c2"); rc=$?
check "c: a FIFO as cpu1.spool: the merge ends ($rc)" test $rc -ne 124
grep -q "$C/cpu1.spool is a FIFO, not a regular file" <<<"$out" && ok "c: the FIFO cpu1.spool is named" ||
	fail "c: cpu1.spool FIFO: $out"
mkfifo "$T/fifo"
out=$(merge "$S" --host-data "$T/fifo" -o "$T/out-c3"); rc=$?
check "c: --host-data FIFO: the merge ends, refusing ($rc)" test $rc -ne 124 -a $rc -ne 0
grep -q "$T/fifo is a FIFO, not a regular file" <<<"$out" && ok "c: the --host-data FIFO is named" ||
	fail "c: --host-data FIFO: $out"

# ---- f. a link of nobody's on the way (guest -> elsewhere) is not followed ----
F=$(handed f)
as_nobody mv "$F/guest" "$T/att/elsewhere"
as_nobody ln -s "$T/att/elsewhere" "$F/guest"
out=$(merge "$F" -o "$T/out-f"); rc=$?
check "f: the merge ends ($rc)" test $rc -ne 124
grep -q "$F/guest/events/header_page cannot be reached: guest is not a directory (a link is not followed)" <<<"$out" &&
	ok "f: nobody's link guest is refused, named" || fail "f: link: $out"

# ---- root's own session dir: its session.ini is still followed ----
cp -a "$S" "$T/own"
sed -i '/^buildid_dir=/d; /^opt_trust_guest_binaries=/d' "$T/own/session.ini"
printf 'opt_trust_guest_binaries=1\nbuildid_dir=%s\n' "$T/owncache" >>"$T/own/session.ini"
out=$(merge "$T/own" -o "$T/out-own"); rc=$?
check "root's own dir: session.ini's buildid_dir is used" test -e "$T/owncache/.build-id/${honest:0:2}/${honest:2}/elf"
grep -q "input only" <<<"$out" && fail "root's own dir called input only: $out" || ok "root's own dir: no input-only line"
finish
