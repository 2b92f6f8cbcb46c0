# SPDX-License-Identifier: GPL-2.0-only
# A hostile guest: garbage and oversized control frames, metadata names that try to leave
# the session dir, random bytes on a data port. The daemon logs clear errors, stays alive,
# writes nothing outside the session dir, and keeps its memory bounded.
. "$(dirname "$0")/daemon-lib.sh"

mkfifos 2
fake_guest --dir "$VMDIR" --cpus 2 --pages 50 --mode hostile
touch "$T/stamp"
sleep 0.01
out=$(start --no-host 2>&1); rc=$?
check "start succeeds despite bad metadata names ($out)" test $rc -eq 0
S=$(tail -n 1 <<<"$out")
pid=$(daemon_pid)
wait_for 10 status_has 'cpu1 +50 '
check_out "daemon alive and answering" '^cpu1 +50 ' status
log=$S/collector.log
for re in "metadata file '../../evil' refused: name not allowed" "skipped bytes that are no frame" \
	"frame header with length 16777217 .* refused" "malformed attributes in a 'ok' frame" \
	"unexpected 'meta-file' frame"; do
	grep -Eq -- "$re" "$log" && ok "log: $re" || fail "log lacks /$re/: $(cat "$log")"
done
expected="events/fake/tick/format events/header_event events/header_page kallsyms printk_formats saved_cmdlines"
got=$(cd "$S/guest" && find . -type f | sed 's|^\./||' | sort | tr '\n' ' ')
check "guest/ holds only the allowed metadata ($got)" test "$got" = "$expected "
outside=$(find "$T" /tmp -maxdepth 4 -newer "$T/stamp" \( -name 'evil' -o -name 'outside' -o -name 'x-y' \) 2>/dev/null)
check "nothing written outside the session dir ($outside)" test -z "$outside"
new=$(find "$T" -newer "$T/stamp" -type f ! -path "$S/*" ! -path "$RUN/*" ! -name fake-guest.log)
check "no new files anywhere else under the test dir ($new)" test -z "$new"
hwm=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
check "daemon memory bounded (VmHWM ${hwm} kB < 64 MiB)" test "$hwm" -lt 65536
out=$(stop 2>&1); rc=$?
check "stop succeeds against a hostile guest" test $rc -eq 0
grep -Eq '^cpu1: 50 pages .*0 lost in transport' "$S/stop-summary.txt" && ok "the clean CPU is intact" || fail "cpu1: $(cat "$S/stop-summary.txt")"
grep -Eq '^missing: .*no end marker[^;]*: cpu0($|[,;])' <<<"$out" && ok "random bytes on cpu0 misalign it: its end marker is not trusted" || fail "cpu0: $out"
finish
