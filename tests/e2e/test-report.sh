# SPDX-License-Identifier: GPL-2.0-only
# e2e: trace-collector report on the real guest, against stalls whose truth is known
# (tests/e2e/lib.sh). vCPU 1's QEMU thread ("CPU 1/TCG") is pinned to host CPU 1 (vCPU 0's to
# CPU 0) and report-hog, pinned there at SCHED_FIFO, burns BURSTS bursts of BURST_MS ms while
# a vt-spin task spins on every vCPU; the hog prints each burst's CLOCK_MONOTONIC span (host
# perf's clock). Then:
#   - >= 90% of the bursts inside vCPU 1's spin (its guest markers) whose switch out and in the
#     host recording holds (7 at least; perf here loses many switches) are stalls of vCPU 1 of
#     0.5-1.5x their length, culprit report-hog;
#   - no stall named after the hog lies outside its bursts (but for its start-up: exec and
#     pinning, in the second before its "ready" line);
#   - 5 more bursts while the guest is idle: at most one of them is a stall (idle is not);
#   - a sample of the other stalls starts at a host sched_switch out of that vCPU thread
#     (perf script's raw events), skipping anything before the thread's first switch;
#   - the text, --json and --svg outputs agree; the stop summary has its stalls line.
#   test-report.sh HOG [BURSTS BURST_MS GAP_MS]   (REPORT_KEEP=DIR keeps the merged file)
. "$(dirname "$0")/lib.sh"

hog=$1 bursts=${2:-10} burst_ms=${3:-50} gap_ms=${4:-200}
e2e_init report
out=$T/out.data

check "boot 2 vCPUs" e2e_boot --cpus 2
check_out "start (host sched_switch + sched_wakeup)" "^$VM/sessions/" \
	e2e_start -e 'sched:sched_switch' --host-events 'sched:sched_switch,sched:sched_wakeup'
# After the start, which may have booted the guest again (lib.sh); before the spin.
qpid=$(e2e_qemu_pid)
tids=($(e2e_vcpu_tids "$qpid" 2))
check "QEMU's vCPU threads found (${tids[*]:-none})" test "${#tids[@]}" -eq 2
check "pin vCPU 0's thread to host CPU 0" taskset -p -c 0 "${tids[0]}"
check "pin vCPU 1's thread to host CPU 1" taskset -p -c 1 "${tids[1]}"
# QEMU's other threads (main loop, I/O) stay off CPU 1: the hog then takes vCPU 1's CPU and
# nothing vCPU 1 waits for.
for t in /proc/"$qpid"/task/*; do
	[ "${t##*/}" = "${tids[1]}" ] || taskset -p -c 0 "${t##*/}" >/dev/null
done
# A busy shared host preempts the vCPU threads on its own; the most weight CFS gives keeps their
# stalls short beside the hog's (which are the ones the test knows). Not SCHED_FIFO: a spinning
# real-time vCPU thread and the hog together exhaust CPU 1's real-time budget (95%), and the
# throttled hog then stops inside its bursts while CFS tasks run (seen: a burst's stall named
# after them, rightly).
renice -n -20 -p "${tids[@]}" >/dev/null
e2e_say "spin $((2 * bursts * (burst_ms + gap_ms) + 4000))" # outlasts the bursts on a slow host too
sleep 1
"$hog" 1 "$bursts" "$burst_ms" "$gap_ms" >"$T/hog.txt"
check "report-hog ran $bursts bursts on host CPU 1" test "$(grep -c '^burst ' "$T/hog.txt")" -eq "$bursts"
check "guest: vt-spin done" e2e_wait "^vt-e2e: spin done [0-9]+ status 0" 60
# The same bursts on a quiet guest: an idle vCPU is not stalled, whatever holds its thread.
sleep 0.5
"$hog" 1 5 "$burst_ms" "$gap_ms" >"$T/hog-quiet.txt"
sleep 2 # guest records after them (the agent's flushes): the quiet bursts are judged
sum=$(e2e_stop -o "$out" 2>&1)
check "stop exits 0" test $? -eq 0
echo "$sum"
check "guest powers off cleanly" e2e_end
[ -n "${REPORT_KEEP:-}" ] && mkdir -p "$REPORT_KEEP" && cp -r "$out" "$T/hog.txt" "$REPORT_KEEP/" &&
	echo "${tids[*]}" >"$REPORT_KEEP/tids"

check_out "stop summary: the stalls line" '^stalls: +[0-9]+ over 1.0 ms, [0-9.]+ s in all; longest' echo "$sum"
check "report --json" bash -c '"$1" report "$2" --json >"$3"' _ "$TRACE_COLLECTOR" "$out" "$T/report.json"
text=$(tc report "$out" --vcpu 1 --top 20 2>&1)
echo "$text" | head -n 30
check_out "report (text): the longest stalls table names report-hog on vCPU 1" '^ +[0-9.]+ +1 +[0-9.]+ +preempted +report-hog' echo "$text"
check_out "report (text): per-vCPU summary with culprit shares" 'culprits: .*report-hog \([0-9]+\) [0-9.]+%' echo "$text"
"$PERF" script -i "$out" --ns -F time,event,trace 2>/dev/null | grep -F ' sched:sched_switch:' >"$T/switches.txt"
check "the host's raw sched_switch events ($(wc -l <"$T/switches.txt"))" test -s "$T/switches.txt"
# vCPU 1's spin window (its markers, as perf prints them): the guest had work there.
win=$(e2e_spin_lines "$out" | awk '$1 == 1 && $2 == "b" { b = $3 } $1 == 1 && $2 == "e" { e = $3 } END { print b, e }')
check "vCPU 1's vt-spin window from its markers ($win)" test -n "${win#* }" -a -n "${win% *}"
check "report: the hog's bursts are vCPU 1's stalls (>= 90%, 0.5-1.5x, culprit report-hog), none of it elsewhere; a sample of the other stalls starts and ends at real switches of that vCPU's thread" \
	python3 - "$T/report.json" "$T/hog.txt" "$T/switches.txt" "${tids[0]}" "${tids[1]}" "$T/hog-quiet.txt" $win <<'PY'
import json, random, re, sys
rep = json.load(open(sys.argv[1]))
hog = open(sys.argv[2]).read().split('\n')
hog_tid = int(hog[0].split()[1])
ready = [int(l.split()[1]) for hf in (hog, open(sys.argv[6]).read().split('\n')) for l in hf if l.startswith('ready ')]
all_bursts = [tuple(map(int, l.split()[1:3])) for l in hog if l.startswith('burst ')]
w0, w1 = float(sys.argv[7]) * 1e9, float(sys.argv[8]) * 1e9
bursts = [(s, e) for s, e in all_bursts if w0 < s and e < w1]  # the guest had work on vCPU 1
tids = {0: int(sys.argv[4]), 1: int(sys.argv[5])}
# The raw events: each sampled stall is a switch out of the thread (prev_pid) at start_ns and
# its next switch in (next_pid) at end_ns, with no switch in between; nothing before the
# thread's first switch.
ev = {t: [] for t in tids.values()}
pat = re.compile(r'(\d+)\.(\d{9}): +sched:sched_switch: .*prev_pid=(\d+) .*next_pid=(\d+)')
for line in open(sys.argv[3]):
    m = pat.search(line)
    if not m:
        continue
    t = int(m.group(1)) * 10**9 + int(m.group(2))
    for pid, kind in ((int(m.group(3)), 'out'), (int(m.group(4)), 'in')):
        if pid in ev:
            ev[pid].append((t, kind))
print(f"{len(bursts)} of {len(all_bursts)} bursts inside vCPU 1's spin", file=sys.stderr)
# A burst the host recording can show: the thread's last switch before it is a switch out and
# its next one a switch in after it (this host's perf loses many switches, e.g. out of the idle
# task: an interval without its pair cannot be reported by anything reading the file).
def shown(s, e):
    x = ev[tids[1]]
    i = max((k for k, (t, _) in enumerate(x) if t <= s + 1000000), default=None)
    return i is not None and x[i][1] == 'out' and i + 1 < len(x) and x[i + 1][1] == 'in' and x[i + 1][0] >= e - 1000000
unshown = [(s, e) for s, e in bursts if not shown(s, e)]
bursts = [(s, e) for s, e in bursts if shown(s, e)]
print(f"{len(bursts)} of them with their switch out and in in the host recording (not: {[round(s / 1e9, 6) for s, e in unshown]})", file=sys.stderr)
stalls = rep['stalls']
ok = 0
for s, e in bursts:
    m = [x for x in stalls if x['vcpu'] == 1 and x['culprit_pid'] == hog_tid and x['start_ns'] < e and x['start_ns'] + x['duration_ns'] > s]
    best = max(m, key=lambda x: min(e, x['start_ns'] + x['duration_ns']) - max(s, x['start_ns']), default=None)
    ratio = best['duration_ns'] / (e - s) if best else 0
    good = best is not None and 0.5 <= ratio <= 1.5
    ok += good
    print(f"burst {s / 1e9:.9f} {(e - s) / 1e6:.3f} ms: " + (f"stall at {best['start_ns'] / 1e9:.9f}, {best['duration_ns'] / 1e6:.3f} ms ({ratio:.2f}x), {best['cause']}" if best else "no stall") + ("" if good else "  <-- MISSED"), file=sys.stderr)
    if not good:
        for x in stalls:
            if x['vcpu'] == 1 and x['start_ns'] < e and x['start_ns'] + x['duration_ns'] > s:
                print(f"    overlapping stall of vCPU 1: {x}", file=sys.stderr)
print(f"{ok} of {len(bursts)} bursts reported", file=sys.stderr)
quiet = [tuple(map(int, l.split()[1:3])) for l in open(sys.argv[6]) if l.startswith('burst ')]
hit = [(s, e) for s, e in quiet if any(x['start_ns'] < e and x['start_ns'] + x['duration_ns'] > s for x in stalls if x['vcpu'] == 1)]
print(f"{len(hit)} of {len(quiet)} bursts on the idle guest overlap a stall of vCPU 1", file=sys.stderr)
bad = len(hit) > 1 or len(quiet) != 5
for x in stalls:
    if x['culprit_pid'] != hog_tid or any(r - 10**9 <= x['start_ns'] <= r for r in ready):
        continue  # another culprit, or the hog's start-up (exec, before it pinned itself)
    if not any(x['start_ns'] < e + 1000000 and x['start_ns'] + x['duration_ns'] > s - 1000000 for s, e in all_bursts + quiet):
        bad += 1
        print(f"stall named after report-hog outside its bursts: {x}", file=sys.stderr)
random.seed(1)
sample = random.sample(stalls, min(40, len(stalls)))
checked = wrong = skipped = 0
for x in sample:
    e = ev[tids[x['vcpu']]]
    start, end = x['start_ns'], x['start_ns'] + x['duration_ns']
    if not e or start < e[0][0]:
        skipped += 1
        continue
    checked += 1
    outs = [t for t, k in e if k == 'out' and abs(t - start) <= 2000]
    ins = [t for t, k in e if k == 'in' and abs(t - end) <= 2000]
    between = [t for t, k in e if k == 'in' and start + 2000 < t < end - 2000]
    if not outs or not ins or between:
        wrong += 1
        print(f"stall not backed by the raw switches (out {outs}, in {ins}, in between {between[:3]}): {x}", file=sys.stderr)
for s, e in bursts:  # a missed burst: the thread's raw switches around it, to see why
    if not any(x['vcpu'] == 1 and x['culprit_pid'] == hog_tid and x['start_ns'] < e and x['start_ns'] + x['duration_ns'] > s for x in stalls):
        print(f"    raw switches of vCPU 1's thread around {s / 1e9:.9f}: {[(t / 1e9, k) for t, k in ev[tids[1]] if s - 5 * 10**6 <= t <= e + 5 * 10**6]}", file=sys.stderr)
print(f"notes: {rep['notes']}", file=sys.stderr)
print(f"{len(stalls)} stalls; {checked} sampled checked against perf script, {skipped} skipped, {wrong} wrong; {int(bad)} hog stalls outside bursts", file=sys.stderr)
sys.exit(0 if len(bursts) >= 7 and ok * 10 >= 9 * len(bursts) and bad == 0 and wrong == 0 and checked > 0 else 1)
PY
check "report --svg" tc report "$out" --svg "$T/report.svg"
check_out "the picture has a lane per vCPU and the hog's stalls" 'lanes 2, hog stalls [1-9]' bash -c \
	'echo "lanes $(grep -c "<g class=\"lane\"" "$1"), hog stalls $(grep -c "culprit report-hog" "$1")"' _ "$T/report.svg"
finish
