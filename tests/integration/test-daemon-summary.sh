# SPDX-License-Identifier: GPL-2.0-only
# stop's short summary: a dozen lines at most whatever the number of CPUs, each kind of problem
# (losses, CPUs not traced, a cut) on one line naming its CPUs; the full summary (per CPU, per
# event type) in SESSION/stop-summary.txt.
. "$(dirname "$0")/daemon-lib.sh"

# stop_short WHAT: stop (its output in $out, printed; its status in $rc) says at most 12 lines,
# none of them per CPU or per event type.
stop_short() {
	local n
	out=$(stop 2>&1); rc=$?
	echo "$out"
	n=$(wc -l <<<"$out")
	check "$1: the summary is at most 12 lines ($n)" test "$n" -le 12
	! grep -Eq '^(cpu[0-9]+|perf cpu[0-9]+): |^ +guest_' <<<"$out" && ok "$1: no line per CPU or per event type" ||
		fail "$1: per-CPU lines in: $out"
}

# 1. Two vCPUs whose guest claims 3 pages more than it sent (a transport loss) and overran 7
# events each: both named on the losses line.
mkfifos 2
fake_guest --dir "$VMDIR" --cpus 2 --pages 50 --mode lossy
out=$(start --no-host --clock ptp 2>&1); S=$(tail -n 1 <<<"$out")
wait_for 10 status_has 'cpu1 +50 '
stop_short "2 vCPUs"
check "2 vCPUs: stop succeeds (rc $rc)" test $rc -eq 0
grep -Eq '^losses: ring overrun 14 events, .*transport 6 pages; by CPU: cpu0 7 events \+ 3 pages, cpu1 7 events \+ 3 pages$' <<<"$out" &&
	ok "2 vCPUs: the losses line names both CPUs, events and pages" || fail "2 vCPUs losses: $out"
grep -q "^output: $T/out.data" <<<"$out" && ok "2 vCPUs: the output named" || fail "2 vCPUs output: $out"
grep -qxF "  $T/out.data is zstd-compressed: perf reads it; hotspot's perfparser and older perf need a plain copy:" <<<"$out" &&
	grep -qxF "    trace-collector merge $S --no-compress -o PLAIN.data   (next time: stop --no-compress)" <<<"$out" &&
	ok "2 vCPUs: a zstd output says how readers without zstd get a plain file" || fail "2 vCPUs zstd hint: $out"
check "... and that merge writes one perf reads with no COMPRESSED record" bash -c '"$1" merge "$2" --no-compress -o "$3" >/dev/null &&
	"$4" report --stats -i "$3" 2>/dev/null | grep -q "SAMPLE events:" && ! "$4" report --stats -i "$3" 2>/dev/null | grep -q "COMPRESSED"' \
	_ "$TRACE_COLLECTOR" "$S" "$T/plain.data" "${PERF:-perf}"
grep -qF "details: $S/stop-summary.txt" <<<"$out" && ok "2 vCPUs: the details' file named" || fail "2 vCPUs details: $out"
check_out "2 vCPUs: stop-summary.txt has the per-CPU lines" '^cpu1: 50 pages .*guest sent 53, 3 lost in transport' cat "$S/stop-summary.txt"
check_out "2 vCPUs: stop-summary.txt has the merge's per-event-type counts" '^ +guest_fake:tick [1-9]' cat "$S/stop-summary.txt"
check_out "2 vCPUs: stop-summary.txt has the merge's transport loss" 'pages missing in transport \(sent - received\): 6$' cat "$S/stop-summary.txt"
check "2 vCPUs: stop-summary.txt is the owner's only" test "$(stat -c %a "$S/stop-summary.txt")" = 600
kill -9 "$FG_PID"; FG_PID=
rm -f "$VMDIR"/*.in "$VMDIR"/*.out

# 2. 32 vCPUs, two of them without a host port (--allow-partial), all lossy: still a dozen
# lines; the missing CPUs and the losses (the first few CPUs and how many more) each on a line.
mkfifos 32
fake_guest --dir "$VMDIR" --cpus 32 --pages 10 --mode lossy # 10 pages: below a FIFO's 64 KiB, none read on 5 and 17
rm "$VMDIR"/trace-path-cpu5.* "$VMDIR"/trace-path-cpu17.*
out=$(start --no-host --clock ptp --allow-partial 2>&1); S=$(tail -n 1 <<<"$out")
check "32 vCPUs: start succeeds ($S)" test -f "$S/session.ini"
wait_for 10 status_has 'cpu31 +10 '
stop_short "32 vCPUs"
check "32 vCPUs: stop succeeds (rc $rc)" test $rc -eq 0
grep -Eq '^missing: NOT TRACED: guest CPUs 5,17 \(start --allow-partial\)$' <<<"$out" &&
	ok "32 vCPUs: the CPUs not traced named on the missing line" || fail "32 vCPUs missing: $out"
grep -Eq '^losses: .*transport 90 pages; by CPU: cpu0 7 events \+ 3 pages, (cpu[0-9]+ 7 events \+ 3 pages, ){5}and 24 more$' <<<"$out" &&
	ok "32 vCPUs: the losses line names the first six CPUs, then how many more" || fail "32 vCPUs losses: $out"
grep -Eq '^merged: 0 host samples, [1-9][0-9]* guest samples of 1 event type ' <<<"$out" &&
	ok "32 vCPUs: the merged line counts the event types" || fail "32 vCPUs merged: $out"
check "32 vCPUs: stop-summary.txt has a line per CPU (32)" test "$(grep -Ec '^cpu[0-9]+: ' "$S/stop-summary.txt")" -eq 32
check_out "32 vCPUs: stop-summary.txt names cpu17 not traced" '^cpu17: NOT TRACED' cat "$S/stop-summary.txt"
kill -9 "$FG_PID"; FG_PID=
rm -f "$VMDIR"/*.in "$VMDIR"/*.out

# 3. A session cut by --max-size: the cut and the bytes dropped after it on one line. (A cut
# leaves the output less room than the session's projection: if it does not fit, stop says so
# and keeps the session; the summary is the same.)
mkfifos 2
fake_guest --dir "$VMDIR" --cpus 2 --pages 200
out=$(start --no-host --max-size 256K 2>&1); S=$(tail -n 1 <<<"$out")
check "cut: the session stops by itself" wait_for 10 status_has 'state: stopped — --max-size'
stop_short "cut"
check "cut: stop writes the output, or says it does not fit (rc $rc)" \
	bash -c '[ "$1" -eq 0 ] || { [ "$1" -eq 1 ] && grep -q "output not written: it does not fit" <<<"$2"; }' _ "$rc" "$out"
grep -Eq '^cut: --max-size 256.0 KiB \(the option\) reached: .*; bytes dropped by the host after the stop/limit: cpu0 [0-9]+, cpu1 [0-9]+$' <<<"$out" &&
	ok "cut: the cut said, and the bytes dropped after it by CPU" || fail "cut: $out"
finish
