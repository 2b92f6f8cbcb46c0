// SPDX-License-Identifier: GPL-2.0-only
/* The report as a picture: one lane per vCPU on a time axis (--from/--to; by default where the
 * guest trace runs, in seconds from the window's start), the guest task that held it (a colour
 * per task, named on its band where the name fits, idle light grey; a legend of the colours),
 * the host thread's switched-out times as a dark strip under it, and each stall as a red mark
 * with its culprit written under it where it fits, the longest always (hover: <title> details).
 * The <svg> element carries the time-to-x mapping (data-*) so a test can find what it drew;
 * task names, culprits and legend entries carry classes (task, culprit, legend) to count. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "util.h"

#define SVG_W 1400.0
#define SVG_LEFT 150.0
#define SVG_PLOT (SVG_W - SVG_LEFT - 40.0)
#define SVG_TOP 50.0
#define SVG_LANE 64.0
#define SVG_BAND 30.0

#define SVG_CHAR 6.2 /* the width of a 10 px sans-serif character, about */
#define SVG_LEGEND_MAX 12

struct svg {
	FILE *out;
	uint64_t from, to;
	const struct report_stall *longest; /* labelled whatever its width */
	double x0, x1, y; /* the rect being built */
	char fill[16];
	bool open;
};

static double svg_x(const struct svg *s, uint64_t t)
{
	if (t <= s->from)
		return SVG_LEFT;
	if (t >= s->to)
		return SVG_LEFT + SVG_PLOT;
	return SVG_LEFT + SVG_PLOT * (double)(t - s->from) / (double)(s->to - s->from);
}

static void svg_text(FILE *out, const char *t)
{
	for (; *t; t++) {
		if (*t == '<')
			fputs("&lt;", out);
		else if (*t == '>')
			fputs("&gt;", out);
		else if (*t == '&')
			fputs("&amp;", out);
		else if ((unsigned char)*t >= 0x20 && (unsigned char)*t < 0x7f)
			fputc(*t, out);
	}
}

/* A colour per guest task name (idle grey). */
static void svg_colour_of(int32_t pid, const char *comm, char *buf)
{
	uint32_t h = 2166136261u;

	if (pid == 0) {
		snprintf(buf, 16, "#dddddd");
		return;
	}
	for (const char *c = comm; *c; c++)
		h = (h ^ (uint8_t)*c) * 16777619u;
	/* blues and greens: red stays the stalls' */
	snprintf(buf, 16, "#%02x%02x%02x", 40 + (h & 0x3f), 110 + ((h >> 8) & 0x7f), 140 + ((h >> 16) & 0x73));
}

static void svg_colour(const struct report_band *b, char *buf)
{
	svg_colour_of(b->pid, b->comm, buf);
}

static void svg_flush(struct svg *s, double h)
{
	if (s->open)
		fprintf(s->out, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\"/>\n", s->x0, s->y,
			MAX(s->x1 - s->x0, 0.5), h, s->fill);
	s->open = false;
}

/* Bands closer than a pixel join the rect being built: the picture stays small at any size. */
static void svg_band(struct svg *s, double x0, double x1, const char *fill, double y, double h)
{
	if (s->open && s->y == y && x0 <= s->x1 + 0.5 && (!strcmp(s->fill, fill) || x1 - x0 < 1.0)) {
		s->x1 = MAX(s->x1, x1);
		return;
	}
	svg_flush(s, h);
	s->open = true;
	s->x0 = x0, s->x1 = x1, s->y = y;
	snprintf(s->fill, sizeof(s->fill), "%s", fill);
}

static int cmp_band(const void *a, const void *b)
{
	const struct report_band *x = a, *y = b;

	if (x->vm != y->vm)
		return x->vm < y->vm ? -1 : 1;
	if (x->vcpu != y->vcpu)
		return x->vcpu < y->vcpu ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	return (x->start > y->start) - (x->start < y->start);
}

/* Under a stall: its culprit, or for another VM's vCPU "VM X vCPU N: GUEST TASK". */
static void svg_culprit_label(const struct report *r, const struct report_stall *st, FILE *out)
{
	char vm[48];

	if (st->cause == REPORT_MIGRATION) {
		fprintf(out, "live migration, QEMU %d -&gt; %d", st->mig_from, st->mig_to);
		return;
	}
	if (st->culprit_vm < 0 || st->culprit_vm == (int32_t)st->vm) {
		svg_text(out, st->culprit.comm);
		return;
	}
	fprintf(out, "VM ");
	svg_text(out, report_vm_label(r, st->culprit_vm, st->culprit_machine_pid, vm, sizeof(vm)));
	fprintf(out, " vCPU %d", st->culprit_vcpu);
	if (st->culprit.g.pid >= 0) {
		fputs(": ", out);
		svg_text(out, st->culprit.g.comm);
	}
}

static void svg_stall(const struct report *r, struct svg *s, const struct report_stall *st, double y)
{
	double x0 = svg_x(s, st->start), x1 = MAX(svg_x(s, st->end), x0 + 1.0);
	char c[160], cause[48];

	fprintf(s->out, "<g class=\"stall\" data-vcpu=\"%u\" data-start-ns=\"%llu\" data-duration-ns=\"%llu\"><title>", st->vcpu,
		(unsigned long long)st->start, (unsigned long long)(st->end - st->start));
	fprintf(s->out, "vCPU %u of VM %d stalled %.3f ms at %.9f s: %s", st->vcpu, r->vms[st->vm].machine_pid,
		(double)(st->end - st->start) / 1e6, (double)st->start / 1e9, report_stall_cause(r, st, cause, sizeof(cause)));
	if (st->culprit.pid >= 0 || st->cause == REPORT_MIGRATION) {
		report_culprit_text(r, st, c, sizeof(c));
		fputs(", culprit ", s->out);
		svg_text(s->out, c);
		fprintf(s->out, " on host CPU %d", st->host_cpu);
	} else if (st->why) {
		fputs(", culprit unknown: ", s->out);
		svg_text(s->out, st->why);
	}
	fputs("; guest task ", s->out);
	svg_text(s->out, st->guest_comm);
	fprintf(s->out, " (%d)</title>\n<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"#ff0000\" "
		       "fill-opacity=\"0.35\"/>\n<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"8\" fill=\"#e00000\"/>\n",
		st->guest_pid, x0, y, x1 - x0, SVG_BAND + 14, x0, y - 9, x1 - x0);
	if ((x1 - x0 >= 40 || st == s->longest) && (st->culprit.pid >= 0 || st->cause == REPORT_MIGRATION)) {
		fprintf(s->out, "<text class=\"culprit\" x=\"%.2f\" y=\"%.1f\" font-size=\"10\" fill=\"#900000\">",
			MIN(x0 + 1, SVG_LEFT + SVG_PLOT - 120), y + SVG_BAND + 24);
		svg_culprit_label(r, st, s->out);
		fputs("</text>\n", s->out);
	}
	fputs("</g>\n", s->out);
}

static void svg_axis(struct svg *s, double bottom)
{
	static const double m[] = { 1, 2, 5 };
	double span = (double)(s->to - s->from) / 1e9, step = 1e-9, p = 1e-9;

	for (int i = 0; span / step > 12; i = (i + 1) % 3) { /* 1, 2, 5 times a power of ten */
		if (i == 0 && step > 1e-9)
			p *= 10;
		step = m[i] * p;
	}
	fprintf(s->out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#444\"/>\n", SVG_LEFT, bottom,
		SVG_LEFT + SVG_PLOT, bottom);
	for (double t = 0; t <= span + 1e-12; t += step) {
		double x = SVG_LEFT + SVG_PLOT * t / span;

		fprintf(s->out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#bbb\"/>\n"
			       "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"middle\">%.*f</text>\n",
			x, SVG_TOP - 12, x, bottom + 4, x, bottom + 16, step >= 1 ? 0 : step >= 0.1 ? 1 : step >= 0.01 ? 2 :
			step >= 0.001 ? 3 : 6, t);
	}
	fprintf(s->out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" fill=\"#444\">s from %.6f (perf time)</text>\n",
		SVG_LEFT + SVG_PLOT - 150, bottom + 28, (double)s->from / 1e9);
}

/* A run of one guest task's bands on a lane, named when its name fits (after the lane's rects,
 * which would cover it). */
struct svg_run {
	double x0, x1, cover; /* its span; the part its own bands cover */
	const struct report_band *b;
};
#define SVG_RUNS 256

static void svg_run_end(struct svg_run *run, struct svg_run *names, size_t *n)
{
	/* named where the task holds most of the span the name takes */
	if (run->b && run->b->pid > 0 && run->cover >= SVG_CHAR * (double)strlen(run->b->comm) + 6 &&
	    run->cover >= 0.7 * (run->x1 - run->x0) && *n < SVG_RUNS)
		names[(*n)++] = *run;
	run->b = NULL;
}

/* The lanes' bands of (vm, vcpu), in time order (bands sorted by lane first). */
static void svg_lane(const struct report *r, struct svg *s, const struct report_band *b, size_t n, double y)
{
	struct svg_run run = { 0 }, names[SVG_RUNS];
	size_t nn = 0;
	char fill[16];

	for (size_t i = 0; i < n; i++) {
		double x0 = svg_x(s, b[i].start), x1 = svg_x(s, b[i].end);

		if (b[i].kind == 0) {
			svg_colour(&b[i], fill);
			svg_band(s, x0, x1, fill, y, SVG_BAND);
			/* another task's band under a pixel (a guest switching to idle and back) does
			 * not end the run */
			bool other = run.b && strcmp(run.b->comm, b[i].comm);

			if (run.b && ((other && x1 - x0 >= 1.0) || x0 > run.x1 + 1.0))
				svg_run_end(&run, names, &nn);
			if (!run.b) {
				run = (struct svg_run){ x0, x1, 0, &b[i] };
				other = false;
			}
			if (!other) {
				run.x1 = MAX(run.x1, x1);
				run.cover += x1 - x0;
			}
		} else {
			if (i == 0 || b[i - 1].kind == 0)
				svg_flush(s, SVG_BAND);
			svg_band(s, x0, x1, "#333333", y + SVG_BAND + 2, 6);
		}
	}
	svg_run_end(&run, names, &nn);
	svg_flush(s, n && b[n - 1].kind ? 6 : SVG_BAND);
	for (size_t i = 0; i < nn; i++) {
		fprintf(s->out, "<text class=\"task\" x=\"%.2f\" y=\"%.1f\" font-size=\"10\" fill=\"#111\">",
			names[i].x0 + 3, y + SVG_BAND / 2 + 4);
		svg_text(s->out, names[i].b->comm);
		fputs("</text>\n", s->out);
	}
	(void)r;
}

/* A lane's head: its vCPU, its VM (name and QEMU pid) and thread. */
static void svg_lane_label(const struct report_vm *m, uint32_t c, double y, FILE *out)
{
	fprintf(out, "<g class=\"lane\" data-vcpu=\"%u\" data-y=\"%.1f\" data-machine-pid=\"%d\">\n<text x=\"8\" "
		     "y=\"%.1f\" font-size=\"12\">vCPU %u</text>\n<text x=\"8\" y=\"%.1f\" font-size=\"9\" fill=\"#666\">VM ",
		c, y, m->machine_pid, y + 14, c, y + 27);
	if (m->name[0]) {
		svg_text(out, m->name);
		fprintf(out, " (%d)", m->machine_pid);
	} else {
		fprintf(out, "%d", m->machine_pid);
	}
	fprintf(out, ", thread %d</text>\n", m->vcpus[c].tid);
}

/* The legend: the guest tasks that held the lanes longest in the window (their colours), idle,
 * the host thread switched out, a stall. */
static void svg_legend(const struct report *r, const struct svg *s, double y)
{
	struct { char comm[REPORT_COMM]; int32_t pid; uint64_t ns; } top[SVG_LEGEND_MAX] = { 0 };
	size_t n = 0;
	double x = SVG_LEFT;
	char fill[16];

	for (size_t i = 0; i < r->n_bands; i++) {
		const struct report_band *b = &r->bands[i];
		uint64_t a = MAX(b->start, s->from), e = MIN(b->end, s->to);
		size_t k;

		if (b->kind || b->pid <= 0 || e <= a)
			continue;
		for (k = 0; k < n && strcmp(top[k].comm, b->comm); k++)
			;
		if (k == n && n == SVG_LEGEND_MAX) { /* full: it replaces the smallest if larger */
			k = 0;
			for (size_t j = 1; j < n; j++)
				k = top[j].ns < top[k].ns ? j : k;
			if (top[k].ns >= e - a)
				continue;
			top[k].ns = 0;
		}
		if (k == n)
			n++;
		if (!top[k].comm[0] || !top[k].ns)
			memcpy(top[k].comm, b->comm, REPORT_COMM), top[k].pid = b->pid;
		top[k].ns += e - a;
	}
	for (size_t i = 0; i < n; i++) /* longest first */
		for (size_t j = i + 1; j < n; j++)
			if (top[j].ns > top[i].ns) {
				__typeof__(top[0]) t = top[i];

				top[i] = top[j], top[j] = t;
			}
	fprintf(s->out, "<g class=\"legend-box\" font-size=\"10\">\n");
	for (size_t i = 0; i < n + 3; i++) { /* the three marks, then the tasks while they fit */
		const char *name = i == 0 ? "stall" : i == 1 ? "host thread switched out" : i == 2 ? "guest idle" : top[i - 3].comm;
		const char *col = fill;

		if (x + 13 + SVG_CHAR * (double)strlen(name) > SVG_W - 10)
			break;
		if (i >= 3)
			svg_colour_of(top[i - 3].pid, top[i - 3].comm, fill);
		else
			col = i == 0 ? "#e00000" : i == 1 ? "#333333" : "#dddddd";
		fprintf(s->out, "<g class=\"legend\"><rect x=\"%.1f\" y=\"%.1f\" width=\"10\" height=\"10\" fill=\"%s\"/>"
			       "<text x=\"%.1f\" y=\"%.1f\">", x, y, col, x + 13, y + 9);
		svg_text(s->out, name);
		fputs("</text></g>\n", s->out);
		x += 13 + SVG_CHAR * (double)strlen(name) + 14;
	}
	fputs("</g>\n", s->out);
}

/* The default window: where the guest trace runs (within the host's), else the host's. */
static void svg_window(const struct report *r, struct svg *s)
{
	uint64_t gf = UINT64_MAX, gl = 0;

	s->from = MAX(r->o.from, r->has_host ? r->host_first : r->t_first);
	s->to = MIN(r->o.to, r->has_host ? r->host_last : r->t_last);
	for (size_t i = 0; i < r->n_vms; i++)
		if (r->vms[i].first_guest) {
			gf = MIN(gf, r->vms[i].first_guest);
			gl = MAX(gl, r->vms[i].last_guest);
		}
	if (!r->o.from && gf != UINT64_MAX && gf > s->from && gf < s->to)
		s->from = gf;
	if (r->o.to == UINT64_MAX && gl && gl < s->to && gl > s->from)
		s->to = gl;
}

int report_svg(struct report *r, const struct report_filter *f, FILE *out)
{
	struct svg s = { .out = out };
	size_t lanes = 0, bi = 0;
	double h;

	for (size_t i = 0; i < r->n_vms; i++)
		for (uint32_t c = 0; c < r->vms[i].n_vcpus; c++)
			lanes += f->vcpu < 0 || (long)c == f->vcpu;
	svg_window(r, &s);
	if (!lanes || s.to <= s.from) {
		s.from = r->o.from;
		s.to = s.from + 1000000000;
	}
	if (r->n_bands)
		qsort(r->bands, r->n_bands, sizeof(*r->bands), cmp_band); /* the picture's own order */
	for (size_t k = 0; k < r->n_stalls; k++) {
		const struct report_stall *st = &r->stalls[k];

		if ((f->vcpu < 0 || (long)st->vcpu == f->vcpu) && st->end > s.from && st->start < s.to &&
		    (!s.longest || st->end - st->start > s.longest->end - s.longest->start))
			s.longest = st;
	}
	h = SVG_TOP + (double)lanes * SVG_LANE + 64;
	fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
		     "width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" "
		     "data-from-ns=\"%llu\" data-to-ns=\"%llu\" data-left=\"%.1f\" data-plot-width=\"%.1f\" "
		     "data-top=\"%.1f\" data-lane=\"%.1f\" data-band=\"%.1f\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
		SVG_W, h, SVG_W, h, (unsigned long long)s.from, (unsigned long long)s.to, SVG_LEFT, SVG_PLOT, SVG_TOP, SVG_LANE,
		SVG_BAND);
	fprintf(out, "<text x=\"10\" y=\"20\" font-size=\"14\">vCPU stalls: ");
	svg_text(out, r->path ? r->path : "");
	fprintf(out, " (%zu stalls of %.1f ms or more; guest task per vCPU, host thread switched out below, stalls red; "
		     "hover for details)</text>\n", r->n_stalls, (double)r->o.min_ns / 1e6);
	svg_axis(&s, h - 54);
	svg_legend(r, &s, h - 16);
	lanes = 0;
	for (size_t i = 0; i < r->n_vms; i++)
		for (uint32_t c = 0; c < r->vms[i].n_vcpus; c++) {
			double y = SVG_TOP + (double)lanes * SVG_LANE;
			size_t from = bi;

			while (bi < r->n_bands && (r->bands[bi].vm < i || (r->bands[bi].vm == i && r->bands[bi].vcpu <= c)))
				bi++;
			if (f->vcpu >= 0 && (long)c != f->vcpu)
				continue;
			svg_lane_label(&r->vms[i], c, y, out);
			svg_lane(r, &s, r->n_bands ? r->bands + from : NULL, bi - from, y); /* (no bands: NULL) */
			for (size_t k = 0; k < r->n_stalls; k++)
				if (r->stalls[k].vm == i && r->stalls[k].vcpu == c && r->stalls[k].end > s.from &&
				    r->stalls[k].start < s.to)
					svg_stall(r, &s, &r->stalls[k], y);
			fputs("</g>\n", out);
			lanes++;
		}
	fputs("</svg>\n", out);
	return ferror(out) ? -EIO : 0;
}
