#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Summaries of bench/vm-bench.py results.txt files (markdown rows for bench/RESULTS.md).
usage: summarize.py overhead|throughput|cost|tcfifo|hostcost RESULTS.txt"""
import re
import statistics
import sys

T95 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26, 10: 2.23,
       11: 2.20, 12: 2.18, 15: 2.13, 20: 2.09}


def kv(line):
    return dict(re.findall(r"(\w+)=('[^']*'|\S+)", line))


def ci(xs):
    n = len(xs)
    m = statistics.mean(xs)
    if n < 2:
        return m, float("nan")
    t = T95.get(n - 1, 2.0)
    return m, t * statistics.stdev(xs) / n ** 0.5


def overhead(lines):
    rows = [kv(l) for l in lines if l.startswith("mode=")]
    by = {}
    for r in rows:
        by.setdefault(int(r["round"]), {})[r["mode"]] = r
    rounds = [by[k] for k in sorted(by) if len(by[k]) == 4]
    print(f"rounds: {len(rounds)}")
    for mode in ("agent", "cat", "off"):
        ov = [100.0 * (1 - int(r[mode]["score"]) / int(r["native"]["score"])) for r in rounds]
        m, h = ci(ov)
        print(f"| {mode} vs native | {statistics.median(ov):.1f}% | {m:.1f}% ± {h:.1f}% | "
              f"{min(ov):.1f}% … {max(ov):.1f}% |")
    scores = {m: [int(r[m]["score"]) for r in rounds] for m in ("native", "agent", "cat", "off")}
    for m, s in scores.items():
        print(f"score {m}: median {statistics.median(s) / 1e6:.1f} M, min {min(s) / 1e6:.1f}, max {max(s) / 1e6:.1f}")
    secs = [float(r["native"]["wall"].split(":")[1]) - float(r["native"]["wall"].split(":")[0]) for r in rounds]
    ev = {m: [int(r[m]["events"]) for r in rounds] for m in ("native", "agent", "cat")}
    for m in ("agent", "cat"):
        ratio = [a / n for a, n in zip(ev[m], ev["native"])]
        print(f"events {m}/native: median {statistics.median(ratio):.3f} (min {min(ratio):.3f} max {max(ratio):.3f}); "
              f"native median {statistics.median(ev['native'])} events per rep")
    ncpu = 2
    ag = [100.0 * int(r["agent"]["reader_ns"]) / 1e9 / (float(r["agent"]["wall"].split(":")[1]) - float(r["agent"]["wall"].split(":")[0])) for r in rounds]
    print(f"agent CPU during the rep (schedstat, all threads) as % of ONE vCPU: median {statistics.median(ag):.3f}% "
          f"(min {min(ag):.3f} max {max(ag):.3f})")
    cat = [100.0 * int(r["cat"]["reader_ns"]) / 1e9 / (float(r["cat"]["wall"].split(":")[1]) - float(r["cat"]["wall"].split(":")[0])) for r in rounds]
    print(f"cat readers CPU during the rep as % of ONE vCPU (both cats): median {statistics.median(cat):.1f}% "
          f"(min {min(cat):.1f} max {max(cat):.1f})")
    st = [int(r["agent"]["agent_step_ticks"]) / 100.0 for r in rounds]
    print(f"agent CPU s per whole session step (start+config+metadata+rep+stop, ticks): median {statistics.median(st):.2f} s "
          f"(min {min(st):.2f} max {max(st):.2f})")
    hosts = [kv(l) for l in lines if l.startswith("host mode=agent")]
    if hosts:
        d = [float(h["daemon_run_s"]) for h in hosts]
        s = [float(h["stop_s"]) for h in hosts]
        print(f"daemon CPU per session (schedstat): median {statistics.median(d) * 1e3:.1f} ms; "
              f"stop wall median {statistics.median(s) * 1e3:.0f} ms; spooled median "
              f"{statistics.median(int(h['spooled']) for h in hosts) / 1e6:.2f} MB; "
              f"losses: {sorted(set(h['summary'].count('0 lost in transport') for h in hosts))} CPUs with 0 transport loss, "
              f"ring_overrun max {max(int(h['ring_overrun']) for h in hosts)}")
    loads = [float(r["load"].split(",")[0]) for rr in rounds for r in rr.values()]
    print(f"host load (1 min) during the run: {min(loads):.2f} … {max(loads):.2f}")


def throughput(lines):
    host = [kv(l) for l in lines if l.startswith("host ")]
    hi = 0
    print("| kind | kb | rate KB/s/vCPU | produced MB | guest s | MB/s/vCPU | MB/s total | ring overrun | sent pages→spooled | transport lost | reader CPU s | reader CPU s/GB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for l in lines:
        if not l.startswith("kind="):
            if l.startswith("host "):
                hi += 1
            continue
        r = kv(l)
        if r["kind"] == "port":
            print(f"| port ×{r['ports']} | | | | | | {l.split('mbps ')[1].split()[0]} | | | | | |")
            continue
        h = host[hi - 1]
        load = r["load"].strip("'")
        nums = re.findall(r"cpu\d+ (\d+)", load)
        if r["rate"] == "fn":
            produced = None
        else:
            produced = sum(int(x) for x in nums)
        secs = 5.0
        if r["kind"] == "agent":
            moved = int(h["bytes_sent"])
            cpu = int(r["stream_ticks"]) / 100.0
            lost = re.findall(r"(\d+) lost in transport", h["summary"])
            print(f"| agent | {r['kb']} | {r['rate']} | {produced / 1e6 if produced else 0:.1f} | {secs} | "
                  f"{moved / 1e6 / secs / 2:.2f} | {moved / 1e6 / secs:.2f} | {h['ring_overrun']} | "
                  f"{moved // 4096} → {int(h['spooled']) // 4096} | {'+'.join(lost)} | {cpu:.2f} | "
                  f"{cpu / (moved / 1e9) if moved else 0:.1f} |")
        else:
            moved = int(h.get("host_cat_bytes", 0))
            cpu = int(r["cat_ticks"]) / 100.0
            print(f"| cat | {r['kb']} | {r['rate']} | {produced / 1e6 if produced else 0:.1f} | {secs} | "
                  f"{moved / 1e6 / secs / 2:.2f} | {moved / 1e6 / secs:.2f} | {r['overrun']} | host read {moved / 1e6:.1f} MB | | "
                  f"{cpu:.2f} | {cpu / (moved / 1e9) if moved else 0:.1f} |")


def cost(lines):
    """bench/guest/cost.sh: CPU seconds per GB of the port's floor, the agent at flood and paced,
    the workload's rate traced vs untraced per trace clock, the host daemon's CPU per GB."""
    host = None
    rows = {}
    for l in lines:
        if l.startswith("host "):
            host = kv(l)
            continue
        if not l.startswith("kind="):
            continue
        r = kv(l)
        if r["kind"] == "info":
            print(f"guest: clocks {r['clocks']}, clocksource {r['clocksource']}")
            continue
        key = (r["kind"], r.get("clock", ""), r.get("paced", r.get("with", "")))
        if r["kind"] in ("floor", "floor-loaded"):  # "... bytes B secs S mbps R cpu_s C"
            f = dict(re.findall(r"(bytes|secs|mbps|cpu_s) (\S+)", l))
            gb = int(f["bytes"]) / 1e9
            rows.setdefault(key, []).append((float(f["cpu_s"]) / gb, float(f["mbps"]), None, None))
        elif r["kind"] == "untraced":
            rows.setdefault(key, []).append((None, None, int(r["writes"]), None))
        elif host:
            gb = int(host["bytes_sent"]) / 1e9
            cpu = int(r["rep_run_ns"]) / 1e9
            rows.setdefault(key, []).append((cpu / gb if gb else float("nan"), gb * 1e3 / float(r.get("secs", 5)),
                                             int(r.get("writes", 0)), float(host["daemon_run_s"]) / gb if gb else float("nan")))
        host = None
    med = lambda xs: statistics.median(xs) if xs else float("nan")
    untr = med([w for _, _, w, _ in rows.get(("untraced", "", ""), [])])
    print(f"untraced workload: {untr / 1e6:.2f} M writes per rep (median of {len(rows.get(('untraced', '', ''), []))})")
    print("| what | clock | rounds | guest CPU s/GB (median, min–max) | MB/s | workload vs untraced | host daemon CPU s/GB |")
    print("|---|---|---|---|---|---|---|")
    for key in sorted(rows):
        kind, clock, paced = key
        if kind == "untraced":
            continue
        v = rows[key]
        c = [x[0] for x in v]
        what = {"floor": f"plain writer into one port ({'as fast as it can' if paced == '0' else paced + ' MB/s'})",
                "floor-loaded": f"plain writer per vCPU into its port " + {"flood": "beside the syscall flood", "paced": "beside the markers, paced as they are"}.get(paced, "paced as the markers, without them" + (", in 32 KiB writes" if paced == "smooth" else "")),
                "agent-flood": "agent, syscall flood", "agent-paced": "agent, 2 MB/s/vCPU markers"}.get(kind, kind)
        share = f"{100 * med([x[2] for x in v]) / untr:.0f}%" if kind == "agent-flood" else ""
        d = f"{med([x[3] for x in v]):.2f}" if not kind.startswith("floor") else ""
        print(f"| {what} | {clock} | {len(v)} | {med(c):.2f} ({min(c):.2f}–{max(c):.2f}) | {med([x[1] for x in v]):.1f} | {share} | {d} |")



def hostcost(lines):
    """bench/host-cost.sh: per start variant, medians of the host CPU split (s per session) and
    the session's host CPU per GB spooled."""
    keys = ["start_cpu_s", "pre_stop_daemon_cpu_s", "pre_stop_follower_cpu_s", "pre_stop_perf_cpu_s",
            "stop_phase_cpu_s", "host_cpu_s", "stop_s"]
    by = {}
    for line in lines:
        if line.startswith("host mode=agent"):
            r = kv(line)
            by.setdefault(r.get("variant", "''").strip("'") or "(defaults)", []).append(r)
    print("| start options | n | start | daemon | follower | host perf | stop (CPU) | session | GB | s/GB | stop wall |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for v, rs in by.items():
        med = {k: statistics.median(float(r.get(k, 0)) for r in rs) for k in keys + ["spooled"]}
        gb = med["spooled"] / 1e9
        print(f"| {v} | {len(rs)} | " + " | ".join(f"{med[k]:.2f}" for k in keys[:6]) +
              f" | {gb:.3f} | {med['host_cpu_s'] / gb:.1f} | {med['stop_s']:.2f} s |")


def tcfifo(lines):
    """bench/tracecmd-fifo.sh: ours vs trace-cmd's FIFO mode, medians per rate (issue 33's rows)."""
    host, rows = {}, []
    for l in lines:
        if l.startswith("host mode="):
            h = kv(l)
            host[h["mode"]] = h
        elif l.startswith("kind=ours") or l.startswith("kind=theirs"):
            r = kv(l)
            r["secs"] = float(re.search(r"load='[^']* secs ([0-9.]+)'", l).group(1))
            r["host"] = host.pop("agent" if r["kind"] == "ours" else "tracecmd", None)
            rows.append(r)
    snaps = [kv(l) for l in lines if l.startswith("host mode=snapshot")]
    loads = [float(kv(l)["load"].split(",")[0]) for l in lines if "load=" in l and l.startswith("kind=")]

    def med(kind, rate, f):
        xs = []
        for r in rows:
            if r["kind"] == kind and r["rate"] == rate and r["host"] and int(r["bytes"]) > 0:
                try:
                    xs.append(f(r))
                except (KeyError, ValueError, ZeroDivisionError):
                    pass
        return (statistics.median(xs), len(xs)) if xs else (float("nan"), 0)

    secs = lambda r: r["secs"]
    gb = lambda r: int(r["bytes"]) / 1e9
    measures = [
        ("delivered MB/s (port bytes ÷ load seconds)", lambda r: int(r["bytes"]) / 1e6 / secs(r), "{:.1f}"),
        ("events kept (recorded − ring overrun)", lambda r: int(r["events"]) - int(r["overrun"]), "{:,.0f}"),
        ("events lost in the guest ring", lambda r: 100.0 * int(r["overrun"]) / int(r["events"]), "{:.1f}%"),
        ("guest tool CPU per GB (whole session)", lambda r: int(r["guest_cpu_us"]) / 1e6 / gb(r), "{:.2f} s"),
        ("host CPU per GB, whole session", lambda r: float(r["host"]["host_cpu_s"]) / gb(r), "{:.2f} s"),
        # issue 33's measure: ours without start's other processes and host perf (the daemon's whole
        # life, the follower, the stop phase); theirs is all trace-cmd record does
        ("host CPU per GB, daemon + follower + stop (theirs: whole)",
         lambda r: (float(r["host"]["pre_stop_daemon_cpu_s"]) + float(r["host"].get("pre_stop_follower_cpu_s", 0)) +
                    float(r["host"]["stop_phase_cpu_s"])) / gb(r) if r["kind"] == "ours" else
         float(r["host"]["host_cpu_s"]) / gb(r), "{:.2f} s"),
        # Per event kept: a page holds more events when it is larger (16 KiB sub-buffers on Linux
        # 6.8+: 15 of the flood's 1 KB lines where a 4 KiB page holds 3), so per GB reads the same
        # work as costlier; per event does not
        ("guest tool CPU per million events kept", lambda r: int(r["guest_cpu_us"]) / (int(r["events"]) - int(r["overrun"])),
         "{:.2f} s"),
        ("host CPU per million events kept, daemon + follower + stop (theirs: whole)",
         lambda r: ((float(r["host"]["pre_stop_daemon_cpu_s"]) + float(r["host"].get("pre_stop_follower_cpu_s", 0)) +
                     float(r["host"]["stop_phase_cpu_s"])) if r["kind"] == "ours" else float(r["host"]["host_cpu_s"])) * 1e6 /
         (int(r["events"]) - int(r["overrun"])), "{:.2f} s"),
        ("GB moved per session", gb, "{:.3f}"),
        ("output file", lambda r: int(r["host"]["out_bytes"]) / 1e6, "{:.1f} MB"),
        ("stop → file", lambda r: float(r["host"]["stop_s"]), "{:.2f} s"),
    ]
    # The ratio of each round's two sessions (run minutes apart, in turn): this shared host's
    # speed drifts between sessions more than the tools differ, and a pair sees the same drift.
    def paired(rate, f):
        xs = []
        for o in rows:
            if o["kind"] != "ours" or o["rate"] != rate or not o["host"] or int(o["bytes"]) <= 0:
                continue
            t = [r for r in rows if r["kind"] == "theirs" and r["rate"] == rate and r["round"] == o["round"]
                 and r["host"] and int(r["bytes"]) > 0]
            try:
                if t and f(t[0]):
                    xs.append(f(o) / f(t[0]))
            except (KeyError, ValueError, ZeroDivisionError):
                pass
        return xs

    print("| rate | measure | ours | trace-cmd agent + FIFOs | ours ÷ theirs | per round: median (min–max) |")
    print("|---|---|---|---|---|---|")
    for rate in sorted({r["rate"] for r in rows}, key=int):
        name = "flood" if rate == "0" else f"{int(rate) / 1000:g} MB/s/vCPU"
        for label, f, fmt in measures:
            (o, no), (t, nt) = med("ours", rate, f), med("theirs", rate, f)
            ratio = f"×{o / t:.2f}" if t and t == t and o == o else "—"
            xs = paired(rate, f)
            pr = f"×{statistics.median(xs):.2f} (×{min(xs):.2f}–{max(xs):.2f})" if xs else "—"
            print(f"| {name} | {label} | {fmt.format(o)} (n={no}) | {fmt.format(t)} (n={nt}) | {ratio} | {pr} |")
    for sn in snaps:
        print(f"snapshot (ours, after a flood): {float(sn['snapshot_s']):.2f} s for {int(sn['snap_bytes']) / 1e6:.0f} MB (rc {sn['rc']})")
    if loads:
        print(f"host load (1 min) at the guest's results: {min(loads):.1f} … {max(loads):.1f}")


if __name__ == "__main__":
    text = open(sys.argv[2]).read().splitlines()
    {"overhead": overhead, "throughput": throughput, "cost": cost, "tcfifo": tcfifo, "hostcost": hostcost}[sys.argv[1]](text)
