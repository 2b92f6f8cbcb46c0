#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Spool throughput of the trace-collector daemon against the fake guest (no QEMU): time from
# `start` to every page spooled, and the daemon's CPU time (utime+stime, 1/100 s ticks).
#   bench/daemon-spool.sh [fifo|socket] [PAGES_PER_CPU]     (after scripts/test built build/)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
transport=${1:-fifo} pages=${2:-20000}
C=$top/build/collector/trace-collector FG=$top/build/tests/integration/fake-guest
T=$(mktemp -d); mkdir "$T/vm"
fgpid=
trap '[ -n "$fgpid" ] && kill "$fgpid"; rm -rf "$T"' EXIT
if [ "$transport" = fifo ]; then
	for n in agent-ctl-path trace-path-cpu0 trace-path-cpu1; do mkfifo "$T/vm/$n.in" "$T/vm/$n.out"; done
	"$FG" --dir "$T/vm" --cpus 2 --pages "$pages" >/dev/null & fgpid=$!
else
	"$FG" --dir "$T/vm" --cpus 2 --pages "$pages" --socket >/dev/null & fgpid=$!
fi
sleep 0.3
t0=$(date +%s.%N)
S=$("$C" start --name bench --dir "$T/vm" --run-dir "$T/run" --no-host --clock ptp)
pid=$(head -n 1 "$T/run/bench.pid")
for _ in $(seq 1200); do
	"$C" status --run-dir "$T/run" | grep -q "^cpu1 *$pages " && break
	sleep 0.05
done
t1=$(date +%s.%N)
read -r ut st < <(awk '{print $14, $15}' "/proc/$pid/stat")
bytes=$(cat "$S"/cpu*.spool | wc -c)
"$C" stop --run-dir "$T/run" >/dev/null 2>&1
awk -v b="$bytes" -v t0="$t0" -v t1="$t1" -v ut="$ut" -v st="$st" -v tr="$transport" 'BEGIN {
	printf "%s: %.1f MB spooled in %.2f s from start (%.0f MB/s, includes the handshake); daemon CPU %.2f s (%.2f ms/MB)\n",
	       tr, b / 1e6, t1 - t0, b / 1e6 / (t1 - t0), (ut + st) / 100, (ut + st) * 10 / (b / 1e6) }'
