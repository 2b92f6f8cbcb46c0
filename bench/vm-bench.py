#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Host driver of the real-guest benchmarks (a benchmark: it reports, it never fails on speed).

Boots the e2e guest (tests/e2e/boot, TCG here) with the bench programs (build/bench/dhry,
flood) and bench/guest/lib.sh added to its initramfs, runs bench/guest/SCRIPT.sh in it and
answers its console requests:
  vt-bench: ready agent EVENTS KB [MAXSIZE|- [TRACER]]  trace-collector start (--no-host) before "go"
  vt-bench: ready gperf FREQ                 trace-collector start --guest-perf --guest-freq FREQ
                                             (--no-host, one rare guest event) before "go"
  vt-bench: ready cat                        host cats drain every trace-path-cpuN.out
  vt-bench: ready none                       nothing
  vt-bench: finished                         stop what was started (trace-collector stop,
                                             timed = stop-to-file latency), then "next"
Every guest "vt-bench: result k=v ..." line and one host "host ..." line per step go to
OUTDIR/results.txt (one line each, k=v), with the load average and the date.

usage: vm-bench.py SCRIPT [--secs 5] [--rounds 8] [--kb 1024] [--out DIR] [--append 'k=v'] [--with-perf]
  --with-perf   Debian's perf and the libraries it links (ldd) go into the guest's initramfs
"""
import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("VT_BUILD", os.path.join(TOP, "build"))  # VT_BUILD: another build dir
COLLECTOR = os.path.join(BUILD, "collector", "trace-collector")
BOOT = os.path.join(TOP, "tests", "e2e", "boot")
VM = "vt-e2e"  # the name tests/e2e/boot gives setup


def loadavg():
    return open("/proc/loadavg").read().split()[0:3]


def proc_cpu_ns(pid):
    """utime+stime of pid (all threads, dead ones included) in ns, from /proc/PID/stat."""
    try:
        f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(f[11]) + int(f[12])) * 1e9 / os.sysconf("SC_CLK_TCK")


def proc_run_ns(pid):
    """Run time in ns of the live threads of pid (schedstat)."""
    s = 0
    try:
        for t in os.listdir(f"/proc/{pid}/task"):
            s += int(open(f"/proc/{pid}/task/{t}/schedstat").read().split()[0])
    except OSError:
        pass
    return s


def proc_rss_kb(pid):
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


class Bench:
    def __init__(self, args):
        self.a = args
        self.tmp = tempfile.mkdtemp(prefix="vt-bench.")
        self.vmdir = os.path.join(self.tmp, "vm")
        self.rundir = os.path.join(self.tmp, "run")
        os.makedirs(self.rundir)
        self.log = os.path.join(self.tmp, "console.log")
        self.fifo = os.path.join(self.tmp, "console-in")
        self.cats = []
        self.daemon = None
        self.out = open(os.path.join(args.out, "results.txt"), "a")

    def record(self, line):
        self.out.write(line + "\n")
        self.out.flush()
        print(line, flush=True)

    def initrd(self):
        stage = os.path.join(self.tmp, "stage")
        os.makedirs(os.path.join(stage, "bin"))
        os.makedirs(os.path.join(stage, "bench"))
        for prog in ("dhry", "flood"):
            subprocess.run(["cp", os.path.join(BUILD, "bench", prog), os.path.join(stage, "bin")], check=True)
        subprocess.run(["cp", os.path.join(TOP, "bench", "guest", "lib.sh"), os.path.join(stage, "bench")], check=True)
        if self.a.with_perf:
            self.stage_perf(stage)
        cpio = subprocess.run("find . -mindepth 1 | sed 's|^\\./||' | cpio -o -H newc --quiet -R 0:0", shell=True, cwd=stage,
                              check=True, capture_output=True).stdout
        path = os.path.join(self.tmp, "initrd")
        with open(path, "wb") as f:
            f.write(open(os.path.join(BUILD, "tests", "e2e", "initramfs.cpio"), "rb").read())
            f.write(cpio)
        return path

    @staticmethod
    def stage_perf(stage):
        """/usr/bin/perf and every library ldd names, at their own paths (the guest has no libc)."""
        libs = subprocess.run(["ldd", "/usr/bin/perf"], capture_output=True, text=True, check=True).stdout
        paths = ["/usr/bin/perf"] + re.findall(r"(/\S+) \(0x", libs)
        for p in paths:
            dst = os.path.join(stage, p.lstrip("/"))
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            subprocess.run(["cp", "-L", p, dst], check=True)

    def send(self, word):
        with open(self.fifo, "w") as f:
            f.write(word + "\n")

    def start_agent(self, events, kb, maxsize=None, tracer=None, perf_freq=None, trace_clock=None):
        self.session_out = os.path.join(self.tmp, "session.data")
        cmd = [COLLECTOR, "start", "--name", VM, "--dir", self.vmdir, "--run-dir", self.rundir,
               "-e", events, "--buffer-kb", kb, "--no-host", "-o", self.session_out]
        cmd += shlex.split(self.a.start_args)
        if maxsize and maxsize != "-":
            cmd += ["--max-size", maxsize]
        if tracer and tracer != "-":
            cmd += ["--tracer", tracer]
        if perf_freq and perf_freq != "-":
            cmd += ["--guest-perf", "--guest-freq", perf_freq]
        if trace_clock and trace_clock != "-":
            cmd += ["--trace-clock", trace_clock]
        t0 = time.monotonic()
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode:
            self.record(f"host error=start rc={r.returncode} msg={r.stderr.strip()!r}")
            return
        self.daemon = int(open(os.path.join(self.rundir, VM + ".pid")).readline())
        self.daemon_cpu0 = proc_cpu_ns(self.daemon)
        self.daemon_run0 = proc_run_ns(self.daemon)
        self.start_s = time.monotonic() - t0
        self.t_go = time.monotonic()
        self.rss_series = []
        self.next_rss = self.t_go

    def stop_agent(self):
        cpu = proc_cpu_ns(self.daemon)
        run = proc_run_ns(self.daemon)
        rss = proc_rss_kb(self.daemon)
        dur = time.monotonic() - self.t_go
        t0 = time.monotonic()
        r = subprocess.run([COLLECTOR, "stop", "--name", VM, "--run-dir", self.rundir],
                           capture_output=True, text=True)
        stop_s = time.monotonic() - t0
        text = r.stdout + r.stderr
        sess = re.search(r"session: (\S+)", text)
        spooled = 0
        astats = {}
        if sess:
            d = sess.group(1)
            for n in os.listdir(d):
                if n.endswith(".spool"):
                    spooled += os.path.getsize(os.path.join(d, n))
            try:
                for line in open(os.path.join(d, "agent-stats.ini")):
                    k, _, v = line.strip().partition("=")
                    astats[k] = v
            except OSError:
                pass
        sent = sum(int(v) for k, v in astats.items() if k.startswith("cpu") and k.endswith(".bytes_sent"))
        psent = sum(int(v) for k, v in astats.items() if k.startswith("perf") and k.endswith(".bytes_sent"))
        psamples = sum(int(v) for k, v in astats.items() if k.startswith("perf") and k.endswith(".samples"))
        plost = sum(int(v) for k, v in astats.items() if k.startswith("perf") and k.endswith(".lost"))
        ovr = sum(int(v) for k, v in astats.items() if k.endswith(".overrun"))
        summ = " | ".join(l.strip() for l in text.splitlines() if re.search(r"lost|loss|overrun|missed|drop", l, re.I))
        out_file = self.session_out
        if os.path.isdir(out_file):  # a guest perf session: OUT/data + OUT/kcore_dir__PID
            out_file = os.path.join(out_file, "data")
        outsz = os.path.getsize(out_file) if os.path.exists(out_file) else 0
        merge_read = re.search(r"input read: (\d+) bytes", text)
        self.record(f"host mode=agent start_s={self.start_s:.3f} traced_s={dur:.2f} "
                    f"rss_kb_series={','.join(self.rss_series)} merge_read={merge_read.group(1) if merge_read else '?'} "
                    f"daemon_cpu_s={(cpu - self.daemon_cpu0) / 1e9:.3f} daemon_run_s={(run - self.daemon_run0) / 1e9:.4f} daemon_hwm_kb={rss} "
                    f"stop_s={stop_s:.3f} stop_rc={r.returncode} spooled={spooled} bytes_sent={sent} "
                    f"ring_overrun={ovr} perf_bytes_sent={psent} perf_samples={psamples} perf_lost={plost} "
                    f"out_bytes={outsz} summary={summ!r}")
        if r.returncode:
            self.record("host stop_output=" + repr(text[-2000:]))
        if sess:
            subprocess.run(["rm", "-rf", sess.group(1)])
        if self.a.keep and self.a.out and os.path.exists(self.session_out):
            self.kept = getattr(self, "kept", 0) + 1
            os.rename(self.session_out, os.path.join(self.a.out, f"agent-{self.kept}.data"))
        subprocess.run(["rm", "-rf", self.session_out])
        self.daemon = None

    def start_cats(self):
        n = 0
        while os.path.exists(os.path.join(self.vmdir, f"trace-path-cpu{n}.out")):
            self.cats.append(subprocess.Popen(
                ["cat", os.path.join(self.vmdir, f"trace-path-cpu{n}.out")], stdout=subprocess.DEVNULL))
            n += 1
        self.cat_cpu0 = 0

    def stop_cats(self):
        time.sleep(0.5)  # drain what the guest still wrote
        cpu = sum(proc_cpu_ns(c.pid) or 0 for c in self.cats)
        got = 0
        for c in self.cats:
            try:
                got += int(re.search(r"rchar: (\d+)", open(f"/proc/{c.pid}/io").read()).group(1))
            except (OSError, AttributeError):
                pass
        for c in self.cats:
            c.kill()
            c.wait()
        self.record(f"host mode=cat host_cat_cpu_s={cpu / 1e9:.3f} host_cat_bytes={got}")
        self.cats = []

    def handle(self, line):
        words = line.split()
        if words[0] == "ready":
            if words[1] == "agent":
                self.start_agent(*words[2:])
            elif words[1] == "gperf":
                self.start_agent("sched:sched_process_exec", self.a.kb, perf_freq=words[2])
            elif words[1] == "cat":
                self.start_cats()
            self.send("go")
        elif words[0] == "finished":
            if self.daemon:
                self.stop_agent()
            if self.cats:
                self.stop_cats()
            self.send("next")
        elif words[0] == "profile":
            self.record(" ".join(words))
        elif words[0] == "result":
            self.record(f"{' '.join(words[1:])} load={','.join(loadavg())}")

    def run(self):
        a = self.a
        env = dict(os.environ, TRACE_COLLECTOR=COLLECTOR,
                   VT_E2E_KERNEL=os.path.join(BUILD, "tests", "e2e", "vmlinux"),
                   VT_E2E_INITRD=self.initrd())
        append = f"vt.secs={a.secs} vt.rounds={a.rounds} vt.kb={a.kb} {a.append}"
        self.record(f"# {time.strftime('%Y-%m-%d %H:%M:%S')} {a.script} {append} host={os.uname().nodename} "
                    f"kernel={os.uname().release} ncpu={os.cpu_count()} load={','.join(loadavg())} accel=tcg")
        boot = subprocess.Popen([BOOT, "--dir", self.vmdir, "--log", self.log, "--console-in", self.fifo,
                                 "--script", os.path.join(TOP, "bench", "guest", a.script + ".sh"),
                                 "--accel", "tcg", "--timeout", str(a.timeout), "--append", append], env=env)
        pos = 0
        pending = ""
        while True:
            st = boot.poll()
            try:
                with open(self.log, "rb") as f:
                    f.seek(pos)
                    chunk = f.read()
                    pos += len(chunk)
            except OSError:
                chunk = b""
            pending += chunk.decode(errors="replace")
            *lines, pending = pending.split("\n")
            for line in lines:
                line = line.strip("\r")
                m = re.search(r"vt-bench: (.*)", line)
                if m:
                    self.handle(m.group(1))
                elif "vt-e2e: script exit" in line or "Kernel panic" in line:
                    self.record("# guest: " + line)
            if self.daemon and time.monotonic() >= self.next_rss:
                self.rss_series.append(f"{time.monotonic() - self.t_go:.0f}s:{proc_rss_kb(self.daemon)}")
                self.next_rss += 10
            if st is not None and not chunk:
                break
            time.sleep(0.05)
        if self.daemon:
            self.stop_agent()
        self.record(f"# end {time.strftime('%H:%M:%S')} boot_status={boot.returncode} load={','.join(loadavg())}")
        subprocess.run(["cp", self.log, os.path.join(a.out, "console.log")])
        subprocess.run(["rm", "-rf", self.tmp])
        return boot.returncode


def main():
    p = argparse.ArgumentParser()
    p.add_argument("script")
    p.add_argument("--secs", default="5")
    p.add_argument("--rounds", default="8")
    p.add_argument("--kb", default="1024")
    p.add_argument("--append", default="")
    p.add_argument("--timeout", type=int, default=0)
    p.add_argument("--out", default=None)
    p.add_argument("--with-perf", action="store_true")
    p.add_argument("--keep", action="store_true", help="keep each agent session's perf.data in OUT as agent-N.data")
    p.add_argument("--start-args", default="", help="more trace-collector start options, e.g. '--flush-interval 0'")
    a = p.parse_args()
    if not a.out:
        a.out = tempfile.mkdtemp(prefix=f"vt-bench-{a.script}-", dir="/tmp")
    os.makedirs(a.out, exist_ok=True)
    if not a.timeout:
        a.timeout = int(int(a.rounds) * 4 * (float(a.secs) + 15) + 120)
    if os.geteuid() != 0:
        sys.exit("vm-bench: run as root")
    sys.exit(Bench(a).run())


if __name__ == "__main__":
    main()
