# SPDX-License-Identifier: GPL-2.0-only
# Guest half of bench/vm-bench.py overhead: the 2012 virtio-trace evaluation. Per round, in a
# rotating order, runs dhry (one pinned loop per vCPU, vt.secs seconds) with
#   native: sched,timer,kmem on in instance 'bench', no reader
#   agent:  the same events streamed by trace-agent to trace-collector (host starts it)
#   cat:    instance 'bench' copied by 'cat trace_pipe_raw > port', one per CPU
#   off:    no tracing
. /bench/lib.sh
secs=$(arg vt.secs) rounds=$(arg vt.rounds) kb=$(arg vt.kb)
EV=sched,timer,kmem
B=$T/instances/bench
mkinst bench $EV "$kb"
ncpu=$(nproc)
modes="native agent cat off"
r=0
while [ $r -lt "$rounds" ]; do
	# rotate the order every round
	set -- $modes
	i=0
	while [ $i -lt $((r % 4)) ]; do m=$1; shift; set -- "$@" $m; i=$((i + 1)); done
	for mode in "$@"; do
		inst=$B pids= a0=$(ticks $(agentpid))
		case $mode in
		native) ready none; echo 1 >"$B/tracing_on" ;;
		agent) ready agent "$EV" "$kb"; inst=$T/instances/virtio-trace; pids=$(agentpid) ;;
		cat)
			ready cat
			echo 1 >"$B/tracing_on"
			c=0
			while [ $c -lt $ncpu ]; do
				taskset -c $c cat "$B/per_cpu/cpu$c/trace_pipe_raw" >"/dev/virtio-ports/trace-path-cpu$c" &
				pids="$pids $!"
				c=$((c + 1))
			done ;;
		off) ready none ;;
		esac
		# events counted last before and first after the rep: the CPU readings (a cut per
		# agent thread) fork processes whose kmem events must not count against the agent
		t0=$(ticks ${pids:-0}) n0=$(runns $pids) u0=$(cut -d' ' -f1 /proc/uptime) e0=$(events "$inst")
		out=$(/bin/dhry "$secs")
		e1=$(events "$inst") t1=$(ticks ${pids:-0}) n1=$(runns $pids) u1=$(cut -d' ' -f1 /proc/uptime)
		if [ $mode = cat ]; then
			t0=0 t1=$(for p in $pids; do ticks $p; done | awk '{s += $1} END {print s}')
		fi
		case $mode in
		native) echo 0 >"$B/tracing_on"; echo >"$B/trace" ;;
		cat) echo 0 >"$B/tracing_on"; kill $pids; wait $pids 2>/dev/null; echo >"$B/trace" ;;
		esac
		finished
		# the agent's whole life over this step (its pumps sleep until a ring is half full,
		# so most of its work is at stop): utime+stime ticks, dead threads included
		a1=$(ticks $(agentpid))
		say "result mode=$mode round=$r pids=$(echo $pids | tr " " ,) score=$(echo "$out" | awk '{for (i = 1; i < NF; i++) if ($i == "total") print $(i + 1)}') events=$((e1 - e0)) reader_ticks=$((t1 - t0)) reader_ns=$((n1 - n0)) wall=$u0:$u1 ovr=$(overruns "$inst") agent_step_ticks=$((a1 - a0)) hz=100 dhry='$out'"
	done
	r=$((r + 1))
done
