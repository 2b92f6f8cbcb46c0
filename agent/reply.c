// SPDX-License-Identifier: GPL-2.0-only
/* The ERROR reply every handler may send (control.c, binary.c, the frame reader in agent.c):
 * below them all, so none calls another back for it. */
#include <stdarg.h>
#include <stdio.h>

#include "agent.h"
#include "log.h"

void reply_error(struct vt_buf *out, uint32_t seq, int err, const char *fmt, ...)
{
	char msg[VT_PROTO_MAX_STR];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_warn("error reply to the host: %s", msg);
	vt_msg_begin(out, VT_MSG_ERROR, seq);
	vt_put_u32(out, VT_A_ERRNO, (uint32_t)(err < 0 ? -err : err));
	vt_put_str(out, VT_A_MESSAGE, msg);
	(void)vt_msg_end(out);
}
