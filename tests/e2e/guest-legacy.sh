# SPDX-License-Identifier: GPL-2.0-only
# Guest half of e2e (b): waits for the host's "go" on the console (sent once both begin
# markers arrived), writes the numbered lines, then waits for the host's "end".
say() { echo "vt-e2e: $*"; }
say "waiting for go"
read -t 60 word || say "no go from the host"
say "got $word"
/bin/workload -n 200 -s 2000
say "workload done"
read -t 60 word || say "no end from the host"
say "got $word"
