# SPDX-License-Identifier: GPL-2.0-only
# Guest half of bench/vm-bench.py session: the agent's cost per session with an idle guest.
# Per round the host runs trace-collector start (config, metadata, start, clock probes), the
# guest sleeps vt.secs, the host stops; the agent's utime+stime over the step is reported.
. /bench/lib.sh
secs=$(arg vt.secs) rounds=$(arg vt.rounds) kb=$(arg vt.kb)
EV=sched,timer,kmem
r=0
while [ $r -lt "$rounds" ]; do
	a0=$(ticks $(agentpid)) u0=$(cut -d' ' -f1 /proc/uptime)
	ready agent "$EV" "$kb"
	sleep "$secs"
	finished
	a1=$(ticks $(agentpid)) u1=$(cut -d' ' -f1 /proc/uptime)
	say "result mode=session round=$r agent_step_ticks=$((a1 - a0)) hz=100 wall=$u0:$u1"
	r=$((r + 1))
done
