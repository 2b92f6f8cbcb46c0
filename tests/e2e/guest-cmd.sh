# SPDX-License-Identifier: GPL-2.0-only
# Guest half of the trace-collector e2e tests (tests/e2e/lib.sh): obeys one command per console
# line from the host and answers with a "vt-e2e: ..." line.
#   run N          /bin/workload -n N (numbered trace_marker lines over both vCPUs + switches)
#   flood N B      /bin/workload -n N -b B -s 0 -f: N lines as fast as it can, B per CPU in turn,
#                  SCHED_FIFO (the agent's pump on that CPU waits: the ring overruns)
#   slow N US      N lines tagged "slow", US microseconds apart (the quiet spell before a burst)
#   paced N US    N numbered lines (as run's), US microseconds apart, no switches (a migration's
#                  workload: it spans the migration)
#   burst N B      like flood, lines tagged "burst"
#   spin MS [f]    a task "vt-spin" per CPU spins MS ms between "vt-e2e spin begin/end cpu C"
#                  markers (f: at SCHED_FIFO, starving the agent on that CPU)
#   spinas NAME MS as spin, the tasks named NAME
#   pio MS         as spin, the tasks named vt-pio reading the CMOS port in a loop (0x70/0x71: a
#                  VM exit to QEMU's RTC model per access under KVM)
#   zero MS        as spin, the tasks named vt-zero reading /dev/zero (64 KiB a read): time spent
#                  in the guest kernel, with no exit of its own
#   bgflood        a workload writing markers as fast as it can in the background, until poweroff
#   bgstop         ends that workload
#   restart-agent  kills the running trace-agent and starts a new one (no arguments)
#   end            leaves (init then stops the agent and powers off)
say() { echo "vt-e2e: $*"; }
agent=
say "ready"
while read -t 600 cmd arg; do # 600 s without a command: the host is gone (a flood past a bound can take minutes)
	case $cmd in
	run)
		/bin/workload -n "$arg" -s 2000 >/dev/null
		say "workload done $arg status $?" ;;
	flood)
		set -- $arg
		/bin/workload -n "$1" -b "$2" -s 0 -f >/dev/null
		say "flood done $1 status $?" ;;
	slow)
		set -- $arg
		/bin/workload -n "$1" -d "$2" -t slow -s 0 >/dev/null
		say "slow done $1 status $?" ;;
	paced)
		set -- $arg
		/bin/workload -n "$1" -d "$2" -s 0 >/dev/null
		say "paced done $1 status $?" ;;
	burst)
		set -- $arg
		/bin/workload -n "$1" -b "$2" -t burst -s 0 -f >/dev/null
		say "burst done $1 status $?" ;;
	spin)
		set -- $arg
		if [ "$2" = f ]; then /bin/workload -S "$1" -f >/dev/null; else /bin/workload -S "$1" >/dev/null; fi
		say "spin done $1 status $?" ;;
	pio) # "pio MS": vt-pio spins on every CPU reading the CMOS port, a VM exit per access
		/bin/workload -S "$arg" -N vt-pio -P >/dev/null
		say "pio done $arg status $?" ;;
	zero)
		/bin/workload -S "$arg" -N vt-zero -Z >/dev/null
		say "zero done $arg status $?" ;;
	spinas)
		set -- $arg
		/bin/workload -S "$2" -N "$1" >/dev/null
		say "spinas $1 done $2 status $?" ;;
	bgflood)
		/bin/workload -n 2000000000 -b 100000 -t bg -s 0 >/dev/null 2>&1 &
		say "bgflood started" ;;
	bgwide) # 1000-byte lines: ring pages as dense as a big trace_marker writer's
		/bin/workload -n 2000000000 -b 100000 -t bg -s 0 -w 1000 >/dev/null 2>&1 &
		say "bgflood started" ;;
	bgstop)
		killall workload
		say "bgflood stopped" ;;
	restart-agent)
		killall trace-agent
		i=0
		while pidof trace-agent >/dev/null && [ $i -lt 100 ]; do usleep 50000; i=$((i + 1)); done
		/bin/trace-agent &
		agent=$!
		say "agent restarted pid $agent" ;;
	end)
		break ;;
	*)
		[ -n "$cmd" ] && say "unknown command $cmd" ;;
	esac
done
say "leaving"
if [ -n "$agent" ]; then
	kill "$agent"
	wait "$agent"
	say "restarted agent exit $?"
fi
