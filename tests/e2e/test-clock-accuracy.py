#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""e2e: accuracy of the ptp clock method in the real test guest, checked with hold-out probes.

trace-collector start --clock ptp --holdout-probes: besides the fitted probes, each period the
daemon sends one marked probe; the agent writes 'vt-probe ID' into the guest trace, and the
host logs when it sent the probe and when the reply came (clock.holdout, never fitted). After
stop (which merges, host perf record -k CLOCK_MONOTONIC included) every marker's converted
timestamp in the merged perf.data, read by perf script, must lie between its two host times.
Prints the violations (must be 0), the median and worst distance to the interval's midpoint,
and the control port's round-trip times.
With --live the session runs --live-merge: the markers are converted while tracing, with the
fit of the probes so far, and must lie between their probe's times widened by the error bound
the session states (a fit with fewer samples on a marker's far side is less exact).
With --kvm (inside tests/e2e/kvm-l1's L1, the guest under KVM) the start takes every default but
--holdout-probes: clock auto must choose kvm, and each marker must lie between its probe's times
widened by the bound the session states; the markers are counted per vCPU. The test guest loads
ptp_kvm: where it works (the host's clocksource is its TSC) every hold-out probe's times are
narrowed to the guest's KVM PTP clock's reading of the host's time around the marker, a check of
the kvm method that does not go through KVM's TSC offsets and is microseconds wide instead of the
control port's milliseconds; where it cannot (an unstable host TSC) the guest has no PTP clock and
nothing is narrowed.
With --kvm-ptp (under KVM too) the start takes --clock ptp --holdout-probes and every other default:
every fitted and hold-out probe narrowed by the PTP clock, the markers inside the stated bound.
  usage: test-clock-accuracy.py [--seconds N] [--interval SEC] [--result FILE] [--live | --kvm | --kvm-ptp]"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2elib import PERF, collector, fail, main as e2e_main, ok  # noqa: E402

MARK_RE = re.compile(r"^\s*(?:VCPU:\s*\d+\s+)?(\d+)\.(\d{9}):\s+guest_ftrace:print:.*vt-probe (\d+)")
CLOCKSOURCES = "/sys/devices/system/clocksource/clocksource0/available_clocksource"
VCPU_RE = re.compile(r"VCPU:\s*(\d+)")


def read_probes(path):
    """{id: (send, guest, recv)} from clock.samples / clock.holdout lines."""
    out = {}
    with open(path) as f:
        for line in f:
            i, s, g, r = (int(x) for x in line.split())
            out[i] = (s, g, r)
    return out


def pct(values, p):
    v = sorted(values)
    return v[min(len(v) - 1, int(p / 100 * len(v)))]


def record(g, tmp, seconds, interval, live, kvm):
    run_dir, out = f"{tmp}/run", f"{tmp}/merged.data"
    os.makedirs(run_dir)
    if kvm == "kvm-ptp":  # every default but the clock and the hold-out probes
        args = ["--clock", "ptp", "--holdout-probes", "-o", out]
    elif kvm:  # every default (clock auto, events, host recording, live merge) but the hold-out probes
        args = ["--holdout-probes", "-o", out]
    else:
        args = ["--clock", "ptp", "--probe-interval", str(interval), "--holdout-probes", "-e", "sched:sched_switch",
                "--host-events", "sched:sched_switch", "-o", out, *(["--live-merge"] if live else ["--no-live-merge"])]
    r = collector("start", "--name", "vt-e2e", "--dir", g.dir, "--run-dir", run_dir, *args, timeout=120)
    if r.returncode != 0:
        fail(f"trace-collector start failed ({r.returncode}): {r.stderr}")
    session = r.stdout.strip().splitlines()[-1]
    ok(f"session started: {session}")
    g.say("go\n")
    time.sleep(seconds)
    st = collector("status", "--name", "vt-e2e", "--run-dir", run_dir, timeout=30)
    if kvm == "kvm":
        return record_kvm(g, session, out, run_dir, st)
    if kvm == "ptp":  # KVM on a host whose TSC is unstable: auto took ptp, and said why
        log = open(f"{session}/collector.log").read()
        if not re.search(r"kvm clock method unusable \(the host's TSC is not among its clocksources .*\): using ptp", log):
            fail(f"clock auto on a host with an unstable TSC did not say why it left kvm:\n{log}")
        ok("clock auto: kvm left for ptp, the host's unstable TSC named")
    if not re.search(r"^clock: ptp, \d+ probe samples", st.stdout, re.M):
        fail(f"status does not state the clock fit:\n{st.stdout}{st.stderr}")
    ok("status states method, samples, error bound: " + re.search(r"^clock: .*$", st.stdout, re.M).group(0))
    r = collector("stop", "-v", "--name", "vt-e2e", "--run-dir", run_dir, timeout=180)  # -v: the merge's full summary
    g.say("end\n")
    if r.returncode != 0:
        fail(f"trace-collector stop failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    m = re.search(r"^clock: ptp, (\d+) probe samples \((\d+) used\), error bound (\d+) ns.*\(clock\.ini\)$",
                  r.stdout, re.M)
    if not m:
        fail(f"stop's summary does not state the fit:\n{r.stdout}")
    ok("stop's summary: " + m.group(0))
    if not re.search(r"clock: +aligned \(ptp, \d+ segments, \d+ samples, error bound \d+ ns\)$", r.stdout, re.M):
        fail(f"the merge did not apply clock.ini:\n{r.stdout}")
    ok("the merge applied clock.ini (aligned, not recovered)")
    bound = final = int(m.group(3))
    check_phc(g, r.stdout, kvm, int(m.group(1)))
    if live or kvm == "kvm-ptp":
        # At least one fit while tracing (a live fit waits for probes over 5 s), then the end's.
        lm = re.search(r"^  live: +merged while tracing; clock fitted (\d+) times .*error bounds up to (\d+) ns",
                       r.stdout, re.M)
        if not lm or int(lm.group(1)) < 1:
            fail(f"stop did not hand out a merge made while tracing:\n{r.stdout}")
        ok(f"stop handed out the live merge ({lm.group(1)} fits of the probes so far, their bounds up to "
           f"{lm.group(2)} ns)")
        bound = max(bound, int(lm.group(2)))  # the bound that held for what was converted live
    return session, out, final, bound


def record_kvm(g, session, out, run_dir, st):
    """The kvm method's status and stop lines; returns as record does."""
    if not re.search(r"^clock: kvm \(host TSC → perf clock by [^)]*\), \d+ readings of 2 vCPUs", st.stdout, re.M):
        fail(f"status does not state the kvm method (clock auto under KVM):\n{st.stdout}{st.stderr}")
    ok("status: " + re.search(r"^clock: .*$", st.stdout, re.M).group(0))
    r = collector("stop", "-v", "--name", "vt-e2e", "--run-dir", run_dir, timeout=180)
    g.say("end\n")
    if r.returncode != 0:
        fail(f"trace-collector stop failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    m = re.search(r"^clock: kvm \(host TSC → perf clock by [^)]*\), (\d+) readings of 2 vCPUs in kvm.samples, "
                  r"error bound (\d+) ns.*\(clock\.ini\)$", r.stdout, re.M)
    if not m:
        fail(f"stop's summary does not state the kvm readings:\n{r.stdout}")
    ok("stop's summary: " + m.group(0))
    if not re.search(r"clock: +aligned \(kvm, 0 segments, \d+ samples, error bound \d+ ns\)$", r.stdout, re.M):
        fail(f"the merge did not apply clock.ini:\n{r.stdout}")
    ok("the merge applied clock.ini (kvm, aligned)")
    check_phc(g, r.stdout, "kvm", 0)
    return session, out, int(m.group(2)), int(m.group(2))


PHC_RE = re.compile(r"; the guest's KVM PTP clock \(ptp_kvm\) narrowed (\d+) probes and (\d+) hold-out probes")


def check_phc(g, summary, kvm, fitted):
    """What the guest's KVM PTP clock did: under KVM with a stable host TSC (kvm, kvm-ptp) it
    narrowed every probe; with an unstable one (ptp) the guest has no such clock; under TCG none."""
    line = re.search(r"^clock: .*$", summary, re.M).group(0)
    m = PHC_RE.search(line)
    has = "vt-e2e: ptp_kvm: KVM virtual PTP" in g.console()
    if kvm in ("kvm", "kvm-ptp"):
        if not has:
            fail("the test guest under KVM with the host's TSC as clocksource has no KVM PTP clock (its console "
                 "has no 'ptp_kvm: KVM virtual PTP')")
        if not m or int(m.group(1)) != fitted or int(m.group(2)) < 5 or "round trip: not used" in line:
            fail(f"the KVM PTP clock did not narrow every probe ({fitted} fitted, the hold-outs): {line}")
        ok(f"the guest's KVM PTP clock narrowed all {m.group(1)} fitted and {m.group(2)} hold-out probes")
    elif m or has:
        fail(f"a KVM PTP clock where there should be none ({kvm or 'TCG'}): {line}")
    elif kvm == "ptp":
        ok("no KVM PTP clock in the guest (ptp_kvm refuses a host whose clocksource is not its TSC): plain probes")


def check_session_ini(session, bound, method="ptp"):
    ini = dict(l.split("=", 1) for l in open(f"{session}/session.ini").read().splitlines() if "=" in l)
    if ini.get("clock_method") != method or (method == "ptp" and int(ini.get("clock_samples", 0)) < 64) \
       or int(ini.get("clock_error_bound_ns", -1)) != bound:
        fail(f"session.ini clock keys: {ini.get('clock_method')} {ini.get('clock_samples')} {ini.get('clock_error_bound_ns')}")
    ok(f"session.ini: clock_method={method} clock_samples={ini['clock_samples']} clock_error_bound_ns={bound}")


def check_markers(session, out, bound=0):
    holdout = read_probes(f"{session}/clock.holdout")
    fitted = read_probes(f"{session}/clock.samples")
    if set(holdout) & set(fitted):
        fail("hold-out probe ids also in clock.samples")
    if len(holdout) < 5:
        fail(f"only {len(holdout)} hold-out probes in clock.holdout")
    ok(f"{len(holdout)} hold-out probes in clock.holdout, none among the {len(fitted)} fitted")
    ps = subprocess.run([PERF, "script", "-i", out, "--ns", "-F", "time,event,trace,vcpu"],
                        capture_output=True, text=True)
    if ps.returncode != 0:
        fail(f"perf script failed: {ps.stderr}")
    marks, vcpu_of = {}, {}
    for line in ps.stdout.splitlines():
        m = MARK_RE.match(line)
        if m:
            marks[int(m.group(3))] = int(m.group(1)) * 10**9 + int(m.group(2))
            v = VCPU_RE.search(line)
            vcpu_of[int(m.group(3))] = int(v.group(1)) if v else -1
    missing = sorted(set(holdout) - set(marks))
    if missing or not marks:
        fail(f"{len(marks)} markers in the merged file; hold-out probes without one: {missing[:10]}")
    unlogged = sorted(set(marks) - set(holdout))
    if unlogged:
        fail(f"markers without their probe's times in clock.holdout (the daemon dropped the reply): {unlogged[:10]}")
    ok(f"all {len(marks)} hold-out markers found in the merged perf.data")
    viol, dist, within = [], [], []
    for k, t in sorted(marks.items()):
        s, _, r = holdout[k]
        if not s <= t <= r:
            (within if s - bound <= t <= r + bound else viol).append((k, t - s, r - t))
        dist.append(abs(t - (s + r) / 2))
    rtts = [r - s for s, _, r in list(fitted.values()) + list(holdout.values())]
    # Markers whose probe came back fast bracket the true time tightly: their distance to the
    # midpoint shows the fit's error rather than the probe's own latency.
    fast = statistics.median(r - s for s, _, r in (fitted or holdout).values()) * 2  # kvm: no fitted probes
    tight = [abs(t - (holdout[k][0] + holdout[k][2]) / 2) for k, t in marks.items()
             if holdout[k][2] - holdout[k][0] <= fast]
    res = {
        "markers": len(marks), "violations": len(viol), "outside_within_bound": len(within),
        "median_mid_ns": int(statistics.median(dist)), "worst_mid_ns": int(max(dist)),
        "rtt_min_ns": min(rtts), "rtt_median_ns": int(statistics.median(rtts)), "rtt_p99_ns": pct(rtts, 99),
        "probes": len(rtts), "holdout_rtt_median_ns": int(statistics.median(r - s for s, _, r in holdout.values())),
        "tight_markers": len(tight), "tight_median_mid_ns": int(statistics.median(tight)) if tight else -1,
        "tight_worst_mid_ns": int(max(tight)) if tight else -1,
    }
    for c in sorted(set(vcpu_of.values())):
        res[f"vcpu{c}_markers"] = sum(1 for k in marks if vcpu_of[k] == c)
        res[f"vcpu{c}_violations"] = sum(1 for k, _, _ in viol if vcpu_of[k] == c)
    print("RESULT " + " ".join(f"{k}={v}" for k, v in res.items()), flush=True)
    if viol:
        fail(f"{len(viol)} markers outside [host send{' - bound' if bound else ''}, host reply"
             f"{' + bound' if bound else ''}] (id, after send, before reply): {viol[:5]}")
    if within:
        ok(f"{len(within)} markers outside their probe's times by less than the stated error bound "
           f"({bound} ns): {within[:5]}")
    ok("every marker lies between its probe's host send and reply times" +
       (" (widened by the stated error bound)" if bound else ""))
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, help="default 8, --live 14 (a live fit needs probes over 5 s)")
    ap.add_argument("--interval", type=float, default=0.25)
    ap.add_argument("--result")
    ap.add_argument("--keep", help="copy the session's clock files here (for analysis)")
    ap.add_argument("--live", action="store_true", help="start --live-merge: the markers converted while tracing")
    ap.add_argument("--kvm", action="store_true",
                    help="under KVM (tests/e2e/kvm-l1): every start default, --clock auto must take kvm; "
                         "the markers must lie inside their probe's times widened by its stated bound")
    ap.add_argument("--kvm-ptp", action="store_true",
                    help="under KVM: --clock ptp, every probe narrowed by the guest's KVM PTP clock")
    a = ap.parse_args()
    if a.seconds is None:
        a.seconds = 30 if a.kvm or a.kvm_ptp else 14 if a.live else 8  # kvm: the default 3 s probe period

    def body(g, tmp):
        g.wait("guest up, agent started", "vt-e2e: waiting for go", 90)
        # Under KVM, clock auto takes kvm where the host's TSC is a clocksource, ptp where it is not.
        kvm = "kvm-ptp" if a.kvm_ptp else a.kvm and ("kvm" if "tsc" in open(CLOCKSOURCES).read().split() else "ptp")
        if a.kvm:
            ok(f"the host's clocksources: {open(CLOCKSOURCES).read().strip()}; expecting clock {kvm}")
        session, out, final, bound = record(g, tmp, a.seconds, a.interval, a.live, kvm)
        check_session_ini(session, final, "kvm" if kvm == "kvm" else "ptp")
        if a.kvm_ptp and "tsc" not in open(CLOCKSOURCES).read().split():
            fail("--kvm-ptp needs a host whose TSC is a clocksource (ptp_kvm refuses others)")
        if a.keep:
            os.makedirs(a.keep, exist_ok=True)
            for f in ("clock.samples", "clock.holdout", "clock.ini", "session.ini", "live-merge.log"):
                subprocess.run(["cp", f"{session}/{f}", a.keep], check=False)
            with open(f"{a.keep}/markers.txt", "w") as mf:
                subprocess.run([PERF, "script", "-i", out, "--ns", "-F", "time,event,trace"], stdout=mf)
        # Live, each marker was converted with the fit of the probes before it (fewer samples
        # on its far side than the final fit): it must hold the stated error bound (the largest
        # of the live fits' and the final one's).
        res = check_markers(session, out, bound if a.live or a.kvm or a.kvm_ptp else 0)
        res["error_bound_ns"] = final
        res["live_error_bound_ns"] = bound if a.live else 0
        if a.result:
            with open(a.result, "w") as f:
                f.write(" ".join(f"{k}={v}" for k, v in res.items()) + "\n")

    return e2e_main("clock accuracy", "vt-e2e-clock.", "guest-clock.sh", body)


if __name__ == "__main__":
    sys.exit(main())
