# SPDX-License-Identifier: GPL-2.0-only
# Guest half of bench/vm-bench.py hostcost (issue 33: where the host's CPU goes): per round,
# vt.nvar sessions of ours (the host gives each the next of its --start-args-cycle variants),
# each a paced load of 1000-byte trace_marker lines at vt.rate KB/s per vCPU for vt.secs,
# events vt.events, vt.kb KiB rings. The host splits its CPU per process (vm-bench.py).
. /bench/lib.sh
secs=$(arg vt.secs) rounds=$(arg vt.rounds) kb=$(arg vt.kb) rate=$(arg vt.rate)
nvar=$(arg vt.nvar) EV=$(arg vt.events)
[ -n "$EV" ] || EV=sched,timer
[ -n "$nvar" ] || nvar=1
A=$T/instances/virtio-trace
r=0
while [ $r -lt "$rounds" ]; do
	v=0
	while [ $v -lt "$nvar" ]; do
		ready agent "$EV" "$kb"
		out=$(/bin/flood marker $A/trace_marker "$rate" "$secs")
		usleep 500000
		finished
		say "result kind=hostcost rate=$rate round=$r variant=$v load='$out'"
		v=$((v + 1))
	done
	r=$((r + 1))
done
