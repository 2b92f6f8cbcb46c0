// SPDX-License-Identifier: GPL-2.0-only
/* trace-collector report FILE: why the guest's vCPUs stalled, from a merged perf.data
 * (collector/report/, docs/guide-report.md): a table and per-vCPU summary, --json, --svg. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "log.h"
#include "report.h"
#include "util.h"

static int report_cmd_run(int argc, char **argv);
const struct cmd_entry cmd_report = {
	.name = "report",
	.summary = "why the guest stalled: each vCPU's host-side stalls and their culprits",
	.usage = "FILE [--json | --svg OUT.svg [--from S] [--to S]] [--min-ms N] [--vcpu N] [--top N]\n"
		 "Reads a merged perf.data (stop's or merge's output: a file or a perf.data directory) and\n"
		 "follows each vCPU's QEMU thread on the host (host sched_switch/sched_wakeup, kvm_exit/entry)\n"
		 "and its guest task (guest sched_switch). A stall is a time the guest had work on a vCPU\n"
		 "but its thread was off every host CPU; each gets a cause (preempted, host_blocked,\n"
		 "vm_exit, unknown) and a culprit (the host task that ran on its CPU instead, or its waker).\n"
		 "  --min-ms N   list stalls of at least N ms (default 1; decimals allowed)\n"
		 "  --vcpu N     only vCPU N\n"
		 "  --top N      the N longest stalls in the table (default 10)\n"
		 "  --json       one JSON object on stdout (stalls[], vcpus[]; docs/guide-report.md)\n"
		 "  --svg OUT    a picture: one lane per vCPU, guest tasks, stalls with their culprit\n"
		 "  --from S, --to S  the picture's range, in seconds as perf script prints times\n",
	.run = report_cmd_run,
};

/* Seconds (decimals allowed) to ns; -EINVAL when not a number. */
static int report_cmd_seconds(const char *s, double scale, uint64_t *ret)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || *end || !(v >= 0) || v * scale > 1.8e19)
		return -EINVAL;
	*ret = (uint64_t)(v * scale + 0.5);
	return 0;
}

struct report_cmd {
	struct report_opts o;
	struct report_filter f;
	bool json;
	const char *svg, *file;
};

static int report_cmd_parse(int argc, char **argv, struct report_cmd *c)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' }, { "svg", required_argument, NULL, 's' },
		{ "min-ms", required_argument, NULL, 'm' }, { "vcpu", required_argument, NULL, 'v' },
		{ "top", required_argument, NULL, 't' }, { "from", required_argument, NULL, 'F' },
		{ "to", required_argument, NULL, 'T' }, { "help", no_argument, NULL, 'h' }, { 0 },
	};
	uint64_t u;
	int ch, q = 0;

	optind = 1;
	while (q == 0 && (ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'j': c->json = true; break;
		case 's': c->svg = optarg; break;
		case 'm': q = report_cmd_seconds(optarg, 1e6, &c->o.min_ns); break;
		case 'v': q = util_parse_u64(optarg, REPORT_MAX_VCPUS - 1, &u); c->f.vcpu = (long)u; break;
		case 't': q = util_parse_u64(optarg, 1u << 30, &u); c->f.top = (size_t)u; break;
		case 'F': q = report_cmd_seconds(optarg, 1e9, &c->o.from); break;
		case 'T': q = report_cmd_seconds(optarg, 1e9, &c->o.to); break;
		case 'h': cmd_usage(&cmd_report, 0); return 1;
		default: cmd_bad_option(&cmd_report); return -EINVAL;
		}
		if (q < 0)
			log_error("report: bad value '%s' for --%s (see trace-collector report --help)", optarg,
				  longopts[ch == 'm' ? 2 : ch == 'v' ? 3 : ch == 't' ? 4 : ch == 'F' ? 5 : 6].name);
	}
	if (q < 0)
		return q;
	if (optind != argc - 1) {
		log_error("report needs one FILE, the merged perf.data (see trace-collector report --help)");
		return -EINVAL;
	}
	if (c->json && c->svg) {
		log_error("report: --json and --svg exclude each other (run report twice)");
		return -EINVAL;
	}
	if (c->o.to <= c->o.from) {
		log_error("report: --to must be after --from");
		return -EINVAL;
	}
	if (!c->svg && (c->o.from || c->o.to != UINT64_MAX)) {
		log_error("report: --from and --to choose the SVG's window: give --svg OUT.svg too");
		return -EINVAL;
	}
	c->file = argv[optind];
	c->o.bands = c->svg != NULL;
	return 0;
}

static int report_cmd_svg(struct report *r, const struct report_cmd *c)
{
	/* never through a link: report runs as root on files in shared places too */
	int fd = open(c->svg, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
	int q;

	if (!f) {
		log_error("report: cannot create %s: %s", c->svg,
			  errno == ELOOP ? "it is a symbolic link (give the file's own path)" : strerror(errno));
		if (fd >= 0)
			close(fd);
		return 1;
	}
	q = report_svg(r, &c->f, f);
	if (fclose(f) != 0 && q == 0)
		q = -errno;
	if (q < 0) {
		log_error("report: cannot write %s: %s", c->svg, strerror(-q));
		return 1;
	}
	printf("%s: written (%zu stalls of %.1f ms or more in the file)\n", c->svg, r->n_stalls, (double)r->o.min_ns / 1e6);
	return 0;
}

/* What the options ask for that the file does not hold: said, exit 1, rather than an empty
 * report that reads as "no stalls". */
static int report_cmd_check(const struct report *r, const struct report_cmd *c)
{
	uint32_t most = 0;

	if (!r->n_vms) {
		log_error("report: %s holds no guest (no VM in its ID_INDEX): give the merged file of "
			  "'trace-collector stop' or 'merge', not a host recording", c->file);
		return 1;
	}
	for (size_t i = 0; i < r->n_vms; i++)
		most = r->vms[i].n_vcpus > most ? r->vms[i].n_vcpus : most;
	if (c->f.vcpu >= (long)most) {
		log_error("report: --vcpu %ld: no VM of %s has it (%s %u vCPUs, 0..%u)", c->f.vcpu, c->file,
			  r->n_vms > 1 ? "its VMs have at most" : "its VM has", most, most ? most - 1 : 0);
		return 1;
	}
	if (c->svg && r->t_last && (c->o.from > r->t_last || c->o.to < r->t_first)) {
		log_error("report: the window --from %.6f --to %.6f s holds nothing of %s: its events run "
			  "from %.6f to %.6f s", (double)c->o.from / 1e9,
			  c->o.to == UINT64_MAX ? (double)r->t_last / 1e9 : (double)c->o.to / 1e9, c->file,
			  (double)r->t_first / 1e9, (double)r->t_last / 1e9);
		return 1;
	}
	return 0;
}

static int report_cmd_run(int argc, char **argv)
{
	struct report_cmd c = { .o = { .min_ns = 1000000, .to = UINT64_MAX }, .f = { .vcpu = -1, .top = 10 } };
	struct report r;
	char err[512];
	int q = report_cmd_parse(argc, argv, &c);

	if (q)
		return q > 0 ? 0 : 2;
	if (report_init(&r, &c.o) < 0) {
		log_error("report: out of memory");
		return 1;
	}
	q = report_read(&r, c.file, err, sizeof(err));
	if (q < 0) {
		log_error("report: cannot read %s: %s (give the output of 'trace-collector stop' or 'merge')", c.file,
			  err[0] ? err : strerror(-q));
		report_free(&r);
		return 1;
	}
	if ((q = report_cmd_check(&r, &c))) {
		report_free(&r);
		return q;
	}
	report_sort_stalls(&r);
	if (c.json)
		report_json(&r, &c.f, stdout);
	else if (c.svg)
		q = report_cmd_svg(&r, &c);
	else
		report_text(&r, &c.f, stdout);
	report_free(&r);
	return q;
}

/* stop's line (collector.h): stalls over 1 ms in OUT, or why they are not known. */
void report_stop_summary(const char *path, FILE *out)
{
	struct report_opts o = { .min_ns = 1000000, .to = UINT64_MAX };
	struct report r;
	char err[512];

	if (report_init(&r, &o) < 0)
		return;
	if (report_read(&r, path, err, sizeof(err)) < 0) {
		fprintf(out, "stalls:  not known (%s)\n", err);
	} else {
		report_sort_stalls(&r);
		report_summary_line(&r, out);
	}
	report_free(&r);
}
