# SPDX-License-Identifier: GPL-2.0-only
# Guest half of the function-tracer e2e test: on the host's "go", reads and writes files
# (vfs_read/vfs_write calls for the filtered function tracer), then waits for "end".
say() { echo "vt-e2e: $*"; }
say "waiting for go"
read -t 120 word || say "no go from the host"
say "got $word"
i=0
while [ $i -lt 100 ]; do
	cat /proc/version >/dev/null
	echo $i >/tmp/vt-tracer-file
	i=$((i + 1))
done
say "io done"
read -t 300 word || say "no end from the host"
say "got $word"
