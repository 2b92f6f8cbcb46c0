# SPDX-License-Identifier: GPL-2.0-only
# Several VMs in one session (start --name A --name B ..., --all) against fake guests: one host
# recording (the first VM's daemon runs perf, the others name its host.data), status and stop of
# the set by the --name of any of them, members stopped before the host-recording VM, one
# merge; a VM that cannot start is named, and only --allow-partial goes on without it. A
# snapshot of the set: one file of every VM, taken at once; a VM whose snapshot fails is named.
. "$(dirname "$0")/daemon-lib.sh"

command -v perf >/dev/null || { fail "perf not installed (linux-perf): scripts/bootstrap installs it"; finish; exit 1; }
ROOT=$T/vms
FGS=()
group_cleanup() {
	local f pid
	for f in "$RUN"/*.pid; do
		pid=$(head -n 1 "$f" 2>/dev/null)
		[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
	done
	for pid in "${FGS[@]}"; do kill -9 "$pid" 2>/dev/null; done
	cleanup
}
trap group_cleanup EXIT
for v in g1 g2 g3; do mkdir -p "$ROOT/$v" && mkfifos 2 "$ROOT/$v"; done
mkdir -p "$ROOT/not-a-vm" # no ports: --all leaves it out
for v in g1 g2; do # g3 has no guest: its start fails
	"$FAKE_GUEST" --dir "$ROOT/$v" --cpus 2 --pages 40 2>>"$T/fake-guest-$v.log" >"$T/fg-$v.out" &
	FGS+=($!)
done
wait_for 10 bash -c "grep -q . '$T/fg-g1.out' && grep -q . '$T/fg-g2.out'"
gstart() { collector start --vm-root "$ROOT" --run-dir "$RUN" --timeout 3 --clock ptp "$@"; }
daemon_of() { head -n 1 "$RUN/$1.pid"; }
gini() { sed -n "s/^$2=//p" "$1/group.ini"; }

# Options one session of several VMs cannot take, refused before anything starts.
check_out "--dir with several VMs refused, naming --vm-root" "--dir names one VM's dir.*--vm-root" \
	collector start --name g1 --name g2 --dir "$ROOT/g1" --run-dir "$RUN"
check_out "a name given twice refused" "--name g1 is given twice" gstart --name g1 --name g1
check_out "--flight-recorder: not yet for several VMs" "not yet for several VMs" gstart --name g1 --name g2 --flight-recorder 8M
check_out "--live-merge refused for several VMs" "live merge .* is for one VM" gstart --name g1 --name g2 --live-merge
check_out "a VM with no dir is named" "g9: cannot be traced: no VM dir $ROOT/g9" gstart --name g1 --name g9
check "nothing started for it" test ! -e "$RUN/g1.sock"

# Without --allow-partial a VM that cannot start fails the start; the others are stopped.
out=$(gstart --name g1 --name g2 --name g3 2>&1); rc=$?
check "start of g1 g2 g3 fails without --allow-partial (exit $rc)" test $rc -eq 1
check_out "it names g3" "g3: cannot be traced: .*(agent|answer|HELLO|hello)" echo "$out"
check_out "it says --allow-partial goes on" "start failed: g3 cannot be traced.*--allow-partial goes on without it" echo "$out"
wait_for 10 bash -c "! ls '$RUN'/*.sock 2>/dev/null | grep -q ."
check "g1 and g2 were stopped (no daemon socket left)" bash -c "! ls '$RUN'/*.sock 2>/dev/null | grep -q ."

# --all --allow-partial: g1 leads (records the host), g2 is a member, g3 is named.
out=$(gstart --all --allow-partial -e 'fake:*' -o "$T/group.data" 2>&1); rc=$?
check "start --all --allow-partial succeeds (exit $rc)" test $rc -eq 0
echo "$out"
check_out "g3 named: not traced" "g3: not traced: " echo "$out"
check_out "the group line: 2 of 3 VMs, host recorded by g1" "^group [0-9a-f]{16}: 2 of 3 VMs traced, host recorded by g1" echo "$out"
S1=$(grep "^$ROOT/g1/sessions/" <<<"$out"); S2=$(grep "^$ROOT/g2/sessions/" <<<"$out")
check "both session dirs printed" test -f "$S1/session.ini" -a -f "$S2/session.ini"
gid=$(ini "$S1" group)
check "session.ini group= the same id in both ($gid)" test -n "$gid" -a "$(ini "$S2" group)" = "$gid"
check "g1 leads: group_leader empty, host.data its own" test -z "$(ini "$S1" group_leader)" -a "$(ini "$S1" host_data)" = host.data
check "g2 names g1's session as leader" test "$(ini "$S2" group_leader)" = "$S1"
check "g2's host data is g1's recording" test "$(ini "$S2" host_data)" = "$S1/host.data" -a "$(ini "$S2" opt_host)" = file
check "g2 has no host.data of its own" test ! -e "$S2/host.data"
check "no live merge for either" test "$(ini "$S1" opt_live_merge)$(ini "$S2" opt_live_merge)" = 00
check "group.ini is root's, 0600, in g1's session dir" test "$(stat -c %U:%a "$S1/group.ini")" = root:600
check "group.ini: leader g1, 3 VMs, running" test "$(gini "$S1" leader)/$(gini "$S1" vms)/$(gini "$S1" state)" = g1/3/running
check_out "group.ini: g3 failed, with why" "^why_g3=." cat "$S1/group.ini"
check_out "group.ini: g2 a member in $S2" "^vm=g2 member $S2\$" cat "$S1/group.ini"
n1=$(pgrep -P "$(daemon_of g1)" -x perf | wc -l); n2=$(pgrep -P "$(daemon_of g2)" -x perf | wc -l)
check "one host recording: g1's daemon runs perf ($n1), g2's none ($n2)" test "$n1" = 1 -a "$n2" = 0
wait_for 10 bash -c "'$TRACE_COLLECTOR' status --name g2 --run-dir '$RUN' | grep -c '^cpu1 *40 ' | grep -q 2"
st=$(collector status --name g2 --run-dir "$RUN" 2>&1)
echo "$st"
check_out "status --name g2 shows the set" "^group $gid: 2 of 3 VMs traced, host recorded by g1" echo "$st"
check_out "status names g3 NOT TRACED" "^== g3: NOT TRACED: " echo "$st"
check_out "status: g1 records the host" "^== g1: records the host ==" echo "$st"
check "status: both guests' CPUs (2 x cpu1 40 pages)" test "$(grep -c '^cpu1 *40 ' <<<"$st")" = 2
check_out "status with no --name: the set (every session running is in it)" "^group $gid: " collector status --run-dir "$RUN"

# A snapshot of the set: every VM's daemon asked at once, one file with both guests (the
# leader's snapshot dir merged with --guest the member's), the snapshot dirs removed, every VM
# still tracing.
out=$(collector snapshot --name g2 --run-dir "$RUN" -o "$T/snap.data" 2>&1); rc=$?
echo "$out"
check "snapshot of the set by a member's name (exit $rc)" test $rc -eq 0
check_out "both VMs' snapshots taken, asked at once" "^group $gid: 2 of 2 VMs' snapshots taken, asked at once" echo "$out"
check_out "the host line: g1's host.data as far as perf acked a ping" \
	"^host: g1's host.data, its first [0-9]+ bytes \(host perf acked a ping after them\)" echo "$out"
check_out "one file, every VM of the set" "^snapshot: $T/snap.data \(tracing goes on; every VM of the set\)" echo "$out"
pids=$(perf script -i "$T/snap.data" -F machine_pid 2>/dev/null | sed -n 's/^ *VM: *\([0-9]*\).*/\1/p' | sort -u | wc -l)
check "the snapshot holds both guests (machine pids: $pids)" test "$pids" = 2
ev=$(perf script -i "$T/snap.data" -F event 2>/dev/null | sort | uniq -c)
check "both guests' events: guest_fake:tick (g1) and guest2_fake:tick (g2)" \
	bash -c "grep -q 'guest_fake:tick' <<<'$ev' && grep -q 'guest2_fake:tick' <<<'$ev'"
# The host's own events too (the leader's host.data, still being recorded): host tasks'
# sched:sched_switch, not only the guests' guest_* events.
check "host events in the set's snapshot: sched:sched_switch (events: $(echo $ev))" \
	bash -c "grep -qE '[0-9] sched:sched_switch' <<<'$ev'"
check "perf reads the snapshot with no warning" test -z "$(perf script -i "$T/snap.data" 2>&1 >/dev/null)"
check "the snapshot dirs are removed" test ! -e "$S1/snapshot-1" -a ! -e "$S2/snapshot-1"
check "both VMs still trace after it" test "$(collector status --name g1 --run-dir "$RUN" 2>&1 | grep -c '^state: tracing')" = 2
out=$(cd "$T" && collector snapshot --run-dir "$RUN" 2>&1); rc=$?
check "a second snapshot, no --name, default name ./g1-group.snapshot-2.data (exit $rc)" \
	test $rc -eq 0 -a -s "$T/g1-group.snapshot-2.data"

out=$(collector stop --name g2 --run-dir "$RUN" 2>&1); rc=$?
echo "$out"
check "the daemons are gone" bash -c "! ls '$RUN'/*.sock 2>/dev/null | grep -q ."
check_out "stop: members first, then g1" "^== g2: guest ==" echo "$out"
check "g2 stopped before g1's host recording (stopped_mono_ns $(ini "$S2" stopped_mono_ns) < $(ini "$S1" stopped_mono_ns))" \
	test "$(ini "$S2" stopped_mono_ns)" -lt "$(ini "$S1" stopped_mono_ns)"
check_out "g1's host perf stopped at g1's stop" "^host perf: stopped, host.data [0-9.]+ MB" echo "$out"
check "stop merges the set (exit $rc)" test $rc -eq 0
check "both sessions state=merged" test "$(ini "$S1" state)/$(ini "$S2" state)" = merged/merged
pids=$(perf script -i "$T/group.data" -F machine_pid 2>/dev/null | sed -n 's/^ *VM: *\([0-9]*\).*/\1/p' | sort -u | wc -l)
check "one file, both guests (machine pids: $pids)" test "$pids" = 2
check "perf reads it with no warning" test -z "$(perf script -i "$T/group.data" 2>&1 >/dev/null)"

# A set of one traced VM (g3 failed): one merge of g1's session, no --guest.
out=$(gstart --name g1 --name g3 --allow-partial 2>&1); rc=$?
check "start g1 g3 --allow-partial (exit $rc)" test $rc -eq 0
S1=$(grep "^$ROOT/g1/sessions/" <<<"$out")
sleep 0.5
out=$(cd "$T" && collector stop --run-dir "$RUN" 2>&1); rc=$?
echo "$out"
check "stop (no --name) of the set merges g1 (exit $rc)" test $rc -eq 0
check "default output ./g1-group.data, read by perf with no warning" \
	test -s "$T/g1-group.data" -a -z "$(perf script -i "$T/g1-group.data" 2>&1 >/dev/null)"
check "it holds g1's fake guest events" test "$(perf script -i "$T/g1-group.data" -F event 2>/dev/null | grep -c guest_fake:tick)" -gt 0
check "group.ini state=merged" test "$(gini "$S1" state)" = merged
out=$(collector stop --name g1 --run-dir "$RUN" 2>&1); rc=$?
check "a later stop of the merged set fails (exit $rc), stopping and merging nothing" \
	test $rc -eq 1 -a -z "$(grep -E '^(group|== )' <<<"$out")"

# A VM whose snapshot fails (its daemon is gone) is named; the others' snapshot is written
# without it (exit 3), and the set still stops.
out=$(gstart --name g1 --name g2 -e 'fake:*' 2>&1); rc=$?
check "start g1 g2 again (exit $rc)" test $rc -eq 0
S1=$(grep "^$ROOT/g1/sessions/" <<<"$out")
kill -9 "$(daemon_of g2)"
out=$(collector snapshot --name g1 --run-dir "$RUN" -o "$T/snap-g1.data" 2>&1); rc=$?
echo "$out"
check "snapshot without g2: written, exit 3 ($rc)" test $rc -eq 3 -a -s "$T/snap-g1.data"
check_out "g2 named: its daemon did not answer" "g2: no snapshot: its daemon did not answer at $RUN/g2.sock" echo "$out"
check_out "1 of 2 VMs' snapshots taken" "^group [0-9a-f]{16}: 1 of 2 VMs' snapshots taken" echo "$out"
check_out "the file is said to lack g2" "^snapshot: $T/snap-g1.data \(tracing goes on\) WITHOUT g2" echo "$out"
pids=$(perf script -i "$T/snap-g1.data" -F machine_pid 2>/dev/null | sed -n 's/^ *VM: *\([0-9]*\).*/\1/p' | sort -u | wc -l)
check "it holds g1's guest (machine pids: $pids), read with no warning" \
	test "$pids" = 1 -a -z "$(perf script -i "$T/snap-g1.data" 2>&1 >/dev/null)"
check "g1's snapshot dir is removed" test ! -e "$S1/snapshot-1"
out=$(collector stop --name g1 --run-dir "$RUN" -o "$T/group2.data" 2>&1); rc=$?
echo "$out"
check_out "stop names g2's daemon as not answering" "no answer from its daemon at $RUN/g2.sock" echo "$out"
check "g1's daemon is gone after the stop" test ! -e "$RUN/g1.sock"
finish
