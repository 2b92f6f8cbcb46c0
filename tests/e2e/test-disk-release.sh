# SPDX-License-Identifier: GPL-2.0-only
# e2e: a flood past --max-size with the live merge (the default) on the real guest
# (tests/e2e/lib.sh). Near the bound the daemon frees from each ftrace spool the pages the live
# merge has written into its output, instead of cutting the session: the guest sends more than
# the bound, the session dir stays within it, nothing is cut, and the output holds every marker
# of the session, the ones written before the flood too (their spool pages were freed). An
# offline merge of the session dir says what it lacks. Then --keep-spools: the same flood is
# cut at the bound, as before.
. "$(dirname "$0")/lib.sh"

e2e_init disk-release
out=$T/out.data
MAX=$((400 << 20))

apparent() { stat -c %s "$1"/cpu*.spool 2>/dev/null | paste -sd+ | bc; }
on_disk() { du -sB1 "$1" | cut -f1; }
# The numbered markers of a perf.data, in order, on one line.
markers() { "$PERF" script -i "$1" -F event,trace 2>/dev/null | sed -n 's/.*guest_ftrace:print:.*vt-e2e line \([0-9]*\) cpu.*/\1/p' | tr '\n' ' '; }

check "boot: guest ready, agent waiting" e2e_boot --timeout 400
sess=$(e2e_start -e 'sched:sched_switch' --max-size 400M)
check_out "start --max-size 400M (live merge by default)" "^$VM/sessions/" echo "$sess"
check "guest: 300 numbered markers before the flood" e2e_run 300
for i in 1 2 3; do
	check "guest: flood $i in the background" e2e_say bgflood
	check "guest: flood $i started" e2e_wait '^vt-e2e: bgflood started' 30
done
# Until the guest has sent more than the bound (a slow host takes longer: no time is asserted).
peak=0 tracing=yes
for _ in $(seq 600); do
	du=$(on_disk "$sess")
	[ "$du" -gt "$peak" ] && peak=$du
	[ "$(apparent "$sess")" -gt $((MAX + (100 << 20))) ] && break
	grep -q '^state=tracing' "$sess/session.ini" || { tracing=no; break; }
	sleep 0.5
done
check "the guest sent more than --max-size: $(apparent "$sess") bytes spooled" test "$(apparent "$sess")" -gt "$MAX"
check "the session kept tracing past the bound" test "$tracing" = yes
check_out "status: pages freed behind the live merge" '^disk: [0-9.]+ [MG]iB of the spools freed near the bound once the live merge had written them' e2e_status
check_out "status: the live merge's lag" '^live merge: following .* MB of guest pages still to merge' e2e_status
check "guest: floods stopped" e2e_say bgstop
check "guest: floods ended" e2e_wait '^vt-e2e: bgflood stopped' 60
check "guest: 301 numbered markers after the flood (another count: the console's first 'done' line is not this one's)" e2e_run 301
sum=$(e2e_stop -v -o "$out" 2>&1)
check "stop exits 0" test $? -eq 0
echo "$sum" | grep -E '^(stopped|cut|disk|output|live merge)|losses'
check "nothing cut (no cut: line)" bash -c '! grep -q "^cut:" <<<"$1"' _ "$sum"
check_out "summary: what was freed behind the live merge" '^disk: [0-9.]+ [MG]iB of the spools freed near the bound' echo "$sum"
check_out "summary: the zstd output's plain-file hint offers no merge the freed spools cannot make" \
	'^    and this session cannot be merged again \(spool pages were freed behind the live merge\): start with --no-compress' echo "$sum"
check "the session dir stayed within --max-size: peak $peak bytes (<= $MAX)" test "$peak" -le "$MAX"
want="$(seq -s ' ' 0 299) $(seq -s ' ' 0 300) "
got=$(markers "$out")
check "output: all 601 markers once and in order, the 300 before the flood too ($(wc -w <<<"$got") found)" test "$got" = "$want"
check "output: perf script/report: no warnings" e2e_no_warnings "$out" "$sum"
check_out "session.ini: spools_released" '^spools_released=[1-9]' cat "$sess/session.ini"
off=$(tc merge "$sess" -o "$T/offline.data" 2>&1)
check "offline merge of the session dir exits 0" test $? -eq 0
check_out "offline merge: says which pages it lacks (freed behind the live merge)" 'oldest pages freed from the spools near the disk bound after the live merge wrote them .*: [1-9]' echo "$off"
# (a shell function is not seen by check's bash -c: counted here)
noff=$(markers "$T/offline.data" | wc -w)
check "offline merge: some of the 601 markers are not in it (their pages were freed): $noff are" \
	test "$noff" -lt 601
rm -rf "$T/offline.data" "$out"

# --keep-spools: nothing freed; the bound stops the session as before.
sess=$(e2e_start -e 'sched:sched_switch' --max-size 200M --keep-spools)
check_out "start --max-size 200M --keep-spools" "^$VM/sessions/" echo "$sess"
for i in 1 2 3; do e2e_say bgflood; e2e_wait '^vt-e2e: bgflood started' 30; done
for _ in $(seq 600); do
	grep -q '^state=tracing' "$sess/session.ini" || break
	sleep 0.5
done
e2e_say bgstop
e2e_wait '^vt-e2e: bgflood stopped' 60
sum=$(e2e_stop -v -o "$out" 2>&1)
check "keep-spools: stop exits 0" test $? -eq 0
check_out "keep-spools: the bound cut the session" '^cut: --max-size 200.0 MiB \(the option\) reached' echo "$sum"
check "keep-spools: nothing freed" bash -c '! grep -q "of the spools freed" <<<"$1"' _ "$sum"
check "keep-spools: the session dir within --max-size ($(on_disk "$sess") bytes)" test "$(on_disk "$sess")" -le $((200 << 20))
check "guest powers off cleanly" e2e_end
finish
