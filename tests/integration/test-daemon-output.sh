# SPDX-License-Identifier: GPL-2.0-only
# The output side stays root's (docs/security.md): 'stop -o OUT' and 'merge -o OUT' keep an
# existing OUT as OUT.old and remove an older OUT.old first. A user who can write OUT's
# directory (here 'nobody') plants OUT and OUT.old/kcore_dir__7 -> a root-only directory
# holding kallsyms and modules: root's stop and merge refuse that OUT.old, named, and remove
# nothing outside it. An OUT.old of root's holding such a link is refused the same way (its
# removal goes through descriptors, O_NOFOLLOW); a real one of an earlier merge is replaced.
. "$(dirname "$0")/daemon-lib.sh"

command -v setpriv >/dev/null || { fail "setpriv missing (util-linux)"; finish; exit 1; }
command -v perf >/dev/null || { fail "perf not installed (linux-perf): scripts/bootstrap installs it"; finish; exit 1; }
chmod 0755 "$T"
as_nobody() { setpriv --reuid nobody --regid nogroup --clear-groups -- "$@"; }
secret=$T/secret
mkdir -m 0700 "$secret"
seed() { echo "ffffffff81000000 T _text" >"$secret/kallsyms"; echo "mod 4096 0 - Live 0x0" >"$secret/modules"; }
survived() { test -f "$secret/kallsyms" -a -f "$secret/modules"; }
pub=$T/pub # OUT's directory: nobody's, as /tmp or a user's home is theirs to write
mkdir -m 0755 "$pub"
chown nobody:nogroup "$pub"
out_file=$pub/vm.data
# plant AS: OUT (a file) and OUT.old/kcore_dir__7 -> the root-only dir, made by AS (nobody or root)
plant() {
	local run=as_nobody
	[ "$1" = root ] && run=
	seed # each part on its own: the files are there before it
	rm -rf "$out_file" "$out_file.old"
	$run sh -c "echo planted >'$out_file' && mkdir '$out_file.old' && ln -s '$secret' '$out_file.old/kcore_dir__7'"
}

# 1. stop -o: the session with host perf, so stop takes the live merge's file (its own path).
mkfifos 2
fake_guest --dir "$VMDIR" --cpus 2 --pages 30
out=$(start --clock ptp 2>&1); rc=$?
check "start with host perf ($out)" test $rc -eq 0
S=$(tail -n 1 <<<"$out")
check "the live merge follows the session" wait_for 10 grep -q 'live merge: following' "$S/collector.log"
plant nobody
check "nobody planted OUT.old/kcore_dir__7 -> $secret" test -L "$out_file.old/kcore_dir__7"
out=$(collector stop --name "$VM" --run-dir "$RUN" -o "$out_file" 2>&1); rc=$?
check "stop -o: the root-only dir's kallsyms and modules survive" survived
check "stop -o refuses to replace the planted OUT.old (rc $rc)" test $rc -ne 0
grep -q "$out_file.old is a directory of uid $(id -u nobody), not ours (uid 0): it is not removed.*remove it yourself, or choose another -o" <<<"$out" &&
	ok "stop -o names the OUT.old it refused and what to do" || fail "stop -o refusal: $out"
check "stop -o: the planted OUT is left where it was" grep -q planted "$out_file"
check "stop -o: the session is kept for a merge" test -s "$S/session.ini"
check "stop -o: the live merge had written its file (stop's own path was taken)" test "$(ini "$S" live_merge)" = done
kill "$FG_PID" 2>/dev/null; wait "$FG_PID" 2>/dev/null; FG_PID=

# 2. merge -o, the same plant.
plant nobody
out=$(collector merge "$S" -o "$out_file" 2>&1); rc=$?
check "merge -o: the root-only dir's kallsyms and modules survive" survived
check "merge -o refuses to replace the planted OUT.old (rc $rc)" test $rc -ne 0
grep -q "$out_file.old is a directory of uid $(id -u nobody), not ours" <<<"$out" &&
	ok "merge -o names the OUT.old it refused" || fail "merge -o refusal: $out"

# 3. An OUT.old of root's that holds the link: removed through descriptors, the link not
# followed, refused.
plant root
out=$(collector merge "$S" -o "$out_file" 2>&1); rc=$?
check "merge -o, root's OUT.old holding the link: the files survive" survived
check "merge -o, root's OUT.old holding the link: refused (rc $rc)" test $rc -ne 0
grep -q "$out_file.old cannot be replaced (it holds a link or another user's directory, not followed" <<<"$out" &&
	ok "the refusal names the link" || fail "link refusal: $out"

# 4. A perf.data directory an earlier merge left as OUT.old (data, kcore_dir__PID, buildids):
# replaced, and the OUT before becomes OUT.old.
seed
rm -rf "$out_file" "$out_file.old"
echo earlier >"$out_file"
mkdir -p "$out_file.old/kcore_dir__7" "$out_file.old/buildids/ab/cdef"
touch "$out_file.old/data" "$out_file.old/kcore_dir__7/kallsyms" "$out_file.old/kcore_dir__7/modules" \
	"$out_file.old/buildids/ab/cdef/elf"
out=$(collector merge "$S" -o "$out_file" 2>&1); rc=$?
check "merge -o over a real OUT.old of root's succeeds ($out)" test $rc -eq 0
check "the OUT before is now OUT.old" grep -q earlier "$out_file.old"
check "the new OUT is a perf.data" test "$(head -c 8 "$out_file")" = PERFILE2
check "still nothing removed outside" survived
finish
