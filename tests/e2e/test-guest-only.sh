# SPDX-License-Identifier: GPL-2.0-only
# e2e: a guest-only session (start --no-host) on the real guest, stopped (zstd: the default;
# -z says it again); the zstd output must read exactly like a --no-compress merge of the same
# session dir.
. "$(dirname "$0")/lib.sh"

n=200
e2e_init guest-only
check "boot: guest ready, agent waiting" e2e_boot
check_out "start --no-host" "^$VM/sessions/" e2e_start --no-host -e 'sched:sched_switch,sched:sched_wakeup'
check "guest workload ($n lines)" e2e_run "$n"
check_out "status: host perf none" '^host perf: none' e2e_status
sum=$(e2e_stop -o "$T/z.data" -z 2>&1)
st=$?
echo "$sum"
check "stop -z exits 0" test "$st" -eq 0
check "guest powers off cleanly" e2e_end
check_out "summary: no host recording" 'host perf: none \(--no-host\)' echo "$sum"
check_out "summary: losses all 0" '^losses: ring overrun 0 events, ring dropped 0 events, ring missed-events 0 .*, transport 0 pages$' echo "$sum"
check_out "perf header: zstd compressed" 'compressed.*Zstd' "$PERF" report -i "$T/z.data" --header-only
sess=$(e2e_session)
check_out "merge SESSION -o plain --no-compress" 'output: .*bytes\)$' tc merge "$sess" -o "$T/plain.data" --no-compress
check "the plain file has no COMPRESSED record" bash -c '! "$1" report -i "$2" --stats 2>/dev/null | grep -q COMPRESSED' _ "$PERF" "$T/plain.data"
check "the -z file is smaller" test "$(stat -c %s "$T/z.data")" -lt "$(stat -c %s "$T/plain.data")"
check "perf script output identical (-z vs plain)" e2e_same_script "$T/z.data" "$T/plain.data"
check "perf script/report: no warnings (-z)" e2e_no_warnings "$T/z.data"
check "all $n markers present once, in order" e2e_markers "$T/z.data" "$n"
check "only guest events" bash -c '! "$1" script -i "$2" -F event 2>/dev/null | grep -qv "^ *guest_"' _ "$PERF" "$T/z.data"
check_out "only the configured guest events (+ ftrace:print)" "^ *guest_sched:sched_wakeup:" "$PERF" script -i "$T/z.data" -F event
# A host recording whose perf record lost events (a 1-page buffer under a switch storm): the
# merge must say so, not leave it to perf script's warning.
# How busy the host is decides whether one storm overflows the page: try harder up to 3 times.
lossy=
for loops in 30000 100000 300000; do
	"$PERF" record -q -m 1 -a -k CLOCK_MONOTONIC -e sched:sched_switch -e sched:sched_wakeup \
		-e sched:sched_waking -o "$T/lossy.data" -- "$PERF" bench sched pipe -l "$loops" >/dev/null 2>&1
	if "$PERF" report -D -i "$T/lossy.data" 2>/dev/null | grep -q 'PERF_RECORD_LOST'; then
		lossy=1
		break
	fi
done
if [ -n "$lossy" ]; then
	lsum=$(tc merge "$sess" --host-data "$T/lossy.data" -o "$T/lossy-merged.data" 2>&1)
	check_out "merge --host-data: host perf record's losses stated" 'host events lost by perf record .*: [1-9][0-9]*$' echo "$lsum"
else
	fail "could not make perf record lose events with a 1-page buffer (test setup)"
fi
finish
