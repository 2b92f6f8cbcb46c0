# SPDX-License-Identifier: GPL-2.0-only
# Guest half of bench/tracecmd-fifo.sh (bench/vm-bench.py tcfifo --with-tracecmd): per round and
# per rate of vt.rates (KB/s per vCPU of 1000-byte trace_marker lines, 0 = as fast as it can;
# vt.secs seconds at 0, vt.psecs at a paced rate), one session of ours (trace-agent, ports
# trace-path-cpuN) and one of trace-cmd's agent in FIFO mode (ports trace-pipe-cpuN; 3.1.6 or 3.3.1),
# the order swapped every round (after one unmeasured flood session of each with vt.warmup=1);
# then (vt.snap=1) one flood session of ours with a snapshot.
# Both tools trace events vt.events with vt.kb KiB rings. Per session:
#   guest CPU: cgroup v2 cpu.stat usage_usec of the tool's own cgroup (trace-cmd's agent
#     forks a child per client and one recorder per CPU: all in it), from before "ready" to
#     after the host's "next" (the whole session: set-up, streaming, stop);
#   bytes moved: the tool's ports' bytes_sent (debugfs virtio-ports);
#   events: entries + overrun + read events of the tool's ring at the end of the load, and
#     the overrun (lost in the guest ring); kept = events - overrun.
. /bench/lib.sh
secs=$(arg vt.secs) psecs=$(arg vt.psecs) rounds=$(arg vt.rounds) kb=$(arg vt.kb)
rates=$(arg vt.rates | tr , ' ') EV=$(arg vt.events) snap=$(arg vt.snap) only=$(arg vt.only)
[ -n "$EV" ] || EV=sched,timer
[ -n "$psecs" ] || psecs=$secs
ncpu=$(nproc)
A=$T/instances/virtio-trace
CG=/sys/fs/cgroup

mount -t debugfs nodev /sys/kernel/debug 2>/dev/null
mount -t cgroup2 nodev $CG || say "result kind=error what=cgroup2-mount"
mkdir -p $CG/ours $CG/theirs

# The ports the e2e init had not named yet when it linked them.
i=0
while [ $i -lt 100 ]; do
	for p in /sys/class/virtio-ports/vport*; do
		n=$(cat "$p/name" 2>/dev/null)
		[ -n "$n" ] && [ ! -e "/dev/virtio-ports/$n" ] && ln -sf "../${p##*/}" "/dev/virtio-ports/$n"
	done
	[ -e /dev/virtio-ports/trace-pipe-cpu$((ncpu - 1)) ] && break
	usleep 100000
	i=$((i + 1))
done
say "result kind=info ports='$(ls /dev/virtio-ports | tr '\n' ' ')'"

insmod /lib/modules/e1000.ko || say "result kind=error what=insmod-e1000"
ifconfig lo 127.0.0.1 up
ifconfig eth0 10.0.2.15 netmask 255.255.255.0 up
route add default gw 10.0.2.2
# trace-cmd's agent, control over TCP from the host (user networking: it comes from 10.0.2.2),
# with the shim vm-bench.py stages for 3.3.1 (bench/tracecmd-nofree.c)
pre=
[ -e /lib/tracecmd-preload.so ] && pre=LD_PRELOAD=/lib/tracecmd-preload.so
sh -c "echo \$\$ >$CG/theirs/cgroup.procs; exec env $pre trace-cmd agent -N 10.0.2.2 -p 823" &
i=0
while [ -z "$(agentpid)" ] && [ $i -lt 100 ]; do usleep 100000; i=$((i + 1)); done
echo "$(agentpid)" >$CG/ours/cgroup.procs || say "result kind=error what=agent-cgroup"

usage() { sed -n 's/^usage_usec //p' $CG/$1/cpu.stat; }
# bytes_sent of the ports named $1N
sent() {
	local s=0 d
	for d in /sys/kernel/debug/virtio-ports/*; do
		grep -q "^name: $1" "$d" 2>/dev/null || continue
		s=$((s + $(sed -n 's/^bytes_sent: //p' "$d")))
	done
	echo $s
}
# load RATE TRACE_MARKER
load() {
	if [ "$1" = 0 ]; then /bin/flood marker "$2" 0 "$secs"; else /bin/flood marker "$2" "$1" "$psecs"; fi
}

step_ours() { # RATE
	[ "$only" = theirs ] && return
	u0=$(usage ours) b0=$(sent trace-path-cpu)
	ready agent "$EV" "$kb"
	out=$(load "$1" $A/trace_marker)
	usleep 500000
	ev=$(events $A) ov=$(overruns $A)
	finished
	u1=$(usage ours) b1=$(sent trace-path-cpu)
	say "result kind=${W}ours rate=$1 round=$r guest_cpu_us=$((u1 - u0)) bytes=$((b1 - b0)) events=$ev overrun=$ov load='$out'"
}

step_theirs() { # RATE
	[ "$only" = ours ] && return
	u0=$(usage theirs) b0=$(sent trace-pipe-cpu)
	ready tracecmd "$EV" "$kb"
	# trace-cmd record connects, the agent enables the events and starts its recorders
	i=0
	while [ "$(cat $T/tracing_on)" != 1 ] || ! grep -q 1 $T/events/timer/enable ||
		[ "$(pidof trace-cmd | wc -w)" -lt $((ncpu + 2)) ]; do
		[ $i -ge 600 ] && { say "result kind=error what=tracecmd-not-started round=$r"; break; }
		usleep 100000
		i=$((i + 1))
	done
	usleep 300000
	out=$(load "$1" $T/trace_marker)
	usleep 500000
	ev=$(events $T) ov=$(overruns $T)
	[ -n "$(arg vt.debug)" ] && (for k in 1 2 3 4 5 6; do sleep 5; for p in $(pidof trace-cmd); do
		echo "tc-debug: $k $p $(cut -d' ' -f3,14,15 /proc/$p/stat) $(cat /proc/$p/wchan)"; done; done) &
	finished
	u1=$(usage theirs) b1=$(sent trace-pipe-cpu)
	say "result kind=${W}theirs rate=$1 round=$r guest_cpu_us=$((u1 - u0)) bytes=$((b1 - b0)) events=$ev overrun=$ov waited_ds=$i load='$out'"
	# whatever trace-cmd left on in the top instance would cost during our sessions
	echo 0 >$T/tracing_on
	echo 0 >$T/events/enable
	echo >$T/trace
}

# vt.warmup=1: first one flood session of each tool, not counted (kind=warmup-ours,
# warmup-theirs): round 0's first session is always ours, and the first session after a boot
# ran 10-30% slower (cold caches; bench/RESULTS.md).
W=
if [ "$(arg vt.warmup)" = 1 ]; then
	W=warmup- r=0
	step_ours 0
	step_theirs 0
	W=
fi
r=0
while [ $r -lt "$rounds" ]; do
	for rate in $rates; do
		if [ $((r % 2)) = 0 ]; then step_ours $rate; step_theirs $rate; else step_theirs $rate; step_ours $rate; fi
	done
	r=$((r + 1))
done
if [ "$snap" = 1 ]; then
	ready agent "$EV" "$kb"
	out=$(load 0 $A/trace_marker)
	say snapshot
	read -t 300 w
	finished
fi
