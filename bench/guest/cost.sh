# SPDX-License-Identifier: GPL-2.0-only
# Guest half of bench/vm-bench.py cost (the load issue's CPU per GB, #21): in one boot,
#  - the port's floor: a plain writer of 1 MiB buffers into one port (flood port), as fast as
#    it can and paced at vt.floor_mbps; its own CPU seconds per byte; and beside the agent's
#    workloads (floor-loaded: one writer per vCPU, each into its own port);
#  - the workload (flood write: 64-byte writes into /dev/null, one pinned writer per vCPU)
#    untraced, then traced by the agent with syscalls:sys_{enter,exit}_write (a flood of
#    events) under each trace clock of vt.clocks: the workload's rate against its untraced
#    rate, and the agent's CPU (schedstat run time of its threads) per byte it sent;
#  - the agent at vt.rate KB/s per vCPU (1000-byte trace_marker lines): CPU per byte there.
# vt.floor_mbps may list several rates (40,5); vt.only=paced runs the paced agent alone (with
# vm-bench.py --start-args-cycle: one session option set per round). rep_runs: the times the
# agent's threads were scheduled in during the rep (its wake-ups).
# The host's line before each guest result has the bytes sent and the daemon's CPU.
. /bench/lib.sh
secs=$(arg vt.secs) rounds=$(arg vt.rounds) portmib=$(arg vt.portmib)
clocks=$(arg vt.clocks | tr , ' ') rate=$(arg vt.rate) floor_mbps=$(arg vt.floor_mbps | tr , ' ')
only=$(arg vt.only)
A=$T/instances/virtio-trace
EV=syscalls:sys_enter_write,syscalls:sys_exit_write
say "result kind=info clocks='$(cat $T/trace_clock)' clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"

floor() { # MBPS (0: as fast as it can)
	ready cat
	out=$(/bin/flood port /dev/virtio-ports/trace-path-cpu0 "$portmib" "$1")
	finished
	say "result kind=floor paced=$1 round=$r $(echo "$out" | cut -d' ' -f3-)"
}

# The floor beside the same workload the agent runs with (the agent's vCPUs are never idle):
# one plain writer per vCPU into its own port (flood ports), as fast as it can beside the
# syscall flood, or paced at vt.rate KB/s beside vt.rate KB/s of markers into a ring no one
# reads. Its CPU per byte is the port's cost under that load.
floor_loaded() { # flood|paced|alone|smooth (alone: paced as the markers, without them; smooth: so in 32 KiB writes)
	ready cat
	if [ "$1" = alone ]; then
		out=$(/bin/flood ports "$secs" "$(awk "BEGIN { print $rate / 1000 }")")
	elif [ "$1" = smooth ]; then
		out=$(/bin/flood ports "$secs" "$(awk "BEGIN { print $rate / 1000 }")" 32)
	elif [ "$1" = flood ]; then
		/bin/flood write "$secs" >/dev/null &
		out=$(/bin/flood ports "$secs")
	else
		mkinst floorload "" 1024
		echo 1 >"$T/instances/floorload/tracing_on"
		/bin/flood marker "$T/instances/floorload/trace_marker" "$rate" "$secs" >/dev/null &
		out=$(/bin/flood ports "$secs" "$(awk "BEGIN { print $rate / 1000 }")")
	fi
	wait
	echo 0 >"$T/instances/floorload/tracing_on" 2>/dev/null
	finished
	say "result kind=floor-loaded with=$1 round=$r $(echo "$out" | cut -d' ' -f3-)"
}

untraced() {
	out=$(/bin/flood write "$secs")
	say "result kind=untraced round=$r writes=$(echo "$out" | cut -d' ' -f4)"
}

agent_flood() { # CLOCK
	ready agent "$EV" 1024 - - - "$1"
	p=$(agentpid) n0=$(runns $p) c0=$(runcount $p)
	out=$(/bin/flood write "$secs")
	n1=$(runns $p) c1=$(runcount $p) e1=$(events $A) o1=$(overruns $A)
	finished
	say "result kind=agent-flood clock=$1 round=$r secs=$secs writes=$(echo "$out" | cut -d' ' -f4) rep_run_ns=$((n1 - n0)) rep_runs=$((c1 - c0)) events=$e1 overrun=$o1"
}

agent_paced() { # CLOCK
	ready agent sched,timer 1024 - - - "$1"
	p=$(agentpid) n0=$(runns $p) c0=$(runcount $p)
	out=$(/bin/flood marker "$A/trace_marker" "$rate" "$secs")
	n1=$(runns $p) c1=$(runcount $p) e1=$(events $A) o1=$(overruns $A)
	finished
	say "result kind=agent-paced clock=$1 round=$r secs=$secs rate=$rate rep_run_ns=$((n1 - n0)) rep_runs=$((c1 - c0)) events=$e1 overrun=$o1 load='$out'"
}

r=0
while [ $r -lt "$rounds" ]; do
	if [ "$only" = paced ]; then
		for c in $clocks; do agent_paced "$c"; done
		r=$((r + 1))
		continue
	fi
	floor 0
	for m in $floor_mbps; do floor "$m"; done
	floor_loaded flood
	floor_loaded paced
	floor_loaded alone
	floor_loaded smooth
	untraced
	for c in $clocks; do
		agent_flood "$c"
		agent_paced "$c"
	done
	r=$((r + 1))
done
