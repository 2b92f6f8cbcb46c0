# SPDX-License-Identifier: GPL-2.0-only
# Guest half of bench/vm-bench.py gperf (--with-perf): what sampling the guest at vt.freq Hz
# with call chains costs the guest. Per round, in a rotating order, dhry (one pinned loop per
# vCPU, vt.secs seconds) runs with
#   off:    no profiling
#   agent:  trace-collector start --guest-perf (cpu-clock, vt.freq Hz, -g) streaming the perf
#           rings over perf-path-cpuN (the host starts it; guest events: a rare one only)
#   record: Debian's perf inside the guest: perf record -a -g -F vt.freq -o /tmp/p.data (the
#           method the issue compares with: a file in the guest, copied out later)
# Each result line: dhry score, the profiler's CPU ticks (agent threads or perf), samples.
. /bench/lib.sh
secs=$(arg vt.secs) rounds=$(arg vt.rounds) freq=$(arg vt.freq)
modes="off agent record"
r=0
while [ $r -lt "$rounds" ]; do
	set -- $modes
	i=0
	while [ $i -lt $((r % 3)) ]; do m=$1; shift; set -- "$@" $m; i=$((i + 1)); done
	for mode in "$@"; do
		pids= extra=
		case $mode in
		off) ready none ;;
		agent) ready gperf "$freq" ;;
		record)
			ready none
			rm -f /tmp/p.data
			/usr/bin/perf record -q -a -g -F "$freq" -o /tmp/p.data >/tmp/perf.log 2>&1 &
			pids=$!
			sleep 1 ;; # perf's own start-up is not the workload's cost
		esac
		a0=$(ticks $(agentpid)) p0=$(ticks ${pids:-0})
		out=$(/bin/dhry "$secs")
		a1=$(ticks $(agentpid)) p1=$(ticks ${pids:-0})
		if [ $mode = record ]; then
			kill -INT $pids
			wait $pids 2>/dev/null
			extra="perf_data_bytes=$(stat -c %s /tmp/p.data 2>/dev/null || echo 0) perf_log='$(tail -n 2 /tmp/perf.log | tr '\n' ' ')'"
		fi
		finished
		a2=$(ticks $(agentpid))
		say "result mode=$mode round=$r score=$(echo "$out" | awk '{for (i = 1; i < NF; i++) if ($i == "total") print $(i + 1)}') agent_ticks=$((a1 - a0)) agent_step_ticks=$((a2 - a0)) perf_ticks=$((p1 - p0)) hz=100 $extra"
	done
	r=$((r + 1))
done
