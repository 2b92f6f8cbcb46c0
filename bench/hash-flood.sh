#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Hash flood (issue 29, point 5): the merge of a guest stream whose pids a hostile guest chose to
# collide in the merge's task table, against the same stream over random pids. Each session is
# one vCPU of sched_switch events (tests/pid-session.c): NPIDS pids, PASSES × NPIDS events, event
# k switching from pid k-1 to pid k, so every event looks up three pids. "colliding": groups of
# 16384 pids sharing their low 17 bits (the most a positive int32 allows), the groups in adjacent
# slots of the old table ((pid * 2654435761) mod 2^17): one NPIDS-slot cluster. Prints the wall
# time of `trace-collector merge` on each (best of RUNS) and their ratio; goal: ratio <= 2.
#   bench/hash-flood.sh [NPIDS [PASSES [RUNS]]]   env TC=path/to/trace-collector, WORK=dir
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
TC=${TC:-$top/build/collector/trace-collector} PS=$top/build/tests/integration/pid-session
npids=${1:-65536} passes=${2:-4} runs=${3:-3}
W=$(mktemp -d "${WORK:-/tmp}/vt-hash-flood.XXXXXX")
trap 'rm -rf "$W"' EXIT
best() { # DIR: the best wall time of RUNS merges, seconds
	local b="" t0 t1 t
	for _ in $(seq "$runs"); do
		rm -f "$W/out.data"
		t0=$(date +%s.%N)
		"$TC" merge "$1" -o "$W/out.data" >"$W/merge.log" 2>&1 || { cat "$W/merge.log" >&2; exit 1; }
		t1=$(date +%s.%N)
		t=$(echo "$t1 - $t0" | bc)
		if [ -z "$b" ] || [ "$(echo "$t < $b" | bc)" = 1 ]; then b=$t; fi
	done
	grep -q "$npids task names" "$W/merge.log" || { echo "merge of $1 did not name $npids tasks" >&2; cat "$W/merge.log" >&2; exit 1; }
	echo "$b"
}
for kind in random colliding; do
	"$PS" "$W/$kind" "$kind" "$npids" "$passes"
	sync
done
r=$(best "$W/random")
c=$(best "$W/colliding")
echo "hash-flood npids=$npids events=$((npids * passes)) random_s=$r colliding_s=$c ratio=$(echo "scale=2; $c / $r" | bc)"
