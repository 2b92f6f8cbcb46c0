# SPDX-License-Identifier: GPL-2.0-only
# Guest half of the clock e2e test: says it is up, runs the workload when the host says "go"
# (load while the probes run), stays up until the host says "end".
say() { echo "vt-e2e: $*"; }
say "waiting for go"
read -t 120 word || say "no go from the host"
say "got $word"
/bin/workload -n 2000 -s 20000
say "workload done"
read -t 300 word || say "no end from the host"
say "got $word"
