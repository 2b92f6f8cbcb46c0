// SPDX-License-Identifier: GPL-2.0-only
#include "log.h"

#include <errno.h>
#include <stdio.h>

int log_level = LOG_INFO;
const char *log_prog = "virtio-trace";

void log_vmsg(int level, const char *fmt, va_list ap)
{
	static const char *const tag[] = {
		[LOG_ERR] = "error: ", [LOG_WARN] = "warning: ", [LOG_INFO] = "", [LOG_DEBUG] = "debug: ",
	};
	char line[2048];
	int saved = errno;

	if (level > log_level)
		return;
	vsnprintf(line, sizeof(line), fmt, ap);
	/* One fprintf per line so that threads never interleave halves of messages. */
	fprintf(stderr, "%s: %s%s\n", log_prog, tag[level < 0 ? 0 : level > LOG_DEBUG ? LOG_DEBUG : level], line);
	errno = saved;
}

void log_msg(int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(level, fmt, ap);
	va_end(ap);
}
