# SPDX-License-Identifier: GPL-2.0-only
"""Shared parts of the python e2e tests: the booted test guest (tests/e2e/boot with a guest
script, its console log and console input) and the main() around one test body.
Imported by tests/e2e/test-*.py from their own directory; environment from meson."""
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# Debian 12's perf, or with VT_TEST_PERF=6.12 perf 6.12 from bookworm-backports (as lib.sh).
PERF = {"": "/usr/bin/perf", "6.12": os.path.join(HERE, "../../scripts/perf-6.12")}.get(os.environ.get("VT_TEST_PERF", ""))
if PERF is None:
    sys.exit(f"VT_TEST_PERF={os.environ['VT_TEST_PERF']}: only perf 6.12 is unpacked besides Debian 12's (scripts/bootstrap)")


def fail(msg):
    raise AssertionError(msg)


def ok(msg):
    print(f"ok   {msg}", flush=True)


def collector(*args, **kw):
    """Runs $TRACE_COLLECTOR with args; output captured as text."""
    return subprocess.run([os.environ["TRACE_COLLECTOR"], *args], capture_output=True, text=True, **kw)


class Guest:
    """The booted guest: console log, console input, boot's process.

    Subclasses may override prepare() (runs before boot starts) and tick() (runs on every poll
    of wait()); CONSOLE_TAIL is how much console a failure prints (None: all), GRACE how long
    stop() lets the guest leave after "end" before terminating boot (0: terminate at once)."""
    CONSOLE_TAIL = 3000
    GRACE = 30

    def __init__(self, tmp, script, boot_timeout):
        self.tmp, self.dir, self.log = tmp, f"{tmp}/vm", f"{tmp}/console.log"
        self.console_in = f"{tmp}/console.in"
        self.prepare()
        self.boot = subprocess.Popen([os.environ["VT_E2E_BOOT"], "--dir", self.dir, "--log", self.log,
                                      "--script", os.path.join(HERE, script),
                                      "--console-in", self.console_in, "--timeout", str(boot_timeout)])

    def prepare(self):
        pass

    def tick(self):
        pass

    def console(self):
        try:
            with open(self.log, "rb") as f:
                return f.read().decode(errors="replace")
        except FileNotFoundError:
            return ""

    def wait(self, what, until, secs):
        """Polls until `until` (a callable, or a text the console must contain) holds."""
        pred = until if callable(until) else lambda: until in self.console()
        deadline = time.monotonic() + secs
        while time.monotonic() < deadline:
            self.tick()
            if pred():
                ok(what)
                return
            if self.boot.poll() is not None:
                break
            time.sleep(0.05)
        fail(f"timed out waiting for: {what}")

    def say(self, text, path=None):
        """Writes text to the console input (or to the FIFO path)."""
        fd = os.open(path or self.console_in, os.O_WRONLY | os.O_NONBLOCK)
        os.write(fd, text.encode())
        os.close(fd)

    def tail(self):
        text = self.console()
        return text if self.CONSOLE_TAIL is None else text[-self.CONSOLE_TAIL:]

    def stop(self):
        """Lets a still running guest leave ("end"), else terminates boot (its trap reaps QEMU)."""
        if self.boot.poll() is not None:
            return
        if self.GRACE:
            try:
                self.say("end\n")
                self.boot.wait(timeout=self.GRACE)
                return
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.boot.terminate()
        self.boot.wait()


# A guest kernel's report that a vCPU stopped running: QEMU 7.2's multi-threaded TCG can hang a
# vCPU for good while the guest patches its own code (events enabled or disabled; fixed in QEMU
# 8.1, docs/status.md). The shell e2e tests boot again once on the daemon's word for it
# (e2e_start in lib.sh); these tests, which may not run the daemon, on this console line.
# Only on the 7.2 leg (VT_E2E_QEMU=7.2): on QEMU 10, the default, such a stall fails the test.
TCG_HANG = ("rcu_preempt self-detected stall", "rcu: INFO: rcu_preempt detected stalls")
QEMU_72 = os.environ.get("VT_E2E_QEMU", "10") == "7.2"


def perf_both(tmp):
    """Every merged file the test wrote in tmp is read by perf 6.1 and perf 6.12 alike, with no
    warning (tests/e2e/perf-both --dir: which files those are). False if not."""
    p = subprocess.run([os.path.join(HERE, "perf-both"), "--dir", tmp], capture_output=True, text=True)
    print(p.stdout + p.stderr, end="", flush=True)
    if p.returncode:
        print("FAIL perf 6.1 and 6.12 on the merged files", file=sys.stderr)
        return False
    if p.stdout and not os.environ.get("VT_PERF_BOTH_DEFER"):
        ok("perf 6.1 and 6.12 read the merged files alike, no warning")
    return True


def main(title, prefix, script, body, boot_timeout=600, guest=Guest, needs=(PERF,)):
    """Boots `guest` with `script` in a fresh temporary directory and runs body(g, tmp).
    An AssertionError fails the test (exit 1) with the console's tail, except once when the
    console shows a vCPU stall (TCG_HANG): then a new guest runs the body again, said on
    stderr. The guest is stopped whatever happens."""
    for need in (*needs, os.environ.get("TRACE_COLLECTOR", "")):
        if not os.access(need, os.X_OK):
            print(f"FAIL {need or 'TRACE_COLLECTOR'} missing", file=sys.stderr)
            return 1
    for attempt in (1, 2):
        with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
            g = guest(tmp, script, boot_timeout)
            try:
                body(g, tmp)
            except AssertionError as e:
                hung = attempt == 1 and QEMU_72 and any(h in g.console() for h in TCG_HANG)
                print(f"{'first try failed' if hung else 'FAIL'} {e}", file=sys.stderr)
                print("--- console log (tail)\n" + g.tail(), file=sys.stderr)
                if not hung:
                    return 1
                print("e2e: the guest's console reports a vCPU stall (QEMU 7.2's multi-threaded TCG hang, "
                      "fixed in QEMU 8.1): booting a new guest and running the test once more", file=sys.stderr)
                print(f"--- {title}: a vCPU of the first guest stalled; second try", flush=True)
                continue
            except BaseException:
                print("--- console log (tail)\n" + g.tail(), file=sys.stderr)
                raise
            finally:
                g.stop()
            if not perf_both(tmp):
                return 1
        print(f"{title}: passed" + (" (on the second guest)" if attempt == 2 else ""))
        return 0
    return 1
