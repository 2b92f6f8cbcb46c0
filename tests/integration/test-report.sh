# SPDX-License-Identifier: GPL-2.0-only
# trace-collector report on a real merged session (tests/fuzz/report/real-hog-stall: cut by
# tests/fuzz/capture-report.py from an e2e 'report' run, where report-hog preempted vCPU 1's
# QEMU thread on host CPU 1 for 50 ms at 405.092751982): the text table, --json's fields,
# the filters, bad input, and the --svg picture rendered by a real browser (Debian's chromium,
# headless): every vCPU's lane drawn and each stall red where the JSON puts it. And a guest-only
# session: what the report cannot know, said.
. "$(dirname "$0")/lib.sh"

in=$VT_SOURCE_ROOT/tests/fuzz/report/real-hog-stall
T=$(mktemp -d /tmp/vt-report.XXXXXX)
trap 'rm -rf "$T"' EXIT
tc() { "$TRACE_COLLECTOR" "$@"; }

check_out "text: the hog's stall is the longest, on vCPU 1, preempted by report-hog" \
	'^ +405\.092721206 +1 +50\.200 +preempted +report-hog \(24506\) +1 +vt-spin \(149\)' tc report "$in"
check_out "text: per-vCPU summary" 'vCPU 1 \(VM 23953, thread 23957\): stalled' tc report "$in"
check "--json: the fields of issue 30" bash -c '"$1" report "$2" --json >"$3"' _ "$TRACE_COLLECTOR" "$in" "$T/r.json"
check "--json: stalls and vcpus as documented" python3 - "$T/r.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
need = {'vcpu': int, 'start_ns': int, 'duration_ns': int, 'cause': str, 'culprit_comm': (str, type(None)),
        'culprit_pid': int, 'host_cpu': int, 'guest_task': str, 'guest_pid': int}
for s in d['stalls']:
    for k, t in need.items():
        assert isinstance(s[k], t), (k, s)
    assert s['cause'] in ('preempted', 'host_blocked', 'vm_exit', 'unknown'), s
    assert 'has no sched:sched_wakeup' not in (s['why'] or ''), s  # it has: read before the records
top = max(d['stalls'], key=lambda s: s['duration_ns'])
assert (top['vcpu'], top['start_ns'], top['duration_ns'], top['culprit_comm'], top['culprit_pid'], top['host_cpu'],
        top['guest_task'], top['guest_pid']) == (1, 405092721206, 50199915, 'report-hog', 24506, 1, 'vt-spin', 149), top
v = {x['vcpu']: x for x in d['vcpus']}
assert set(v) == {0, 1} and v[1]['tid'] == 23957 and v[1]['stalled_ns'] >= top['duration_ns'], v
assert v[1]['stalled_preempted_ns'] >= top['duration_ns'] and any(c['comm'] == 'report-hog' for c in v[1]['culprits'])
print(len(d['stalls']), 'stalls, fields ok', file=sys.stderr)
PY
check_out "--vcpu 0: only vCPU 0" '^stalls' bash -c '"$1" report "$2" --vcpu 0 --json | python3 -c "
import json, sys; d = json.load(sys.stdin); assert d[\"stalls\"] and all(s[\"vcpu\"] == 0 for s in d[\"stalls\"]) and [v[\"vcpu\"] for v in d[\"vcpus\"]] == [0]; print(\"stalls ok\")"' _ "$TRACE_COLLECTOR" "$in"
check_out "--min-ms 20 --top 1: the one long stall" '^stalls: 1 over 20.0 ms' tc report "$in" --min-ms 20 --top 1
check_out "a file that is not perf.data: named, exit 1" "cannot read /etc/hostname: .*stop' or 'merge'" \
	bash -c '"$1" report /etc/hostname; echo "exit $?"' _ "$TRACE_COLLECTOR"
check_out "no FILE: exit 2" 'report needs one FILE' bash -c '"$1" report; echo "exit $?"' _ "$TRACE_COLLECTOR"
check_out "--svg with --json refused" 'exclude each other' tc report "$in" --json --svg "$T/x.svg"
# What the file does not hold is said, exit 1, not an empty report that reads as "no stalls".
check_out "--vcpu 9 of a 2-vCPU file: named, exit 1" "--vcpu 9: no VM of .* has it \(its VM has 2 vCPUs, 0\.\.1\).*exit 1" \
	bash -c 'o=$("$1" report "$2" --vcpu 9 2>&1); echo "$o exit $?"' _ "$TRACE_COLLECTOR" "$in"
check_out "an SVG window outside the file: the file's span named, exit 1" \
	"window --from 1000000\.000000 --to 1000001\.000000 s holds nothing of .*: its events run from 40[0-9.]* to 405\.[0-9]* s.*exit 1" \
	bash -c 'o=$("$1" report "$2" --svg "$3" --from 1000000 --to 1000001 2>&1); echo "$o exit $?"' _ "$TRACE_COLLECTOR" "$in" "$T/w.svg"
check_out "--from without --svg: said, exit 2" "--from and --to choose the SVG's window: give --svg OUT.svg too.*exit 2" \
	bash -c 'o=$("$1" report "$2" --from 405 2>&1); echo "$o exit $?"' _ "$TRACE_COLLECTOR" "$in"
check_out "a host recording (no guest): named, exit 1" "holds no guest \(no VM in its ID_INDEX\).*exit 1" \
	bash -c 'o=$("$1" report "$2" 2>&1); echo "$o exit $?"' _ "$TRACE_COLLECTOR" "$VT_SOURCE_ROOT/tests/fuzz/report/host-only-sched-switch"
check_out "an unknown option: one line pointing at --help, exit 2" "^trace-collector: error: invalid option \(see trace-collector report --help\)\$" \
	tc report "$in" --bogus

# A guest-only session with guest perf (tests/fixtures/coarse-clock-fork, a real --no-host
# session, merged here): the report says what it cannot know instead of guessing.
cp -r "$VT_SOURCE_ROOT/tests/fixtures/coarse-clock-fork" "$T/session" # the merge writes merge.ini there
check "merge the guest-only fixture" bash -c '"$1" merge "$2" -o "$3" >/dev/null' _ "$TRACE_COLLECTOR" \
	"$T/session" "$T/guest-only.data"
check_out "guest-only: no host sched_switch, said" 'no host sched:sched_switch events .*no stall can be found' \
	tc report "$T/guest-only.data"
check_out "guest-only: the vCPU threads unknown (the merge's fallback), said" '0 of 2 vCPU threads named' \
	tc report "$T/guest-only.data"
check_out "guest-only --json: no stalls, notes" '^0 stalls, [1-9] notes' bash -c '"$1" report "$2" --json |
	python3 -c "import json, sys; d = json.load(sys.stdin); print(len(d[\"stalls\"]), \"stalls,\", len(d[\"notes\"]), \"notes\")"' \
	_ "$TRACE_COLLECTOR" "$T/guest-only.data"

# The picture in a real browser.
echo victim >"$T/victim"
ln -s "$T/victim" "$T/link.svg"
check_out "--svg onto a symbolic link: refused, named" 'link.svg: it is a symbolic link' bash -c '"$1" report "$2" --svg "$3"; echo "exit $?"' _ "$TRACE_COLLECTOR" "$in" "$T/link.svg"
check "... the file it pointed to untouched" test "$(cat "$T/victim")" = victim
check "--svg" tc report "$in" --svg "$T/r.svg"
# its parts, counted: the legend's three marks and the fixture's two guest tasks (vt-spin,
# trace-agent), a task named on each lane's band, every stall's culprit written (the fixture's
# are wide enough; the longest always is), time from the window's start (0 first)
svg_parts() {
	echo "legend $(grep -c 'class="legend"' "$1"), task names $(grep -o 'class="task"[^<]*<' "$1" | sed 's/.*>//; s/<//' | sort -u | paste -sd, -), \
culprits $(grep -c 'class="culprit"' "$1"), stalls $(grep -c 'class="stall"' "$1"), first tick $(grep -o 'text-anchor="middle">[^<]*' "$1" | head -n 1 | sed 's/.*>//')"
}
check_out "the picture: legend, task names on their bands, each stall's culprit, time from 0" \
	'^legend 5, task names vt-spin, culprits 7, stalls 7, first tick 0(\.0+)?$' svg_parts "$T/r.svg"
chromium=$(command -v chromium || command -v chromium-browser)
if [ -z "$chromium" ]; then
	fail "no chromium to render the picture (scripts/bootstrap installs Debian's chromium)"
else
	h=$(sed -n 's/.*<svg [^>]* height="\([0-9]*\)".*/\1/p' "$T/r.svg")
	check "chromium --headless renders the picture" bash -c 'timeout 120 "$1" --headless --no-sandbox --disable-gpu \
		--hide-scrollbars --force-device-scale-factor=1 --window-size=1400,"$2" --screenshot="$3/r.png" \
		"file://$3/r.svg" >"$3/chromium.log" 2>&1; test -s "$3/r.png" || { tail -n 5 "$3/chromium.log"; exit 1; }' \
		_ "$chromium" "$h" "$T"
	check "the screenshot: both lanes drawn, each stall red where the JSON says, no red where none is" \
		python3 "$VT_SOURCE_ROOT/tests/integration/check-report-png.py" "$T/r.png" "$T/r.svg" "$T/r.json"
fi
finish
