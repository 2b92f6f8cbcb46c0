// SPDX-License-Identifier: GPL-2.0-only
/* stop's short summary: problems listed on one line each (summary_list, also the daemon's),
 * and the merge's own summary, captured at stop, said in two lines: what it merged and dropped,
 * and what it warns of. The full texts go to SESSION/stop-summary.txt and 'stop -v'. */
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector.h"
#include "log.h"
#include "util.h"

void summary_list_add(struct summary_list *l, const char *fmt, ...)
{
	size_t room = sizeof(l->text) - l->len;
	va_list ap;
	int n;

	if (l->n++ >= SUMMARY_LIST_SHOWN || room < 2)
		return;
	if (l->len) {
		n = snprintf(l->text + l->len, room, "%s", l->sep);
		l->len += MIN((size_t)n, room - 1);
		room = sizeof(l->text) - l->len;
	}
	va_start(ap, fmt);
	n = vsnprintf(l->text + l->len, room, fmt, ap);
	va_end(ap);
	l->len += n < 0 ? 0 : MIN((size_t)n, room - 1);
}

const char *summary_list_str(struct summary_list *l)
{
	size_t room = sizeof(l->text) - l->len;

	if (l->n > SUMMARY_LIST_SHOWN && room > 1) {
		int n = snprintf(l->text + l->len, room, ", and %u more", l->n - SUMMARY_LIST_SHOWN);

		l->len += n < 0 ? 0 : MIN((size_t)n, room - 1);
		l->n = SUMMARY_LIST_SHOWN; /* said once */
	}
	return l->text;
}

/* What the merge summary's lines say, by the section ("  host:", "  losses:", ...) they are in. */
struct merge_brief {
	struct summary_list dropped, warn;
	uint64_t host, guest, exits;
	unsigned types;
	bool seen;
	char section[32];
};

/* A line of its own section: the warnings among them (the FALLBACK of the vCPU mapping when
 * there is a host recording to map with, a clock recovered, binaries refused, ...). */
static void summary_merge_head(struct merge_brief *b, const char *line, char *hint, size_t hintlen)
{
	static const char *const warn[] = { "FALLBACK", "REFUSED", "UNALIGNED", "recovered", "not merged",
					    "stand-in", "not placed", "CUT" };
	const char *p = line + strspn(line, " ");
	char label[sizeof(b->section)];

	snprintf(label, sizeof(label), "%.*s", (int)strcspn(p, ":"), p);
	if (*p < 'A' || *p > 'Z') /* "NOT TRACED: ..." amid the guest's lines is no section */
		snprintf(b->section, sizeof(b->section), "%s", label);
	if (!strcmp(label, "host") && (p = strstr(line, " samples in, ")))
		b->host = strtoull(p + 13, NULL, 10);
	else if (!strcmp(label, "guest"))
		b->guest = strtoull(line + 10, NULL, 10);
	else if (!strcmp(label, "exits")) /* exit samples: "  exits:  N guest samples ..." of each VM */
		b->exits += strtoull(p + 6, NULL, 10);
	else if (!strcmp(label, "guest user functions"))
		snprintf(hint, hintlen, "%s", line + 2);
	for (size_t i = 0; i < ARRAY_SIZE(warn); i++)
		if (strstr(line, warn[i]) && !strstr(line, "because no host recording")) {
			summary_list_add(&b->warn, "%s", line + strspn(line, " "));
			break;
		}
}

/* An indented line below a section head. */
static void summary_merge_item(struct merge_brief *b, const char *line)
{
	const char *p = line + strspn(line, " ");

	if (!strcmp(b->section, "guest") && !strncmp(p, "guest_", 6))
		b->types++;
	else if (!strcmp(b->section, "losses") || !strcmp(b->section, "perf"))
		summary_list_add(&b->dropped, "%s", p);
	else if (!strcmp(b->section, "vcpu"))
		summary_list_add(&b->warn, "vcpu: %s", p);
}

/* The merge summary (text) in at most two lines on out: "merged:" with what it dropped, and
 * "warnings:"; hint gets its "guest user functions: perf ..." line ("" when none). */
void summary_merge_brief(const char *text, FILE *out, char *hint, size_t hintlen)
{
	struct merge_brief b = { .dropped = { .sep = "; " }, .warn = { .sep = "; " } };
	const char *line = text;

	hint[0] = '\0';
	while (line && *line) {
		const char *end = strchr(line, '\n');
		char buf[1024];

		snprintf(buf, sizeof(buf), "%.*s", (int)(end ? end - line : (long)strlen(line)), line);
		if (!strcmp(buf, "merge summary"))
			b.seen = true;
		else if (b.seen && !strncmp(buf, "   ", 3))
			summary_merge_item(&b, buf);
		else if (b.seen && !strncmp(buf, "  ", 2))
			summary_merge_head(&b, buf, hint, hintlen);
		line = end ? end + 1 : NULL;
	}
	if (!b.seen)
		return;
	fprintf(out, "merged: %llu host samples, %llu guest samples of %u event type%s (counts per type: stop -v)", (unsigned long long)b.host,
		(unsigned long long)b.guest, b.types, b.types == 1 ? "" : "s");
	if (b.exits) /* collector/merge/exits.c */
		fprintf(out, ", %llu guest samples at VM exits (guest_kvm:kvm_exit)", (unsigned long long)b.exits);
	fprintf(out, "; %s%s\n", b.dropped.n ? "dropped: " : "nothing dropped", summary_list_str(&b.dropped));
	if (b.warn.n)
		fprintf(out, "warnings: %s\n", summary_list_str(&b.warn));
}

FILE *stop_summary_open(const char *session_dir, bool truncate)
{
	char path[PATH_MAX + 32];
	FILE *f = NULL;
	int fd;

	snprintf(path, sizeof(path), "%s/stop-summary.txt", session_dir);
	fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC | (truncate ? O_TRUNC : 0), 0600);
	if (fd < 0 || !(f = fdopen(fd, "a+"))) {
		log_warn("%s: cannot write the full summary: %m", path);
		if (fd >= 0)
			close(fd);
	}
	return f;
}

void stop_summary_reply(const char *reply, bool verbose, FILE *out, FILE *file)
{
	const char *sep = strstr(reply, DAEMON_SUMMARY_DETAILS "\n");
	const char *full = sep ? sep + strlen(DAEMON_SUMMARY_DETAILS) + 1 : reply;

	if (verbose || !sep)
		fputs(full, out);
	else
		fwrite(reply, 1, (size_t)(sep - reply), out);
	if (file)
		fputs(full, file);
}

void stop_zstd_hint(const char *merge_args, const char *out, bool remergeable, FILE *f)
{
	fprintf(f, "  %s is zstd-compressed: perf reads it; hotspot's perfparser and older perf need a plain %s\n", out,
		remergeable ? "copy:" : "file,");
	if (remergeable)
		fprintf(f, "    trace-collector merge %s --no-compress -o PLAIN.data   (next time: stop --no-compress)\n", merge_args);
	else
		fprintf(f, "    and this session cannot be merged again (spool pages were freed behind the live merge): "
			"start with --no-compress for them\n");
}
