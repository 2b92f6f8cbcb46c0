// SPDX-License-Identifier: GPL-2.0-only
/* The daemon's texts: agent-stats.ini, the summary at stop, the status answer. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "clocksync.h"
#include "daemon.h"
#include "gbinfetch.h"
#include "hostperf.h"
#include "log.h"
#include "spool.h"
#include "util.h"

void daemon_report_agent_stats(const struct daemon *d)
{
	_cleanup_free_ char *text = NULL;
	char path[PATH_MAX + 32];
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return;
	for (unsigned i = 0; i < d->n_agent_stats; i++) {
		const struct vt_cpu_stats *s = &d->agent_stats[i];

		fprintf(f, "cpu%u.cpu=%u\ncpu%u.error=%d\ncpu%u.pages_sent=%llu\ncpu%u.bytes_sent=%llu\n"
			   "cpu%u.entries=%llu\ncpu%u.overrun=%llu\ncpu%u.commit_overrun=%llu\ncpu%u.bytes=%llu\n"
			   "cpu%u.dropped_events=%llu\ncpu%u.read_events=%llu\n",
			i, s->cpu, i, s->error, i, (unsigned long long)s->pages_sent, i, (unsigned long long)s->bytes_sent,
			i, (unsigned long long)s->entries, i, (unsigned long long)s->overrun,
			i, (unsigned long long)s->commit_overrun, i, (unsigned long long)s->bytes,
			i, (unsigned long long)s->dropped_events, i, (unsigned long long)s->read_events);
	}
	for (unsigned i = 0; i < d->n_perf_stats; i++) {
		const struct vt_perf_stats *p = &d->perf_stats[i];

		fprintf(f, "perf%u.error=%d\nperf%u.bytes_sent=%llu\nperf%u.records=%llu\nperf%u.samples=%llu\n"
			   "perf%u.lost_records=%llu\nperf%u.lost=%llu\nperf%u.synth_records=%llu\n",
			i, p->error, i, (unsigned long long)p->bytes_sent, i, (unsigned long long)p->records,
			i, (unsigned long long)p->samples, i, (unsigned long long)p->lost_records,
			i, (unsigned long long)p->lost, i, (unsigned long long)p->synth_records);
	}
	if (fclose(f) != 0 || !d->n_agent_stats)
		return;
	snprintf(path, sizeof(path), "%s/agent-stats.ini", d->s.dir);
	util_write_file(path, text, len, 0600);
}

/* The guest's own numbers for a CPU: the end marker, else the STOPPED frame. */
static const struct vt_cpu_stats *daemon_report_guest_stats(const struct daemon *d, unsigned cpu,
							    const struct spool_stats *st)
{
	if (st->ended)
		return &st->end;
	for (unsigned i = 0; i < d->n_agent_stats; i++)
		if (d->agent_stats[i].cpu == cpu)
			return &d->agent_stats[i];
	return NULL;
}

/* Guest perf streams (--guest-perf): one line per CPU, then the totals. */
static void daemon_report_perf(const struct daemon *d, FILE *f)
{
	uint64_t records = 0, samples = 0, lost = 0, transport = 0, unknown = 0;
	struct spool_stats st;

	if (!d->o->perf.events)
		return;
	for (unsigned i = 0; i < d->s.ncpus; i++) {
		unsigned k = SPOOL_INDEX(i, true);

		if (d->cpu_missing[k]) {
			fprintf(f, "perf cpu%u: NOT COLLECTED: the guest could not stream it (--allow-partial)\n", i);
			continue;
		}
		spool_stats(d->spools[k], &st);
		fprintf(f, "perf cpu%u: %llu records (%llu samples, %.1f MiB) spooled, %llu lost by the guest kernel "
			   "(%llu LOST records)", i, (unsigned long long)st.records, (unsigned long long)st.samples,
			(double)st.data_bytes / 1048576.0, (unsigned long long)st.lost, (unsigned long long)st.lost_records);
		if (st.ended) {
			uint64_t miss = st.perf_end.bytes_sent > st.data_bytes ? st.perf_end.bytes_sent - st.data_bytes : 0;

			fprintf(f, ", guest sent %llu bytes, %llu lost in transport", (unsigned long long)st.perf_end.bytes_sent,
				(unsigned long long)miss);
			transport += miss;
		} else {
			fprintf(f, "; no end marker: shortfall unknown");
			unknown++;
		}
		if (st.bad_pages)
			fprintf(f, "; %llu impossible record sizes skipped", (unsigned long long)st.bad_pages);
		if (st.fr_dropped)
			fprintf(f, "; flight recorder: the oldest %.1f MiB dropped (task records kept aside), the newest kept",
				(double)st.fr_dropped / 1048576.0);
		fputc('\n', f);
		records += st.records, samples += st.samples, lost += st.lost;
	}
	fprintf(f, "guest perf: %s, %llu records, %llu samples, %llu samples lost in the guest, %llu bytes lost in "
		   "transport%s\n", d->o->perf.events, (unsigned long long)records, (unsigned long long)samples,
		(unsigned long long)lost, (unsigned long long)transport, unknown ? " (some CPUs unknown)" : "");
	if (d->gbin)
		gbinfetch_summary(d->gbin, f);
}

void daemon_report_summary(const struct daemon *d, FILE *f)
{
	uint64_t overrun = 0, dropped = 0, transport = 0, missed = 0, pages = 0, unknown = 0;
	struct spool_stats st;
	char buf[512];

	clocksync_describe(&d->clk, d->s.clock_method, buf, sizeof(buf));
	fprintf(f, "session: %s\nstopped: %s\nelapsed: %.1f s\nclock: %s%s\n",
		d->s.dir, d->s.stop_reason, (double)(d->s.stopped_mono_ns - d->s.started_mono_ns) / 1e9, buf,
		d->clk.written ? " (clock.ini)" : d->clk.fitted || !strcmp(d->s.clock_method, "kvm") ? " (clock.ini NOT written)" : "");
	for (unsigned i = 0; i < d->s.ncpus; i++) {
		const struct vt_cpu_stats *g;

		spool_stats(d->spools[i], &st);
		g = daemon_report_guest_stats(d, i, &st);
		if (d->cpu_missing[i]) {
			fprintf(f, "cpu%u: NOT TRACED: the guest could not stream it (--allow-partial)\n", i);
			continue;
		}
		pages += st.pages;
		missed += st.missed_events;
		fprintf(f, "cpu%u: %llu pages (%.1f MiB) spooled", i, (unsigned long long)st.pages,
			(double)st.pages * d->s.page_size / 1048576.0);
		if (g) {
			uint64_t lost = g->pages_sent > st.pages ? g->pages_sent - st.pages : 0;

			fprintf(f, ", guest sent %llu, %llu lost in transport; ring overrun %llu, dropped %llu events",
				(unsigned long long)g->pages_sent, (unsigned long long)lost,
				(unsigned long long)g->overrun, (unsigned long long)g->dropped_events);
			transport += lost;
			overrun += g->overrun;
			dropped += g->dropped_events;
		} else {
			unknown++;
		}
		if (!st.ended)
			fprintf(f, "; no end marker%s", g ? "" : " and no stop report: shortfall unknown, spool kept up to its last whole page");
		if (st.discarded)
			fprintf(f, "; %llu bytes dropped by the host after the stop/limit", (unsigned long long)st.discarded);
		if (st.fr_dropped)
			fprintf(f, "; flight recorder: the oldest %.1f MiB dropped, the newest kept", (double)st.fr_dropped / 1048576.0);
		fputc('\n', f);
	}
	fprintf(f, "losses: ring overrun %llu events, ring dropped %llu events, ring missed-events %llu (counted in page headers), transport %llu pages%s\n",
		(unsigned long long)overrun, (unsigned long long)dropped, (unsigned long long)missed,
		(unsigned long long)transport, unknown ? " (some CPUs unknown: the guest never reported)" : "");
	fprintf(f, "pages: %llu in total\n", (unsigned long long)pages);
	if (d->s.missing_cpus[0])
		fprintf(f, "NOT TRACED: guest CPUs %s (start --allow-partial)\n", d->s.missing_cpus);
	daemon_report_perf(d, f);
	if (d->perf)
		fprintf(f, "host perf: %s\n", hostperf_state(d->perf, buf, sizeof(buf)));
	else
		fprintf(f, "host perf: %s\n", d->o->host_data[0] ? d->o->host_data : "none (--no-host)");
	daemon_disk_summary(d, f);
}

void daemon_status(struct daemon *d, char *buf, size_t size)
{
	uint64_t now = util_now_ns(CLOCK_MONOTONIC), total = 0, tpages = 0, tbytes = 0, tmissed = 0, tevents = 0;
	uint64_t fr = 0;
	double trate = 0;
	size_t len = 0;
	struct spool_stats st;
	char perf[256], clock[512];
	FILE *f = fmemopen(buf, size, "w");

	if (!f) {
		snprintf(buf, size, "error: out of memory\n");
		return;
	}
	for (unsigned k = 0; k < ARRAY_SIZE(d->spools); k++) /* what status shows is in the files */
		(void)spool_persist(d->spools[k]);
	fprintf(f, "session: %s\nstate: %s%s%s\n", d->s.dir, daemon_phase_names[d->ph],
		d->s.stop_reason[0] ? " — " : "", d->s.stop_reason);
	if (!strcmp(d->s.clock_method, "ptp") && !d->clk.written)
		clocksync_fit(&d->clk); /* the fit so far */
	clocksync_describe(&d->clk, d->s.clock_method, clock, sizeof(clock));
	fprintf(f, "elapsed: %.1f s\nclock: %s\n",
		(double)((d->ph == PH_STOPPED ? d->s.stopped_mono_ns : now) - d->s.started_mono_ns) / 1e9, clock);
	fprintf(f, "%-6s %10s %12s %8s %12s %13s %10s\n", "cpu", "pages", "bytes", "MB/s", "ring-missed",
		"missed-events", "transport");
	for (unsigned i = 0; i < d->s.ncpus; i++) {
		char lost[32] = "-";

		spool_stats(d->spools[i], &st);
		total += st.spooled - st.fr_dropped;
		fr += st.fr_dropped;
		if (st.ended)
			snprintf(lost, sizeof(lost), "%llu", (unsigned long long)(st.end.pages_sent > st.pages ? st.end.pages_sent - st.pages : 0));
		if (d->cpu_missing[i]) {
			fprintf(f, "cpu%-3u NOT TRACED: the guest cannot stream this CPU (--allow-partial)\n", i);
			continue;
		}
		fprintf(f, "cpu%-3u %10llu %12llu %8.2f %12llu %13llu %10s\n", i, (unsigned long long)st.pages,
			(unsigned long long)st.data_bytes, spool_rate(d->spools[i]), (unsigned long long)st.missed_pages,
			(unsigned long long)st.missed_events, lost);
		tpages += st.pages, tbytes += st.data_bytes, trate += spool_rate(d->spools[i]);
		tmissed += st.missed_pages, tevents += st.missed_events;
	}
	fprintf(f, "%-6s %10llu %12llu %8.2f %12llu %13llu\n", "total", (unsigned long long)tpages,
		(unsigned long long)tbytes, trate, (unsigned long long)tmissed, (unsigned long long)tevents);
	if (d->s.missing_cpus[0])
		fprintf(f, "not traced: guest CPUs %s\n", d->s.missing_cpus);
	daemon_report_perf(d, f);
	for (unsigned i = 0; d->o->perf.events && i < d->s.ncpus; i++)
		if (d->spools[SPOOL_INDEX(i, true)]) {
			spool_stats(d->spools[SPOOL_INDEX(i, true)], &st);
			total += st.spooled - st.fr_dropped;
			fr += st.fr_dropped;
		}
	if (d->o->flight_recorder)
		fprintf(f, "flight recorder: the newest %.1f MiB of each stream kept, %.1f MiB dropped so far\n",
			(double)d->o->flight_recorder / 1048576.0, (double)fr / 1048576.0);
	if (d->live)
		live_status(d, f);
	fprintf(f, "spool: %.1f MB on disk\nhost perf: %s\n", (double)total / 1e6,
		d->perf ? hostperf_state(d->perf, perf, sizeof(perf)) : d->o->host_data[0] ? d->o->host_data : "none");
	daemon_disk_summary(d, f);
	fflush(f);
	len = (size_t)ftell(f);
	fclose(f);
	buf[MIN(len, size - 1)] = '\0';
}
