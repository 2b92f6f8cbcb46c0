#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Ours beside trace-cmd's own virtio-serial FIFO mode on the same TCG guest (issue 33; 3.1.6, or 3.3.1: #45):
# one boot, per round and rate one session of each (order swapped every round), the same
# 1000-byte trace_marker flood (rate 0) and a paced 2 MB/s per vCPU, the same events and 1 MiB
# rings; then one flood session of ours with a timed snapshot. Theirs, as its docs say:
# 'trace-cmd setup-guest -c 2 127.0.0.1' makes the FIFOs, QEMU gets virtio-serial ports
# trace-pipe-cpuN on them, 'trace-cmd agent -N 10.0.2.2' in the guest takes control over TCP
# (user networking, host 127.0.0.1:18823 -> guest 823; vsock is not available here) and
# writes into /dev/virtio-ports/trace-pipe-cpuN, 'trace-cmd record -A 127.0.0.1:18823' reads
# them, without time sync (--tsync-interval -1: ptp over user networking fails, RESULTS.md).
# Ours: trace-collector start with its defaults (host perf record, live merge) and stop.
# Prints the table of bench/RESULTS.md (medians), raw lines in OUT/results.txt.
#   bench/tracecmd-fifo.sh [--fix-splice] [--no-warmup] [--rounds 3] [--secs 10] [--psecs 25] [--out DIR]
#                          [--kernel 6.1|6.12] [--no-erms] [--tracecmd 3.1.6|3.3]
# --tracecmd 3.3: the peer is trixie's trace-cmd 3.3.1 (libtracefs 1.8.1), as scripts/bootstrap
#   unpacked it: on the host through scripts/trace-cmd-3.3, in the guest with trixie's loader and
#   libc (bench/vm-bench.py VT_BENCH_TRACECMD=3.3). The same options and workarounds: 3.3.1's FIFO
#   reader splices 0 bytes too, and its pid filter dies the same way. And one more: its agent
#   runs with LD_PRELOAD of bench/tracecmd-nofree.c (built here), as every session's child of the
#   agent as shipped dies of SIGSEGV in free() (fixed in 3.3.2). Default Debian 12's 3.1.6.
# --no-erms: the guest CPU without ERMS/FSRM (-cpu max,erms=off,fsrm=off): TCG emulates a rep movsb
#   one byte per step, so with -cpu max every kernel copy costs ~3.5x what rep movsq does and the
#   copy both tools make of each page is most of their cost (bench/RESULTS.md, 2026-11-28).
# --kernel 6.12: the guest on Debian 12's 6.12 kernel (tests/e2e/subbuf's image): our agent reads
#   its ring in 16 KiB sub-buffers there (Linux 6.8+), trace-cmd 3.1.6 in pages. Default 6.1.
# Before the rounds one flood session of each tool is run and not counted (--no-warmup: none):
#   round 0 starts with ours, and the first session after the guest booted is 10-30% slower.
# --fix-splice: trace-cmd record runs with LD_PRELOAD=bench/tracecmd-splice0.c (built here): as
#   shipped, its FIFO reader splices 0 bytes (libtracefs 1.6.4), so nothing is read while
#   tracing, the guest's writers block and stop hangs until QEMU exits (RESULTS.md).
# As root, after ninja -C build; takes /tmp/vt-guest.lock (one guest at a time).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
rounds=3 secs=10 psecs=25 out= fix=0 warmup=1
while [ $# -gt 0 ]; do
	case $1 in
	--fix-splice) fix=1; shift; continue ;;
	--no-erms) export VT_BENCH_QEMU_ARGS="-cpu max,erms=off,fsrm=off"; shift; continue ;;
	--no-warmup) warmup=0; shift; continue ;;
	--kernel) case $2 in 6.1) ;; 6.12) export VT_BENCH_KERNEL=subbuf ;; *) echo "tracecmd-fifo: --kernel 6.1 or 6.12" >&2; exit 2 ;; esac ;;
	--tracecmd) case $2 in 3.1.6) export VT_BENCH_TRACECMD=3.1.6 ;; 3.3) export VT_BENCH_TRACECMD=3.3 ;; *) echo "tracecmd-fifo: --tracecmd 3.1.6 or 3.3" >&2; exit 2 ;; esac ;;
	--rounds) rounds=$2 ;; --secs) secs=$2 ;; --psecs) psecs=$2 ;; --out) out=$2 ;;
	*) echo "tracecmd-fifo: unknown argument '$1' (see the header of $0)" >&2; exit 2 ;;
	esac
	shift 2
done
[ "$(id -u)" -eq 0 ] || { echo "tracecmd-fifo: run as root" >&2; exit 1; }
tc=trace-cmd
[ "${VT_BENCH_TRACECMD:-}" = 3.3 ] && tc=$top/scripts/trace-cmd-3.3
tcv=$({ "$tc" --version 2>&1 || true; } | grep -m1 -o 'version [0-9.]*') || tcv= # --version exits 255
[ -n "$tcv" ] || { echo "tracecmd-fifo: no trace-cmd ($tc): run scripts/bootstrap" >&2; exit 1; }
out=${out:-$(mktemp -d /tmp/vt-bench-tcfifo.XXXXXX)}
mkdir -p "$out"
export VT_CACHE=${VT_CACHE:-$top/build/cache}
if [ "$fix" = 1 ]; then
	cc -O2 -Wall -shared -fPIC -o "$out/tracecmd-splice0.so" "$top/bench/tracecmd-splice0.c" -ldl
	export VT_TC_WRAP="env LD_PRELOAD=$out/tracecmd-splice0.so"
fi
if [ "$tc" != trace-cmd ]; then
	cc -O2 -Wall -shared -fPIC -nostdlib -o "$out/tracecmd-nofree.so" "$top/bench/tracecmd-nofree.c"
	export VT_TC_GUEST_PRELOAD=$out/tracecmd-nofree.so
fi
echo "# $(date '+%F %T') tracecmd-fifo rounds=$rounds secs=$secs psecs=$psecs fix_splice=$fix warmup=$warmup trace-cmd $tcv uptime: $(uptime)" >>"$out/results.txt"
flock /tmp/vt-guest.lock "$top/bench/vm-bench.py" tcfifo --with-tracecmd --host-perf --secs "$secs" --rounds "$rounds" \
	--timeout $(((rounds * 4 + 2) * (secs + psecs + 40) + 300)) --out "$out" \
	--append "vt.rates=0,2000 vt.psecs=$psecs vt.snap=1 vt.warmup=$warmup vt.events=sched,timer" || echo "tracecmd-fifo: vm-bench exit $?" >&2
echo "# after: uptime: $(uptime)" >>"$out/results.txt"
"$top/bench/summarize.py" tcfifo "$out/results.txt"
echo "raw: $out/results.txt"
