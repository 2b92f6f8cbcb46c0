/* SPDX-License-Identifier: GPL-2.0-only */
/* Logging: one line per message, prefixed with the program name. */
#pragma once

#include <stdarg.h>

enum log_level { LOG_ERR = 0, LOG_WARN, LOG_INFO, LOG_DEBUG };

/* The only mutable globals besides parsed options. */
extern int log_level;
extern const char *log_prog;

void log_msg(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void log_vmsg(int level, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

#define log_error(...) log_msg(LOG_ERR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) do { if (log_level >= LOG_DEBUG) log_msg(LOG_DEBUG, __VA_ARGS__); } while (0)
