# SPDX-License-Identifier: GPL-2.0-only
# Guest half of bench/vm-bench.py throughput: raw port capacity (write() of vt.portmib MiB
# into trace-path-cpu0, and into every port at once, host draining with cat), then per ring
# size (vt.kbs) and per production rate (vt.rates, KB/s per vCPU of 1000-byte trace_marker
# lines, 0 = as fast as it can, "fn" = function tracer + dhry) one trace-agent session, and
# the same loads through 'cat trace_pipe_raw > port' (read/write copy) for comparison.
. /bench/lib.sh
secs=$(arg vt.secs) rounds=$(arg vt.rounds)
kbs=$(arg vt.kbs | tr , ' ') rates=$(arg vt.rates | tr , ' ') portmib=$(arg vt.portmib)
EV=sched,timer
ncpu=$(nproc)
A=$T/instances/virtio-trace
B=$T/instances/bench

port_capacity() {
	ready cat
	one=$(/bin/flood port /dev/virtio-ports/trace-path-cpu0 "$portmib")
	finished
	say "result kind=port ports=1 $(echo "$one" | cut -d' ' -f3-)"
	ready cat
	c=0 pids=
	while [ $c -lt $ncpu ]; do
		/bin/flood port "/dev/virtio-ports/trace-path-cpu$c" $((portmib / ncpu)) >/tmp/port$c &
		pids="$pids $!"
		c=$((c + 1))
	done
	wait $pids
	finished
	say "result kind=port ports=$ncpu $(cat /tmp/port* | awk '{b += $4; if ($6 > s) s = $6} END {printf "bytes %d secs %.3f mbps %.1f", b, s, b / s / 1e6}')"
}

# load RATE INSTANCE_DIR: the production of one step (fn: the caller set the function tracer)
load() {
	if [ "$1" = fn ]; then
		/bin/dhry "$secs"
	else
		/bin/flood marker "$2/trace_marker" "$1" "$secs"
	fi
}

step_agent() { # KB RATE
	a0=$(ticks $(agentpid))
	# the agent sets current_tracer itself (before it opens trace_pipe_raw: EBUSY after)
	if [ "$2" = fn ]; then ready agent "$EV" "$1" - function; else ready agent "$EV" "$1"; fi
	p=$(agentpid) t0=$(ticks $p) n0=$(runns $p)
	out=$(load "$2" $A)
	n1=$(runns $p) e1=$(events $A)
	finished
	a1=$(ticks $p)
	say "result kind=agent kb=$1 rate=$2 round=$r setup_ticks=$((t0 - a0)) stream_ticks=$((a1 - t0)) rep_run_ns=$((n1 - n0)) events_at_end=$e1 hz=100 load='$out'"
}

step_cat() { # KB RATE
	mkinst bench "$EV" "$1"
	[ "$2" = fn ] && echo function >"$B/current_tracer"
	ready cat
	echo 1 >"$B/tracing_on"
	c=0 pids=
	while [ $c -lt $ncpu ]; do
		taskset -c $c cat "$B/per_cpu/cpu$c/trace_pipe_raw" >"/dev/virtio-ports/trace-path-cpu$c" &
		pids="$pids $!"
		c=$((c + 1))
	done
	out=$(load "$2" $B)
	echo 0 >"$B/tracing_on"
	usleep 500000
	t1=$(for p in $pids; do ticks $p; done | awk '{s += $1} END {print s}')
	ev=$(events $B) ov=$(overruns $B)
	kill $pids
	wait $pids 2>/dev/null
	echo nop >"$B/current_tracer"
	finished
	say "result kind=cat kb=$1 rate=$2 round=$r cat_ticks=$t1 events=$ev overrun=$ov hz=100 load='$out'"
	echo >"$B/trace"
}

port_capacity
r=0
while [ $r -lt "$rounds" ]; do
	for kb in $kbs; do
		for rate in $rates; do step_agent $kb $rate; done
	done
	for rate in $rates; do step_cat $(echo $kbs | cut -d' ' -f1) $rate; done
	r=$((r + 1))
done
port_capacity
