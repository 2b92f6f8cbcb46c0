# SPDX-License-Identifier: GPL-2.0-only
# Guest half of bench/vm-bench.py soak: one long trace-agent session (sched,timer + ring
# vt.kb KiB per CPU) while every vCPU writes 1000-byte trace_marker lines as fast as it can
# for vt.secs seconds (bench/guest/flood.c). The host samples the daemon (RSS, CPU) and times
# stop + merge; this side reports the agent's CPU, the events written and the ring overrun.
. /bench/lib.sh
secs=$(arg vt.secs) kb=$(arg vt.kb)
A=$T/instances/virtio-trace
ncpu=$(nproc)

ready agent sched,timer "$kb"
p=$(agentpid) t0=$(ticks $p)
c=0 pids=
while [ $c -lt $ncpu ]; do
	taskset -c $c /bin/flood marker "$A/trace_marker" 0 "$secs" >/tmp/flood$c &
	pids="$pids $!"
	c=$((c + 1))
done
wait $pids
e1=$(events $A) o1=$(overruns $A)
finished
t1=$(ticks $p)
say "result kind=soak secs=$secs kb=$kb agent_ticks=$((t1 - t0)) hz=100 events_at_end=$e1 overrun_at_end=$o1 flood='$(cat /tmp/flood* | tr '\n' ';')'"
