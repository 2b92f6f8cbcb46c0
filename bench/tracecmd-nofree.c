// SPDX-License-Identifier: GPL-2.0-only
/*
 * LD_PRELOAD shim for the guest's trace-cmd 3.3.1 agent (bench/tracecmd-fifo.sh --tracecmd 3.3):
 * since 3.3 (b3991bfa, "Prevent a memory leak in get_trace_req_args()") the agent's argv points
 * into the request message buffer, which tracecmd_msg_recv_trace_req() frees before the agent
 * parses it, and agent_handle() then frees argv[0], which is no heap block: every session's
 * child dies of SIGSEGV in free() and the host reads "reading client -107". 3.3.2 copies the
 * buffer (e81cd4e3). free() does nothing here, so the buffer stays valid and nothing invalid is
 * freed; the agent's children exit after each session, and the recorders' loop allocates
 * nothing. No libc is linked: it loads beside trixie's in the guest.
 */
void free(void *ptr);

void free(void *ptr)
{
	(void)ptr;
}
