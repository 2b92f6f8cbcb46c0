#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# How QEMU hands a trace port's bytes to its chardev (issue 45): the real test guest floods its
# rings, and strace counts, for SECONDS, QEMU's write()/writev() calls on the host ends of the
# trace-path-cpuN pipes (the e2e pipe transport: chardev pipe, FIFOs the daemon reads), with
# their sizes. QEMU 7.2 wrote each 4 KiB scatter-gather entry of a virtqueue element with its own
# write(): the port floor's syscall count. Run it with each QEMU to see whether 10 still does.
#   bench/qemu-writes.sh [SECONDS]    (as root, after scripts/test built build/)
# env VT_E2E_QEMU: 10 (default) or 7.2. A benchmark: it reports, it never fails on speed.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-5}
export VT_CACHE=${VT_CACHE:-$top/build/cache} VT_BUILD=$top/build
export TRACE_COLLECTOR=$top/build/collector/trace-collector VT_SOURCE_ROOT=$top
export VT_E2E_BOOT=$top/tests/e2e/boot VT_E2E_KERNEL=$top/build/tests/e2e/vmlinux
export VT_E2E_INITRD=$top/build/tests/e2e/initramfs.cpio
command -v strace >/dev/null || { echo "qemu-writes: strace is missing (apt-get install strace)" >&2; exit 1; }
. "$top/tests/e2e/lib.sh"
e2e_init qemu-writes

e2e_boot --timeout 300 || { echo "boot failed"; exit 1; }
qpid=$(e2e_qemu_pid)
echo "# $(date -u '+%F %T') qemu-writes secs=$secs qemu=${VT_E2E_QEMU:-10} exe=$(readlink "/proc/$qpid/exe")"
sess=$(e2e_start -e 'sched:sched_switch') || { echo "start failed: $sess"; exit 1; }
e2e_say bgwide && e2e_wait '^vt-e2e: bgflood started' 30 || exit 1
sleep 1
# The fds of QEMU that are the trace ports' FIFOs (their .in ends: QEMU writes, the daemon reads).
fds=()
for f in /proc/"$qpid"/fd/*; do
	case $(readlink "$f") in *trace-path-cpu*) fds+=("${f##*/}") ;; esac
done
echo "# QEMU fds on trace-path FIFOs: ${fds[*]:-none}"
log=$T/strace.log
timeout -s INT "$secs" strace -f -qq -p "$qpid" -e trace=write,writev,pwritev,pwrite64 -o "$log" 2>/dev/null
e2e_say bgstop
e2e_wait '^vt-e2e: bgflood stopped' 60
e2e_stop -o "$T/out.data" >/dev/null 2>&1
e2e_end
python3 - "$log" "$secs" "${fds[@]}" <<'PY'
import collections, re, sys
log, secs, fds = sys.argv[1], float(sys.argv[2]), set(sys.argv[3:])
calls, sizes, iovs = collections.Counter(), collections.Counter(), collections.Counter()
total = 0
for line in open(log):
    m = re.match(r'\d+\s+(write|writev|pwritev|pwrite64)\((\d+),.*\)\s+=\s+(-?\d+)', line)
    if not m or m.group(2) not in fds:
        continue
    call, ret = m.group(1), int(m.group(3))
    calls[call] += 1
    if ret > 0:
        total += ret
        sizes[ret] += 1
    if call.endswith('v'):
        n = re.search(r'\],\s*(\d+)\)', line)
        iovs[int(n.group(1)) if n else -1] += 1
n = sum(calls.values())
print(f"calls on trace FIFOs in {secs:.0f} s: {n} ({dict(calls)}), {total} bytes, "
      f"{total / n if n else 0:.0f} bytes a call, {total / secs / 1e6:.1f} MB/s")
print("most common sizes:", ", ".join(f"{s} B x{c}" for s, c in sizes.most_common(6)))
if iovs:
    print("iov counts of the vectored calls:", dict(iovs.most_common(6)))
PY
