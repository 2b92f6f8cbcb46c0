# SPDX-License-Identifier: GPL-2.0-only
# --help and --version of both binaries; unknown commands and options fail with a message.
. "$(dirname "$0")/lib.sh"

check_out "agent --version" '^trace-agent [0-9]+\.[0-9]+' "$TRACE_AGENT" --version
check_out "agent --help names the legacy control" "line '1'" "$TRACE_AGENT" --help
check_out "agent --help lists default events" 'sched, irq, timer' "$TRACE_AGENT" --help
check "agent rejects unknown option" bash -c "! '$TRACE_AGENT' --bogus 2>/dev/null"
check_out "agent bad --instance named" "instance name '../x'" "$TRACE_AGENT" --instance ../x
check_out "agent bad --subbuf-kb named" "--subbuf-kb '12' is not 0 or a power of two from 4 to 64" "$TRACE_AGENT" --subbuf-kb 12
check_out "agent --subbuf-kb above 64 refused" "--subbuf-kb '128' is not" "$TRACE_AGENT" --subbuf-kb 128
check_out "collector --version" '^trace-collector [0-9]+\.[0-9]+' "$TRACE_COLLECTOR" --version
for c in setup start status snapshot stop merge report; do
	check_out "collector --help lists $c" "^  $c " "$TRACE_COLLECTOR" --help
	check_out "collector $c --help" "^Usage: trace-collector $c" "$TRACE_COLLECTOR" "$c" --help
done
# Bash completion offers every option each subcommand's --help names (a few --help words are
# another command's: setup's virsh --config, start's 'merge --follow', snapshot's start option).
complete() { :; }
. "$VT_SOURCE_ROOT/completion/trace-collector"
offered() { # CMD: the words completion offers after 'trace-collector CMD -'
	COMP_WORDS=(trace-collector "$1" -) COMP_CWORD=2 COMPREPLY=()
	_trace_collector
	printf '%s\n' "${COMPREPLY[@]}"
}
declare -A not_its=([setup]='--config' [start]='--follow' [snapshot]='--flight-recorder')
for c in setup start status snapshot stop merge report; do
	missing=$(comm -23 <("$TRACE_COLLECTOR" "$c" --help | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u |
		grep -vxF -e "${not_its[$c]:-}" -e --help) <(offered "$c" | sort -u) | tr '\n' ' ')
	check "bash completion of $c offers every option its --help names${missing:+ (missing: $missing)}" test -z "$missing"
done
check_out "start --live-merge with --flight-recorder: refused, saying why" 'with --flight-recorder the window is merged at stop' \
	"$TRACE_COLLECTOR" start --name vm1 --flight-recorder 64M --live-merge
check_out "snapshot without a session: says so" 'no session|not running|no daemon' \
	"$TRACE_COLLECTOR" snapshot --name nosuchvm --run-dir /tmp
check_out "collector unknown command" "unknown command 'frob'" "$TRACE_COLLECTOR" frob
check "collector unknown command fails" bash -c "! '$TRACE_COLLECTOR' frob 2>/dev/null"
check "collector without command fails" bash -c "! '$TRACE_COLLECTOR' 2>/dev/null"

# Every start option with a value: a bad one fails (exit 2... or 1) before anything runs, with
# a message naming the option and what it takes. Table: OPTION BAD_VALUE WORDS_OF_THE_RANGE.
long=$(printf 'x%.0s' $(seq 2100))
while IFS='|' read -r opt bad want; do
	[ -n "$opt" ] || continue
	out=$("$TRACE_COLLECTOR" start --name vm1 "$opt" "$bad" 2>&1); rc=$?
	check "start $opt '${bad:0:20}': fails" test "$rc" -ne 0
	check_out "start $opt '${bad:0:20}': names the option and what it takes" \
		"invalid value .* for option $opt: it takes .*$want" echo "$out"
done <<EOF2
-e|a b|sys:event
--events|sched:sw!|sys:event
--buffer-kb|0|1\.\.4194304
--buffer-kb|4194305|1\.\.4194304
--clock|sundial|auto, kvm or ptp
--trace-clock|local|auto, mono or x86-tsc
--host-events|x y|sys:event
--host-data|/nonexistent/perf.data|existing perf.data
--max-size|2Q|K, M, G or T
--flight-recorder|1M|at least 4M
--qemu-pid|0|1\.\.4194304
--timeout|3601|1\.\.3600
--probe-interval|0.01|0\.05\.\.3600
--heartbeat|x|0\.05\.\.3600
--kvm-debugfs|/$long|256 bytes
--tracer|a b|available_tracers
--ftrace-filter|a;b|globs
--flush-interval|4000|0 \(off\) or 0\.05\.\.3600
EOF2
finish
