# SPDX-License-Identifier: GPL-2.0-only
# trace-collector merge SESSION_DIR --guest DIR...: several VMs' guests in one perf.data beside one
# host recording (made here with perf record -a), judged by the real perf 6.1. The guests are
# copies of tests/fixtures/coarse-clock-fork (a real session: ftrace and guest perf of 2 vCPUs),
# each with its own QEMU pid. Then what --guest refuses: a dir that is no session, a dir twice,
# two sessions of one QEMU, more than 16 VMs, --follow.
. "$(dirname "$0")/lib.sh"

[ -x "$PERF" ] || { fail "perf not found at $PERF (install linux-perf)"; finish; exit 1; }
W=$(mktemp -d /tmp/vt-merge-guests.XXXXXX)
trap 'rm -rf "$W"' EXIT
tc() { "$TRACE_COLLECTOR" "$@"; }

# session NAME QEMU_PID: a copy of the fixture session as VM NAME of QEMU QEMU_PID
session() {
	cp -r "$VT_SOURCE_ROOT/tests/fixtures/coarse-clock-fork" "$W/$1" &&
		sed -i "s/^qemu_pid=.*/qemu_pid=$2/; s/^vm=.*/vm=$1/" "$W/$1/session.ini"
}
sessions() { session A 27690 && session B 27701 && session C 27702; }
check "sessions A, B, C (QEMU pids 27690, 27701, 27702)" sessions
record() { "$PERF" record -q -a -e sched:sched_switch -k CLOCK_MONOTONIC -o "$W/host.data" -- sleep 0.2 >"$W/record.log" 2>&1 || { cat "$W/record.log" >&2; return 1; }; }
check "a host recording (perf record -a)" record
# per VM: "PID EVENT COUNT" of the guest lines perf prints
vm_events() { "$PERF" script -i "$1" -F machine_pid,event 2>/dev/null | awk '/^ *VM:/ { sub(/^ *VM: */, ""); sub(/:? *$/, ""); n[$1 " " $2]++ } END { for (k in n) print k, n[k] }' | sort; }
no_warnings() { local e; e=$("$PERF" script -i "$1" -F +machine_pid,+vcpu 2>&1 >/dev/null; "$PERF" report -i "$1" --stdio --sort comm,dso 2>&1 >/dev/null); [ -z "$e" ] || { echo "perf said: $e" >&2; return 1; }; }

# a merge.ini planted as a link (a session dir another user can write): replaced, never followed
echo victim >"$W/victim"
ln -sfn "$W/victim" "$W/A/merge.ini"
check "one VM: merge A" tc merge "$W/A" --host-data "$W/host.data" -o "$W/one.data"
check "a merge.ini planted as a link is replaced by a file" test -f "$W/A/merge.ini" -a ! -L "$W/A/merge.ini"
check "... and the file it pointed to is untouched" test "$(cat "$W/victim")" = victim
sum=$(tc merge "$W/A" --guest "$W/B" --guest "$W/C" --host-data "$W/host.data" -o "$W/three.data" 2>&1)
check "three VMs: merge A --guest B --guest C exits 0" test $? -eq 0
echo "$sum"
check_out "summary: 3 VMs" '^  guests: 3 VMs, each its own perf guest machine' echo "$sum"
check_out "summary: B's events are guest2_*, its pid 27701" '== vm B \(.*/B\): merged, its events guest2_\*' echo "$sum"
check_out "summary: C's events are guest3_*" '== vm C \(.*/C\): merged, its events guest3_\*' echo "$sum"
one=$(vm_events "$W/one.data")
three=$(vm_events "$W/three.data")
echo "A alone: $(tr '\n' ';' <<<"$one")"
echo "three:   $(tr '\n' ';' <<<"$three")"
check "A alone: guest records of pid 27690 only, ftrace and perf" test "$(cut -d' ' -f1-2 <<<"$one" | tr '\n' ' ')" = "27690 cpu-clock:G 27690 guest_ftrace:print 27690 guest_sched:sched_switch "
check "A's records are the same with or without the others" test "$(grep '^27690 ' <<<"$three")" = "$one"
check "B has the same records as A, under its pid and guest2_ names" \
	test "$(grep '^27701 ' <<<"$three" | sed 's/^27701 /27690 /; s/ guest2_/ guest_/')" = "$one"
check "C likewise, under guest3_" test "$(grep '^27702 ' <<<"$three" | sed 's/^27702 /27690 /; s/ guest3_/ guest_/')" = "$one"
check "host records all there" test "$("$PERF" script -i "$W/three.data" -F event 2>/dev/null | grep -c ' sched:sched_switch')" \
	-eq "$("$PERF" script -i "$W/host.data" -F event 2>/dev/null | grep -c 'sched:sched_switch')"
check "perf script -F +machine_pid,+vcpu and perf report --sort comm,dso: no warnings" no_warnings "$W/three.data"
check "time-sorted output" bash -c '"$1" script -i "$2" -F time 2>/dev/null | tr -d " :" | sort -c -g' _ "$PERF" "$W/three.data"
check_out "perf report keeps each VM's guest perf apart: vt-spin in three cpu-clock:G sections" '^3$' \
	bash -c '"$1" report -i "$2" --stdio --sort comm,dso 2>/dev/null | awk "/of event .cpu-clock:G./ { on = 1; seen = 0; next } /of event/ { on = 0 } on && !seen && / vt-spin / { n++; seen = 1 } END { print n + 0 }"' _ "$PERF" "$W/three.data"
check_out "each session's merge.ini lists the VMs" '^vm1.name=B$' cat "$W/C/merge.ini"
check_out "... with their QEMU pids" '^vm2.machine_pid=27702$' cat "$W/A/merge.ini"
check "merge SESSION_DIR --guest DIR OUT (OUT without -o)" tc merge "$W/A" --guest "$W/B" --host-data "$W/host.data" "$W/pos.data"
check "... the same file as with -o" cmp -s <(vm_events "$W/pos.data") <(vm_events "$W/three.data" | grep -v '^27702 ')

# a session whose guest data is unusable (no event formats): left out, said, the others merged
mkdir "$W/D" && sed 's/^qemu_pid=.*/qemu_pid=27703/; s/^vm=.*/vm=D/' "$W/A/session.ini" >"$W/D/session.ini"
dsum=$(tc merge "$W/A" --guest "$W/D" --guest "$W/B" --host-data "$W/host.data" -o "$W/left.data" 2>&1)
check "an unusable --guest: the merge goes on (exit 0)" test $? -eq 0
check_out "... and says it is left out" '== vm D \(.*/D\): LEFT OUT' echo "$dsum"
check "... the others intact (B still guest3_, as given third)" test "$(vm_events "$W/left.data" | grep -v '^27690 ' | sed 's/^27701 /27690 /; s/ guest3_/ guest_/')" = "$one"

# one session whose ring layout disagrees with session.ini (a sub-buffer size the host was not
# told): the host recording merged, the guest's data said not merged, with why
session E 27704 && sed -i 's/^page_size=.*/page_size=16384/' "$W/E/session.ini"
esum=$(tc merge "$W/E" --host-data "$W/host.data" -o "$W/e.data" 2>&1)
check "a guest layout that disagrees: the merge goes on (exit 0)" test $? -eq 0
check_out "... and the summary says the guest data was not merged, and why" \
	'guest: +0 samples written: its data not merged \(guest header_page describes 4096-byte pages, session.ini says 16384\)' echo "$esum"

# refusals: a clear error naming the dir, exit 1, no output
refused() { # DESCRIPTION REGEX ARGS...
	local d=$1 re=$2 out st
	shift 2
	rm -rf "$W/bad.data"
	out=$(tc merge "$@" -o "$W/bad.data" 2>&1)
	st=$?
	if [ $st -ne 0 ] && grep -Eq -- "$re" <<<"$out" && [ ! -e "$W/bad.data" ]; then ok "$d"; else fail "$d: exit $st, /$re/ in: $out"; fi
}
mkdir "$W/empty"
refused "--guest of a missing dir" "--guest $W/nope: no such session dir" "$W/A" --guest "$W/nope"
refused "--guest of a dir that is no session" "--guest $W/empty: not a VM session dir \(no readable session.ini\)" "$W/A" --guest "$W/empty"
refused "--guest SESSION_DIR itself" "given twice \(as SESSION_DIR and as --guest $W/A\)" "$W/A" --guest "$W/A"
refused "the same --guest twice" "given twice \(as --guest and --guest $W/B\)" "$W/A" --guest "$W/B" --guest "$W/B"
ln -s "$W/B" "$W/B-link"
refused "the same dir under another name" "$W/B-link: given twice" "$W/A" --guest "$W/B" --guest "$W/B-link"
session A2 27690
refused "two sessions of one QEMU" "the same QEMU pid 27690: two sessions of one VM" "$W/A" --guest "$W/A2"
many=()
for i in $(seq 16); do ln -s "$W/B" "$W/g$i"; many+=(--guest "$W/g$i"); done
refused "more than 16 VMs" "at most 16 VMs go in one merge" "$W/A" "${many[@]}"
refused "--follow with --guest" "the live merge \(--follow\) follows one session" "$W/A" --guest "$W/B" --follow </dev/null
finish
