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

/* The short summary's counts and lists of problems, from one pass over the CPUs. */
struct brief {
	struct summary_list lost, noend, noreport, cut, perf_lost, perf_missing, perf_noend;
	uint64_t overrun, dropped, missed, transport, pages, fr;
	uint64_t perf_samples_lost, perf_transport, perf_bad;
	unsigned traced;
};

static void daemon_report_brief_cpu(const struct daemon *d, unsigned i, struct brief *b)
{
	const struct vt_cpu_stats *g;
	struct spool_stats st;
	uint64_t lost = 0, events;

	if (d->cpu_missing[i])
		return; /* named by d->s.missing_cpus */
	spool_stats(d->spools[i], &st);
	g = daemon_report_guest_stats(d, i, &st);
	b->traced++, b->pages += st.pages, b->missed += st.missed_events, b->fr += st.fr_dropped;
	if (g) {
		lost = g->pages_sent > st.pages ? g->pages_sent - st.pages : 0;
		b->overrun += g->overrun, b->dropped += g->dropped_events, b->transport += lost;
		events = g->overrun + g->dropped_events;
	} else {
		events = st.missed_events;
	}
	if (events && lost)
		summary_list_add(&b->lost, "cpu%u %llu events + %llu pages", i, (unsigned long long)events,
				 (unsigned long long)lost);
	else if (events || lost)
		summary_list_add(&b->lost, "cpu%u %llu %s", i, (unsigned long long)(events ? events : lost),
				 events ? "events" : "pages");
	if (!st.ended)
		summary_list_add(g ? &b->noend : &b->noreport, "cpu%u", i);
	if (st.discarded)
		summary_list_add(&b->cut, "cpu%u %llu", i, (unsigned long long)st.discarded);
}

static void daemon_report_brief_perf(const struct daemon *d, unsigned i, struct brief *b)
{
	unsigned k = SPOOL_INDEX(i, true);
	struct spool_stats st;
	uint64_t miss = 0;

	if (d->cpu_missing[k]) {
		summary_list_add(&b->perf_missing, "cpu%u", i);
		return;
	}
	spool_stats(d->spools[k], &st);
	if (st.ended)
		miss = st.perf_end.bytes_sent > st.data_bytes ? st.perf_end.bytes_sent - st.data_bytes : 0;
	else
		summary_list_add(&b->perf_noend, "cpu%u", i);
	if (st.lost || miss || st.bad_pages)
		summary_list_add(&b->perf_lost, "cpu%u %llu samples + %llu bytes", i, (unsigned long long)st.lost,
				 (unsigned long long)(miss + st.bad_pages));
	b->perf_samples_lost += st.lost, b->perf_transport += miss, b->perf_bad += st.bad_pages;
	b->fr += st.fr_dropped;
}

static void daemon_report_brief_losses(const struct daemon *d, struct brief *b, FILE *f)
{
	fprintf(f, "losses: ring overrun %llu events, ring dropped %llu events, ring missed-events %llu "
		   "(counted in page headers), transport %llu pages%s", (unsigned long long)b->overrun, (unsigned long long)b->dropped,
		(unsigned long long)b->missed, (unsigned long long)b->transport,
		b->noreport.n ? " (some CPUs unknown: the guest never reported)" : "");
	if (b->lost.n)
		fprintf(f, "; by CPU: %s", summary_list_str(&b->lost));
	if (d->o->perf.events)
		fprintf(f, "; guest perf: %llu samples lost in the guest, %llu bytes in transport%s%s",
			(unsigned long long)b->perf_samples_lost, (unsigned long long)(b->perf_transport + b->perf_bad),
			b->perf_lost.n ? ": " : "", summary_list_str(&b->perf_lost));
	fputc('\n', f);
}

/* One line for what is missing (CPUs not traced, no end marker, binaries not sent), one for
 * what was cut (a disk bound, bytes dropped after the stop, the flight recorder, the fetch). */
static void daemon_report_brief_gaps(const struct daemon *d, struct brief *b, FILE *f)
{
	struct summary_list gaps = { .sep = "; " }, cut = { .sep = "; " };
	unsigned not_sent = 0, gcut = 0;
	const char *why = "";

	if (d->s.missing_cpus[0])
		summary_list_add(&gaps, "NOT TRACED: guest CPUs %s (start --allow-partial)", d->s.missing_cpus);
	if (b->noreport.n)
		summary_list_add(&gaps, "no end marker and no stop report, shortfall unknown: %s", summary_list_str(&b->noreport));
	if (b->noend.n)
		summary_list_add(&gaps, "no end marker: %s", summary_list_str(&b->noend));
	if (b->perf_missing.n)
		summary_list_add(&gaps, "guest perf NOT COLLECTED: %s", summary_list_str(&b->perf_missing));
	if (b->perf_noend.n)
		summary_list_add(&gaps, "guest perf without an end marker (shortfall unknown): %s",
				 summary_list_str(&b->perf_noend));
	if (d->gbin)
		gbinfetch_missing(d->gbin, &not_sent, &gcut, &why);
	if (not_sent)
		summary_list_add(&gaps, "guest binaries: %u not sent (their functions stay unnamed)", not_sent);
	if (gaps.n)
		fprintf(f, "missing: %s\n", summary_list_str(&gaps));
	if (b->cut.n)
		summary_list_add(&cut, "bytes dropped by the host after the stop/limit: %s", summary_list_str(&b->cut));
	if (b->fr)
		summary_list_add(&cut, "flight recorder: the oldest %.1f MiB dropped, the newest kept", (double)b->fr / 1048576.0);
	if (gcut)
		summary_list_add(&cut, "guest binaries: %u CUT: %s", gcut, why);
	if (d->disk_cut[0] || cut.n)
		fprintf(f, "%s%s%s\n", d->disk_cut[0] ? d->disk_cut : "cut: ", d->disk_cut[0] && cut.n ? "; " : "",
			summary_list_str(&cut));
}

/* The live migrations the session followed, one line each. */
static void daemon_report_migrations(const struct daemon *d, FILE *f)
{
	for (unsigned i = 0; i < d->s.nmig; i++)
		fprintf(f, "migrated: %.1f s in, QEMU %d -> %d (a live migration on this host: the session followed "
			   "the guest to the new QEMU)\n", (double)(d->s.mig[i].mono_ns - d->s.started_mono_ns) / 1e9,
			(int)d->s.mig[i].from, (int)d->s.mig[i].to);
	/* the guest's clock fell behind the host's across the migration: the fit's step (more than
	 * QEMU's own "downtime" and than the gap between the two QEMUs' vCPU threads on the host:
	 * docs/migration.md) */
	if (d->s.nmig && !strcmp(d->s.clock_method, "ptp") && d->clk.fitted && d->clk.fit.step_max_ns)
		fprintf(f, "blackout: the guest's clock fell %.1f ms behind the host's across %s (the clock fit's step)\n",
			(double)d->clk.fit.step_max_ns / 1e6, d->s.nmig > 1 ? "the worst migration" : "it");
	else if (d->s.nmig && !strcmp(d->s.clock_method, "kvm") && d->clk.kvm_jump_cycles)
		fprintf(f, "blackout: the guest's TSC fell %llu cycles behind the host's across %s (KVM's offsets moved "
			   "that much: the guest's TSC is held over the switch)\n", (unsigned long long)d->clk.kvm_jump_cycles,
			d->s.nmig > 1 ? "the worst migration" : "it");
}

/* The short summary, a dozen lines whatever the number of CPUs: counts, and each kind of
 * problem on one line naming the CPUs (the first few, then how many more). */
static void daemon_report_brief(const struct daemon *d, FILE *f)
{
	struct brief b = { .lost = { .sep = ", " }, .noend = { .sep = ", " }, .noreport = { .sep = ", " },
			   .cut = { .sep = ", " }, .perf_lost = { .sep = ", " }, .perf_missing = { .sep = ", " },
			   .perf_noend = { .sep = ", " } };
	uint64_t reason_ns = d->stop_begun_ns ? d->stop_begun_ns : d->s.stopped_mono_ns;
	char buf[1024], ended[64] = "";

	/* when the reason came, as the cut line says it; the wait for the agent's end after it */
	if (d->s.stopped_mono_ns >= reason_ns + SEC)
		snprintf(ended, sizeof(ended), " (finalized %.1f s in)", (double)(d->s.stopped_mono_ns - d->s.started_mono_ns) / 1e9);
	for (unsigned i = 0; i < d->s.ncpus; i++) {
		daemon_report_brief_cpu(d, i, &b);
		if (d->o->perf.events)
			daemon_report_brief_perf(d, i, &b);
	}
	clocksync_describe(&d->clk, d->s.clock_method, buf, sizeof(buf));
	fprintf(f, "session: %s\nstopped: %s after %.1f s%s; %u of %u vCPUs traced, %llu pages (%.1f MiB)\n"
		   "clock: %s%s\n", d->s.dir, d->s.stop_reason,
		(double)(reason_ns - d->s.started_mono_ns) / 1e9, ended, b.traced, d->s.ncpus,
		(unsigned long long)b.pages, (double)b.pages * d->s.page_size / 1048576.0, buf,
		d->clk.written ? " (clock.ini)" : d->clk.fitted || !strcmp(d->s.clock_method, "kvm") ? " (clock.ini NOT written)" : "");
	daemon_report_migrations(d, f);
	daemon_report_brief_losses(d, &b, f);
	daemon_report_brief_gaps(d, &b, f);
	if (d->perf)
		fprintf(f, "host perf: %s\n", hostperf_state(d->perf, buf, sizeof(buf)));
	else
		fprintf(f, "host perf: %s\n", d->o->host_data[0] ? d->o->host_data : "none (--no-host)");
}

/* The full summary: a line per CPU and per guest perf stream (stop -v). */
static void daemon_report_full(const struct daemon *d, FILE *f)
{
	uint64_t overrun = 0, dropped = 0, transport = 0, missed = 0, pages = 0, unknown = 0;
	struct spool_stats st;
	char buf[1024];

	clocksync_describe(&d->clk, d->s.clock_method, buf, sizeof(buf));
	fprintf(f, "session: %s\nstopped: %s\nelapsed: %.1f s\nclock: %s%s\n",
		d->s.dir, d->s.stop_reason, (double)(d->s.stopped_mono_ns - d->s.started_mono_ns) / 1e9, buf,
		d->clk.written ? " (clock.ini)" : d->clk.fitted || !strcmp(d->s.clock_method, "kvm") ? " (clock.ini NOT written)" : "");
	daemon_report_migrations(d, f);
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

/* The short summary, then DAEMON_SUMMARY_DETAILS and the full one (stop -v). */
void daemon_report_summary(const struct daemon *d, FILE *f)
{
	daemon_report_brief(d, f);
	fprintf(f, "%s\n", DAEMON_SUMMARY_DETAILS);
	daemon_report_full(d, f);
}

void daemon_status(struct daemon *d, char *buf, size_t size)
{
	uint64_t now = util_now_ns(CLOCK_MONOTONIC), total = 0, tpages = 0, tbytes = 0, tmissed = 0, tevents = 0;
	uint64_t fr = 0;
	double trate = 0;
	size_t len = 0;
	struct spool_stats st;
	char perf[256], clock[1024];
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
	daemon_report_migrations(d, f);
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
