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
  vt-bench: ready tracecmd EVENTS KB         (--with-tracecmd) trace-cmd record -A over the
                                             trace-pipe-cpuN FIFOs (the peer's FIFO mode)
  vt-bench: snapshot                         trace-collector snapshot, timed, then "go"
  vt-bench: finished                         stop what was started (trace-collector stop,
                                             timed = stop-to-file latency), then "next"
Every guest "vt-bench: result k=v ..." line and one host "host ..." line per step go to
OUTDIR/results.txt (one line each, k=v), with the load average and the date.

usage: vm-bench.py SCRIPT [--secs 5] [--rounds 8] [--kb 1024] [--out DIR] [--append 'k=v'] [--with-perf]
                 [--with-tracecmd] [--host-perf]
  --with-perf   Debian's perf and the libraries it links (ldd) go into the guest's initramfs
  --with-tracecmd  trace-cmd (and its libraries) and e1000.ko go into the initramfs; the guest
                gets a NIC (user networking, host 127.0.0.1:18823 -> guest 823: trace-cmd
                agent's control channel) and virtio-serial ports trace-pipe-cpuN on the
                FIFOs 'trace-cmd setup-guest' makes for guest "127.0.0.1". Debian 12's 3.1.6;
                VT_BENCH_TRACECMD=3.3: trixie's 3.3.1 that scripts/bootstrap unpacked, on the
                host through scripts/trace-cmd-3.3, in the guest with trixie's loader and libc
  --host-perf   start sessions with host perf record (the default of trace-collector start)
                instead of --no-host
Host CPU of a session (ours: start, the daemon, host perf, the live follower, stop; theirs:
trace-cmd record and every process it forks) is read from a cpuacct cgroup each side's
commands are started in (/sys/fs/cgroup/cpuacct/vt-bench-*), so exited processes count.
"""
import argparse
import fcntl
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
# VT_BENCH_AB: another trace-collector; sessions alternate between it (variant 'ab') and
# COLLECTOR (variant 'own'), so an A/B of two builds sees the same host drift
AB = os.environ.get("VT_BENCH_AB")
BOOT = os.path.join(TOP, "tests", "e2e", "boot")
VM = "vt-e2e"  # the name tests/e2e/boot gives setup
# VT_BENCH_KERNEL=subbuf: the guest on Debian 12's 6.12 kernel (ring sub-buffers, Linux 6.8+),
# the image meson builds in tests/e2e/subbuf; default: the 6.1 test guest
SUBBUF = os.environ.get("VT_BENCH_KERNEL", "") == "subbuf"
IMAGE = os.path.join(BUILD, "tests", "e2e", "subbuf" if SUBBUF else "")
KERNEL_ROOT = "kernel-root-subbuf" if SUBBUF else "kernel-root"
# the FIFO size the port floor's reader gives each port (start_cats), KiB; 64 was cat's default
CAT_PIPE = int(os.environ.get("VT_BENCH_CAT_PIPE_KB", "1024")) << 10
# VT_BENCH_CAT_SLEEP_MS: the floor's reader sleeps that long whenever its FIFO is empty instead
# of waking at each of QEMU's writes (paced floors only: a flood fills the FIFO meanwhile)
CAT_SLEEP_MS = int(os.environ.get("VT_BENCH_CAT_SLEEP_MS", "0"))
# VT_BENCH_QEMU_ARGS: more QEMU arguments, after the boot script's (a later -cpu wins), e.g.
# '-cpu max,erms=off,fsrm=off': TCG runs a rep movsb one byte per translated block
QEMU_ARGS = os.environ.get("VT_BENCH_QEMU_ARGS", "").split()
# VT_BENCH_TRACECMD=3.3: the peer is trace-cmd 3.3.1 from trixie ($VT_CACHE/trace-cmd-3.3-root)
TC33 = os.environ.get("VT_BENCH_TRACECMD", "3.1") == "3.3"
TRACECMD = os.path.join(TOP, "scripts", "trace-cmd-3.3") if TC33 else "trace-cmd"
TC_GUEST = "127.0.0.1"  # trace-cmd's name of a guest reached by IP: its FIFOs' directory
TC_DIR = f"/var/lib/trace-cmd/virt/{TC_GUEST}"
TC_PORT = 18823
CG = "/sys/fs/cgroup/cpuacct"


def cg_path(name):
    """A cpuacct cgroup of this host (v1 here), made if missing; None where there is none."""
    d = os.path.join(CG, "vt-bench-" + name)
    try:
        os.makedirs(d, exist_ok=True)
    except OSError:
        return None
    return d if os.path.exists(os.path.join(d, "cpuacct.usage")) else None


def cg_usage_ns(d):
    return int(open(os.path.join(d, "cpuacct.usage")).read()) if d else 0


def cg_join(d):
    """preexec_fn: the child (and all it forks) into cgroup d."""
    def join():
        if d:
            with open(os.path.join(d, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))
    return join


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
        self.cat_pipe = 0
        self.collector = COLLECTOR
        self.daemon = None
        self.out = open(os.path.join(args.out, "results.txt"), "a")
        self.cg_ours = cg_path("ours")
        self.cg_theirs = cg_path("theirs") if args.with_tracecmd else None
        self.tc = None

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
            self.stage_perf(stage, "/usr/bin/perf")
        if self.a.with_tracecmd:
            if TC33:
                self.stage_tracecmd33(stage)
            else:
                self.stage_perf(stage, "/usr/bin/trace-cmd")
            self.stage_e1000(stage)
        cpio = subprocess.run("find . -mindepth 1 | sed 's|^\\./||' | cpio -o -H newc --quiet -R 0:0", shell=True, cwd=stage,
                              check=True, capture_output=True).stdout
        path = os.path.join(self.tmp, "initrd")
        with open(path, "wb") as f:
            f.write(open(os.path.join(IMAGE, "initramfs.cpio"), "rb").read())
            f.write(cpio)
        return path

    @staticmethod
    def stage_e1000(stage):
        """The e1000 NIC driver of the guest kernel's modules (no dependencies), as /lib/modules/e1000.ko."""
        cache = os.environ.get("VT_CACHE", os.path.join(BUILD, "cache"))
        kroot = open(os.path.join(cache, KERNEL_ROOT)).read().strip()
        ko = subprocess.run(["find", os.path.join(kroot, "lib", "modules"), "-name", "e1000.ko*"],
                            capture_output=True, text=True, check=True).stdout.split()
        if not ko:
            sys.exit(f"vm-bench: no e1000.ko under {kroot}/lib/modules: rerun scripts/bootstrap")
        dst = os.path.join(stage, "lib", "modules", "e1000.ko")
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        unz = {".xz": ["xz", "-dc"], ".zst": ["zstd", "-qdc"]}.get(os.path.splitext(ko[0])[1], ["cat"])
        with open(dst, "wb") as f:
            subprocess.run(unz + [ko[0]], stdout=f, check=True)

    @staticmethod
    def stage_perf(stage, prog):
        """prog and every library ldd names, at their own paths (the guest has no libc)."""
        libs = subprocess.run(["ldd", prog], capture_output=True, text=True, check=True).stdout
        paths = [prog] + re.findall(r"(/\S+) \(0x", libs)
        for p in paths:
            dst = os.path.join(stage, p.lstrip("/"))
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            subprocess.run(["cp", "-L", p, dst], check=True)

    @staticmethod
    def stage_tracecmd33(stage):
        """trixie's trace-cmd 3.3.1 as /usr/bin/trace-cmd, every library trixie's loader lists for it
        (all from the unpacked set: bootstrap checked) in /usr/lib/x86_64-linux-gnu, that loader as
        its interpreter /lib64/ld-linux-x86-64.so.2, and libgcc_s.so.1 (glibc loads it at
        pthread_exit, which trace-cmd's time sync threads call). The guest has no other libc.
        VT_TC_GUEST_PRELOAD: a shim the guest preloads into the agent, /lib/tracecmd-preload.so
        (bench/tracecmd-fifo.sh builds bench/tracecmd-nofree.c)."""
        cache = os.environ.get("VT_CACHE", os.path.join(BUILD, "cache"))
        try:
            root = open(os.path.join(cache, "trace-cmd-3.3-root")).read().strip()
        except OSError:
            sys.exit(f"vm-bench: no trace-cmd 3.3 in {cache} (no trace-cmd-3.3-root): run scripts/bootstrap")
        lib = os.path.join(root, "usr", "lib", "x86_64-linux-gnu")
        ld = os.path.join(lib, "ld-linux-x86-64.so.2")
        prog = os.path.join(root, "usr", "bin", "trace-cmd")
        listing = subprocess.run([ld, "--library-path", lib, "--list", prog], capture_output=True, text=True,
                                 check=True).stdout
        libs = [p for p in re.findall(r"=> (/\S+) \(0x", listing) if os.path.basename(p) != "ld-linux-x86-64.so.2"]
        copies = [(prog, "usr/bin/trace-cmd"), (ld, "lib64/ld-linux-x86-64.so.2")]
        copies += [(p, "usr/lib/x86_64-linux-gnu/" + os.path.basename(p)) for p in libs + [os.path.join(lib, "libgcc_s.so.1")]]
        if os.environ.get("VT_TC_GUEST_PRELOAD"):
            copies.append((os.environ["VT_TC_GUEST_PRELOAD"], "lib/tracecmd-preload.so"))
        for src, dst in copies:
            os.makedirs(os.path.dirname(os.path.join(stage, dst)), exist_ok=True)
            subprocess.run(["cp", "-L", src, os.path.join(stage, dst)], check=True)

    def send(self, word):
        with open(self.fifo, "w") as f:
            f.write(word + "\n")

    def start_agent(self, events, kb, maxsize=None, tracer=None, perf_freq=None, trace_clock=None):
        self.session_out = os.path.join(self.tmp, "session.data")
        self.nsess = getattr(self, "nsess", -1) + 1
        self.collector = AB if AB and self.nsess % 2 else COLLECTOR
        cmd = [self.collector, "start", "--name", VM, "--dir", self.vmdir, "--run-dir", self.rundir,
               "-e", events, "--buffer-kb", kb, "-o", self.session_out]
        if not self.a.host_perf:
            cmd.append("--no-host")
        cmd += shlex.split(self.a.start_args)
        self.variant = ""
        if self.a.start_args_cycle:
            vs = self.a.start_args_cycle.split(";")
            self.nstart = getattr(self, "nstart", -1) + 1
            self.variant = vs[self.nstart % len(vs)].strip()
            cmd += shlex.split(self.variant)
        if AB:
            self.variant = ("ab " if self.collector == AB else "own ") + self.variant
        if maxsize and maxsize != "-":
            cmd += ["--max-size", maxsize]
        if tracer and tracer != "-":
            cmd += ["--tracer", tracer]
        if perf_freq and perf_freq != "-":
            cmd += ["--guest-perf", "--guest-freq", perf_freq]
        if trace_clock and trace_clock != "-":
            cmd += ["--trace-clock", trace_clock]
        self.cg0 = cg_usage_ns(self.cg_ours)
        t0 = time.monotonic()
        r = subprocess.run(cmd, capture_output=True, text=True, preexec_fn=cg_join(self.cg_ours))
        if r.returncode:
            self.record(f"host error=start rc={r.returncode} msg={r.stderr.strip()!r}")
            return
        self.daemon = int(open(os.path.join(self.rundir, VM + ".pid")).readline())
        self.daemon_cpu0 = proc_cpu_ns(self.daemon)
        self.daemon_run0 = proc_run_ns(self.daemon)
        self.start_s = time.monotonic() - t0
        self.start_cpu = (cg_usage_ns(self.cg_ours) - self.cg0) / 1e9
        self.t_go = time.monotonic()
        self.rss_series = []
        self.next_rss = self.t_go

    def split(self):
        """CPU s of the daemon and each of its descendants now, by kind (follower, perf, ...),
        over the session so far (the daemon's own from its start baseline)."""
        kids = {}
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    st = open(f"/proc/{d}/stat").read()
                except OSError:
                    continue
                kids.setdefault(int(st.rsplit(")", 1)[1].split()[1]), []).append(int(d))
        out = {"daemon": (proc_cpu_ns(self.daemon) - self.daemon_cpu0) / 1e9}
        todo = list(kids.get(self.daemon, []))
        while todo:
            pid = todo.pop()
            todo += kids.get(pid, [])
            try:
                argv = open(f"/proc/{pid}/cmdline").read().split("\0")
            except OSError:
                continue
            kind = ("follower" if "--follow" in argv else
                    "perf" if os.path.basename(argv[0]) == "perf" else os.path.basename(argv[0]) or "other")
            out[kind] = out.get(kind, 0) + (proc_cpu_ns(pid) or 0) / 1e9
            # the same in ns (schedstat of its live threads): /proc's ticks are 10 ms, too
            # coarse for a follower's 0.2-0.3 s a session
            out[kind + "_ns"] = out.get(kind + "_ns", 0) + proc_run_ns(pid) / 1e9
        return out

    def stop_agent(self):
        cpu = proc_cpu_ns(self.daemon)
        split = self.split()
        cg_pre = (cg_usage_ns(self.cg_ours) - self.cg0) / 1e9
        run = proc_run_ns(self.daemon)
        rss = proc_rss_kb(self.daemon)
        dur = time.monotonic() - self.t_go
        t0 = time.monotonic()
        r = subprocess.run([self.collector, "stop", "--name", VM, "--run-dir", self.rundir],
                           capture_output=True, text=True, preexec_fn=cg_join(self.cg_ours))
        stop_s = time.monotonic() - t0
        for _ in range(100):  # the daemon and its children gone: their CPU is all counted
            if self.cg_ours is None or not open(os.path.join(self.cg_ours, "cgroup.procs")).read().strip():
                break
            time.sleep(0.1)
        host_cpu = (cg_usage_ns(self.cg_ours) - self.cg0) / 1e9
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
            try:  # the daemon's live merge: how many periods sent a FLUSH
                m = re.search(r"live merge: (\d+) FLUSH sent, (\d+) periods needed none",
                              open(os.path.join(d, "collector.log")).read())
                if m:
                    astats["live_flushes"], astats["live_flushes_not_needed"] = m.group(1), m.group(2)
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
                    f"out_bytes={outsz} live_flushes={astats.get('live_flushes', '-')} "
                    f"live_flushes_not_needed={astats.get('live_flushes_not_needed', '-')} host_cpu_s={host_cpu:.3f} host_perf={int(self.a.host_perf)} "
                    f"variant={self.variant!r} start_cpu_s={self.start_cpu:.3f} "
                    f"{' '.join(f'pre_stop_{k[:-3]}_run_s={v:.4f}' if k.endswith('_ns') else f'pre_stop_{k}_cpu_s={v:.3f}' for k, v in sorted(split.items()))} "
                    f"pre_stop_cg_cpu_s={cg_pre:.3f} stop_phase_cpu_s={host_cpu - cg_pre:.3f} summary={summ!r}")
        if r.returncode:
            self.record("host stop_output=" + repr(text[-2000:]))
        if sess and os.environ.get("VT_BENCH_KEEP_SESSIONS"):  # a dir: the session dirs go there
            os.makedirs(os.environ["VT_BENCH_KEEP_SESSIONS"], exist_ok=True)
            subprocess.run(["mv", sess.group(1), os.environ["VT_BENCH_KEEP_SESSIONS"]])
        elif sess:
            subprocess.run(["rm", "-rf", sess.group(1)])
        if self.a.keep and self.a.out and os.path.exists(self.session_out):
            self.kept = getattr(self, "kept", 0) + 1
            os.rename(self.session_out, os.path.join(self.a.out, f"agent-{self.kept}.data"))
        subprocess.run(["rm", "-rf", self.session_out])
        self.daemon = None

    def start_tracecmd(self, events, kb):
        """trace-cmd record of the guest over its FIFOs: the same host events as our host perf's
        default (sched_switch, sched_wakeup), the guest's EVENTS (comma list) in KB rings, no
        time sync (--tsync-interval -1: ptp over user networking fails, bench/RESULTS.md), and
        --no-filter: its pid filter reads set_ftrace_pid, which this host (6.18) refuses with
        EPERM, and 3.1.6 and 3.3.1 then call strcmp(NULL, "no pid") and die of SIGSEGV (our host
        perf does not leave itself out either)."""
        self.tc_out = os.path.join(self.tmp, "tc")
        os.makedirs(self.tc_out, exist_ok=True)
        gev = [w for e in events.split(",") for w in ("-e", e)]
        cmd = [TRACECMD, "record", "-e", "sched:sched_switch", "-e", "sched:sched_wakeup",
               "--tsync-interval", "-1", "--no-filter", "-o", os.path.join(self.tc_out, "trace.dat"),
               "-A", f"{TC_GUEST}:{TC_PORT}"] + gev + ["-b", kb]
        self.tc_log = open(os.path.join(self.tc_out, "record.log"), "w")
        self.tc_log.write("+ " + " ".join(cmd) + "\n")
        self.tc_log.flush()
        self.tc_cg0 = cg_usage_ns(self.cg_theirs)
        self.t_go = time.monotonic()
        wrap = shlex.split(os.environ.get("VT_TC_WRAP", ""))  # e.g. a debugger
        self.tc = subprocess.Popen(wrap + cmd, cwd=self.tc_out, stdout=self.tc_log, stderr=subprocess.STDOUT,
                                   preexec_fn=cg_join(self.cg_theirs), start_new_session=True)

    def stop_tracecmd(self):
        dur = time.monotonic() - self.t_go
        t0 = time.monotonic()
        try:
            os.killpg(self.tc.pid, 2)  # Ctrl-C: SIGINT to its whole process group
        except ProcessLookupError:
            pass
        try:
            for _ in range(int(os.environ.get("VT_TC_STOP_WAIT", "600")) // 5):
                try:
                    rc = self.tc.wait(timeout=5)
                    break
                except subprocess.TimeoutExpired:
                    ps = subprocess.run(["ps", "-o", "pid,stat,time,wchan:20,args", "-g", str(self.tc.pid)],
                                        capture_output=True, text=True).stdout
                    self.record("host tracecmd_waiting=" + repr(ps))
            else:
                rc = self.tc.wait(timeout=1)
        except subprocess.TimeoutExpired:
            self.tc.kill()
            rc = self.tc.wait()
        stop_s = time.monotonic() - t0
        try:  # recorders a crashed or killed trace-cmd left behind would read on and cost CPU
            os.killpg(self.tc.pid, 9)
        except ProcessLookupError:
            pass
        for _ in range(100):
            if self.cg_theirs is None or not open(os.path.join(self.cg_theirs, "cgroup.procs")).read().strip():
                break
            time.sleep(0.1)
        host_cpu = (cg_usage_ns(self.cg_theirs) - self.tc_cg0) / 1e9
        self.tc_log.close()
        files = {n: os.path.getsize(os.path.join(self.tc_out, n)) for n in os.listdir(self.tc_out) if n.endswith(".dat")}
        log = open(os.path.join(self.tc_out, "record.log"), errors="replace").read()
        errs = " | ".join(l.strip() for l in log.splitlines()
                          if re.search(r"fail|error|warning|can ?not|die|negotiat", l, re.I))[:600]
        self.record(f"host mode=tracecmd traced_s={dur:.2f} stop_s={stop_s:.3f} rc={rc} host_cpu_s={host_cpu:.3f} "
                    f"out_bytes={sum(files.values())} files={','.join(f'{k}:{v}' for k, v in sorted(files.items()))} "
                    f"msgs={errs!r}")
        if rc or not files:
            self.record("host tracecmd_log=" + repr(log[-2000:]))
        if self.a.keep:
            self.kept_tc = getattr(self, "kept_tc", 0) + 1
            os.rename(self.tc_out, os.path.join(self.a.out, f"tracecmd-{self.kept_tc}"))
        subprocess.run(["rm", "-rf", self.tc_out])
        self.tc = None

    def snapshot(self):
        out = os.path.join(self.tmp, "snap.data")
        live = os.path.getsize(self.session_out) if os.path.isfile(self.session_out) else 0
        t0 = time.monotonic()
        r = subprocess.run([self.collector, "snapshot", "--name", VM, "--run-dir", self.rundir, "-o", out],
                           capture_output=True, text=True)
        snap_s = time.monotonic() - t0
        sz = os.path.getsize(out) if os.path.exists(out) else 0
        self.record(f"host mode=snapshot snapshot_s={snap_s:.3f} rc={r.returncode} snap_bytes={sz} live_bytes_before={live}"
                    + ("" if not r.returncode else f" msg={(r.stdout + r.stderr).strip()[-500:]!r}"))
        subprocess.run(["rm", "-rf", out])

    def tracecmd_setup(self):
        """The peer's host side as its docs say: setup-guest makes the FIFOs, QEMU gets a port on
        each (chardev pipe: PATH.in/.out), named trace-pipe-cpuN, and the agent's control port."""
        subprocess.run([TRACECMD, "setup-guest", "-c", str(self.a.cpus), TC_GUEST], check=True)
        q = ["-device", "virtio-serial-pci,id=tc-serial"]
        for c in range(self.a.cpus):
            q += ["-chardev", f"pipe,id=tcpipe{c},path={TC_DIR}/trace-pipe-cpu{c}",
                  "-device", f"virtserialport,bus=tc-serial.0,chardev=tcpipe{c},name=trace-pipe-cpu{c}"]
        q += ["-nic", f"user,model=e1000,hostfwd=tcp:127.0.0.1:{TC_PORT}-:823"]
        return q

    def start_cats(self):
        """The port floor's reader: cat on each port's FIFO, the FIFO raised to the daemon's
        1 MiB (BATCH_PIPE, collector/link/spool.c). Under TCG, QEMU writes to the FIFO in the vCPU thread
        that kicked the port, so it counts as the writer's guest CPU, unless the FIFO is full:
        then QEMU's main loop writes it later. cat's default 64 KiB FIFO made the floor cheaper
        than what the agent pays beside the daemon's 1 MiB one (2026-11-27)."""
        n = 0
        while os.path.exists(os.path.join(self.vmdir, f"trace-path-cpu{n}.out")):
            fd = os.open(os.path.join(self.vmdir, f"trace-path-cpu{n}.out"), os.O_RDONLY | os.O_NONBLOCK)
            self.cat_pipe = fcntl.fcntl(fd, 1031, CAT_PIPE)  # F_SETPIPE_SZ
            os.set_blocking(fd, True)
            if CAT_SLEEP_MS:  # a reader that wakes every CAT_SLEEP_MS, not at each write
                self.cats.append(subprocess.Popen(
                    [sys.executable, "-c", "import os, sys, time\nos.set_blocking(0, False)\nwhile True:\n"
                     "    try:\n        n = len(os.read(0, 1 << 20))\n    except BlockingIOError:\n        n = -1\n"
                     f"    if n == 0:\n        break\n    if n < 0:\n        time.sleep({CAT_SLEEP_MS / 1000})\n"],
                    stdin=fd, stdout=subprocess.DEVNULL))
            else:
                self.cats.append(subprocess.Popen(["cat"], stdin=fd, stdout=subprocess.DEVNULL))
            os.close(fd)
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
        self.record(f"host mode=cat host_cat_cpu_s={cpu / 1e9:.3f} host_cat_bytes={got} fifo_kb={self.cat_pipe >> 10}")
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
            elif words[1] == "tracecmd":
                self.start_tracecmd(*words[2:])
            self.send("go")
        elif words[0] == "snapshot":
            if self.daemon:
                self.snapshot()
            self.send("go")
        elif words[0] == "finished":
            if self.daemon:
                self.stop_agent()
            if self.tc:
                self.stop_tracecmd()
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
                   VT_E2E_KERNEL=os.path.join(IMAGE, "vmlinux"),
                   VT_E2E_INITRD=self.initrd())
        append = f"vt.secs={a.secs} vt.rounds={a.rounds} vt.kb={a.kb} {a.append}"
        extra = (self.tracecmd_setup() if a.with_tracecmd else []) + QEMU_ARGS
        self.record(f"# {time.strftime('%Y-%m-%d %H:%M:%S')} {a.script} {append} guest_kernel={KERNEL_ROOT} host={os.uname().nodename} "
                    f"kernel={os.uname().release} ncpu={os.cpu_count()} load={','.join(loadavg())} accel=tcg "
                    f"qemu={os.environ.get('VT_E2E_QEMU', '10')}"
                    + (f" qemu_args='{' '.join(QEMU_ARGS)}'" if QEMU_ARGS else ""))
        boot = subprocess.Popen([BOOT, "--dir", self.vmdir, "--log", self.log, "--console-in", self.fifo,
                                 "--script", os.path.join(TOP, "bench", "guest", a.script + ".sh"),
                                 "--accel", "tcg", "--timeout", str(a.timeout), "--append", append,
                                 "--cpus", str(a.cpus), "--qemu-args", " ".join(extra)], env=env)
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
        if self.tc:
            self.stop_tracecmd()
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
    p.add_argument("--with-tracecmd", action="store_true")
    p.add_argument("--host-perf", action="store_true")
    p.add_argument("--cpus", type=int, default=2)
    p.add_argument("--keep", action="store_true", help="keep each agent session's perf.data in OUT as agent-N.data")
    p.add_argument("--start-args", default="", help="more trace-collector start options, e.g. '--flush-interval 0'")
    p.add_argument("--start-args-cycle", default="", help="';'-separated start options, one per session in turn "
                   "(e.g. ';--no-live-merge;--flush-interval 0')")
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
