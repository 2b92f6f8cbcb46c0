# SPDX-License-Identifier: GPL-2.0-only
# Guest half of bench/vm-bench.py profile: where the agent's guest CPU goes while it streams a
# syscall flood (bench/guest/cost.sh's workload). The top-level tracefs instance (not the
# agent's) runs function_graph on the agent's threads only, from the syscalls they make
# (splice, poll, write, read) down vt.depth levels, for vt.psecs seconds; the guest sums each
# function's time (funcgraph-tail names every closing brace) and prints the largest totals as
# "profile NAME CALLS TOTAL_US" lines, with the agent's run time over the same seconds.
. /bench/lib.sh
# vt.rate=KB: the workload is cost.sh's paced one instead (1000-byte marker lines, KB/s per vCPU,
# events sched,timer).
secs=$(arg vt.secs) psecs=$(arg vt.psecs) depth=$(arg vt.depth) clock=$(arg vt.clock) rate=$(arg vt.rate)
EV=syscalls:sys_enter_write,syscalls:sys_exit_write
[ -n "$rate" ] && EV=sched,timer
# Set up while the guest is idle: switching the tracer patches kernel text, which QEMU 7.2's
# multi-threaded TCG can hang on while other vCPUs run (soft lockups seen when this was done
# under the flood). The pump threads the agent makes later are traced through function-fork.
p=$(agentpid)
echo 0 >$T/tracing_on
echo 8192 >$T/buffer_size_kb
echo "$p" >$T/set_ftrace_pid
echo 1 >$T/options/function-fork
echo '__x64_sys_splice __x64_sys_poll __x64_sys_ppoll __x64_sys_write __x64_sys_read' >$T/set_graph_function
echo "$depth" >$T/max_graph_depth
echo 1 >$T/options/funcgraph-tail
echo 0 >$T/options/funcgraph-irqs
echo function_graph >$T/current_tracer
echo >$T/trace
ready agent "$EV" 1024 - - - "${clock:--}"
if [ -n "$rate" ]; then
	/bin/flood marker $T/instances/virtio-trace/trace_marker "$rate" "$secs" >/dev/null &
else
	/bin/flood write "$secs" >/dev/null &
fi
fl=$!
usleep 1000000
n0=$(runns $p)
echo 1 >$T/tracing_on
usleep $((psecs * 1000000))
echo 0 >$T/tracing_on
n1=$(runns $p)
wait $fl
finished
say "result kind=profile psecs=$psecs depth=$depth agent_run_ns=$((n1 - n0)) lost=$(awk '/^overrun:/ {s += $2} END {print s + 0}' $T/per_cpu/cpu*/stats)"
# " 1) + 12.345 us   |  } /* name */" and " 1)   0.789 us    |  name();"
sed -e 's/^ *[0-9]*)//' $T/trace | awk -F'|' '
	$1 ~ /us/ {
		d = $1; gsub(/[^0-9.]/, "", d); f = $2
		if (f ~ /\} \/\*/) { sub(/.*\/\* */, "", f); sub(/ *\*\/.*/, "", f) } else { sub(/^ */, "", f); sub(/\(\);.*/, "", f) }
		if (f != "" && f !~ /[{}]/) { t[f] += d; n[f]++ }
	}
	END { for (f in t) printf "profile %s %d %.0f\n", f, n[f], t[f] }' | sort -k4 -n -r | head -60 | while read -r l; do say "$l"; done
echo nop >$T/current_tracer
echo >$T/set_ftrace_pid
