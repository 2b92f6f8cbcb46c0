# SPDX-License-Identifier: GPL-2.0-only
# The agent is one static file: it runs from an empty directory with no libraries at all.
. "$(dirname "$0")/lib.sh"

check_out "file says statically linked" 'statically linked' file -L "$TRACE_AGENT"
check_out "ldd finds no dynamic section" 'not a dynamic executable' ldd "$TRACE_AGENT"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/root/bin"
cp "$TRACE_AGENT" "$tmp/root/bin/trace-agent"
# A root with nothing but the binary: no libc, no loader.
check_out "runs --version in an empty root" '^trace-agent ' chroot "$tmp/root" /bin/trace-agent --version
finish
