# SPDX-License-Identifier: GPL-2.0-only
# --help and --version of both binaries; unknown commands and options fail with a message.
. "$(dirname "$0")/lib.sh"

check_out "agent --version" '^trace-agent [0-9]+\.[0-9]+' "$TRACE_AGENT" --version
check_out "agent --help names the legacy control" "line '1'" "$TRACE_AGENT" --help
check_out "agent --help lists default events" 'sched, irq, timer' "$TRACE_AGENT" --help
check "agent rejects unknown option" bash -c "! '$TRACE_AGENT' --bogus 2>/dev/null"
check_out "agent bad --instance named" "instance name '../x'" "$TRACE_AGENT" --instance ../x
check_out "collector --version" '^trace-collector [0-9]+\.[0-9]+' "$TRACE_COLLECTOR" --version
for c in setup start status stop merge; do
	check_out "collector --help lists $c" "^  $c " "$TRACE_COLLECTOR" --help
	check_out "collector $c --help" "^Usage: trace-collector $c" "$TRACE_COLLECTOR" "$c" --help
done
check_out "collector unknown command" "unknown command 'frob'" "$TRACE_COLLECTOR" frob
check "collector unknown command fails" bash -c "! '$TRACE_COLLECTOR' frob 2>/dev/null"
check "collector without command fails" bash -c "! '$TRACE_COLLECTOR' 2>/dev/null"
finish
