// SPDX-License-Identifier: GPL-2.0-only
#include "tracing_data.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static const uint8_t td_magic[10] = { 0x17, 0x08, 0x44, 't', 'r', 'a', 'c', 'i', 'n', 'g' };

struct cursor {
	const uint8_t *p;
	size_t len, off;
};

static int cur_bytes(struct cursor *c, void *out, size_t n)
{
	if (n > c->len - c->off)
		return -EBADMSG;
	memcpy(out, c->p + c->off, n);
	c->off += n;
	return 0;
}

static int cur_string(struct cursor *c, char **ret)
{
	const uint8_t *nul = memchr(c->p + c->off, '\0', MIN(c->len - c->off, (size_t)TRACING_DATA_MAX_NAME));
	size_t n;

	if (!nul)
		return -EBADMSG;
	n = (size_t)(nul - (c->p + c->off));
	*ret = strndup((const char *)c->p + c->off, n);
	if (!*ret)
		return -ENOMEM;
	c->off += n + 1;
	return 0;
}

static int text_dup(struct td_text *t, const void *data, size_t len)
{
	t->data = malloc(len + 1);
	if (!t->data)
		return -ENOMEM;
	memcpy(t->data, data, len);
	t->data[len] = '\0';
	t->len = len;
	return 0;
}

/* A text preceded by its size (u32 or u64). */
static int cur_text(struct cursor *c, size_t size_bytes, struct td_text *t)
{
	uint64_t n = 0;

	if (cur_bytes(c, &n, size_bytes) < 0 || n > c->len - c->off)
		return -EBADMSG;
	if (text_dup(t, c->p + c->off, (size_t)n) < 0)
		return -ENOMEM;
	c->off += (size_t)n;
	return 0;
}

static int cur_keyword(struct cursor *c, const char *kw)
{
	size_t n = strlen(kw) + 1;

	if (n > c->len - c->off || memcmp(c->p + c->off, kw, n))
		return -EBADMSG;
	c->off += n;
	return 0;
}

static int cur_events(struct cursor *c, struct td_system *s)
{
	uint32_t n;

	if (cur_bytes(c, &n, 4) < 0 || n > TRACING_DATA_MAX_EVENTS || n > (c->len - c->off) / 8)
		return -EBADMSG;
	s->events = calloc(n ? n : 1, sizeof(*s->events));
	if (!s->events)
		return -ENOMEM;
	for (; s->n_events < n; s->n_events++) {
		int r = cur_text(c, 8, &s->events[s->n_events]);

		if (r < 0)
			return r;
	}
	return 0;
}

static int cur_systems(struct cursor *c, struct tracing_data *td)
{
	uint32_t n;

	if (cur_bytes(c, &n, 4) < 0 || n > TRACING_DATA_MAX_EVENTS || n > (c->len - c->off) / 6)
		return -EBADMSG;
	td->systems = calloc(n ? n : 1, sizeof(*td->systems));
	if (!td->systems)
		return -ENOMEM;
	for (; td->n_systems < n; td->n_systems++) {
		struct td_system *s = &td->systems[td->n_systems];
		int r = cur_string(c, &s->name);

		if (r < 0 || (r = cur_events(c, s)) < 0) {
			td->n_systems++; /* free the half-built one */
			return r;
		}
	}
	return 0;
}

static int parse_head(struct cursor *c, struct tracing_data *td)
{
	uint8_t magic[10], endian;
	_cleanup_free_ char *ver = NULL;

	if (cur_bytes(c, magic, sizeof(magic)) < 0 || memcmp(magic, td_magic, sizeof(magic)) ||
	    cur_string(c, &ver) < 0 || strlen(ver) >= sizeof(td->version) ||
	    cur_bytes(c, &endian, 1) < 0 || cur_bytes(c, &td->long_size, 1) < 0 ||
	    cur_bytes(c, &td->page_size, 4) < 0)
		return -EBADMSG;
	strcpy(td->version, ver);
	if (endian != 0 || (td->long_size != 4 && td->long_size != 8) || td->page_size == 0)
		return -EBADMSG;
	if (cur_keyword(c, "header_page") < 0 || cur_text(c, 8, &td->header_page) < 0 ||
	    cur_keyword(c, "header_event") < 0 || cur_text(c, 8, &td->header_event) < 0)
		return -EBADMSG;
	return 0;
}

int tracing_data_parse(const void *buf, size_t len, struct tracing_data *ret)
{
	struct tracing_data td = { 0 };
	struct cursor c = { .p = buf, .len = len };
	int r;

	r = parse_head(&c, &td);
	if (r >= 0)
		r = cur_events(&c, &td.ftrace);
	if (r >= 0)
		r = cur_systems(&c, &td);
	if (r >= 0)
		r = cur_text(&c, 4, &td.kallsyms);
	if (r >= 0)
		r = cur_text(&c, 4, &td.printk);
	if (r >= 0 && strtod(td.version, NULL) >= 0.6) {
		td.has_cmdlines = true;
		r = cur_text(&c, 8, &td.cmdlines);
	}
	if (r < 0) {
		tracing_data_free(&td);
		return r == -ENOMEM ? r : -EBADMSG;
	}
	*ret = td;
	return 0;
}

int tracing_data_init(struct tracing_data *td, uint8_t long_size, uint32_t page_size,
		      const char *header_page, size_t hp_len, const char *header_event, size_t he_len)
{
	memset(td, 0, sizeof(*td));
	strcpy(td->version, "0.6");
	td->long_size = long_size;
	td->page_size = page_size;
	td->has_cmdlines = true;
	if (text_dup(&td->header_page, header_page, hp_len) < 0 ||
	    text_dup(&td->header_event, header_event, he_len) < 0 || text_dup(&td->kallsyms, "", 0) < 0 ||
	    text_dup(&td->printk, "", 0) < 0 || text_dup(&td->cmdlines, "", 0) < 0) {
		tracing_data_free(td);
		return -ENOMEM;
	}
	return 0;
}

static struct td_system *system_get(struct tracing_data *td, const char *sys)
{
	struct td_system *n;

	for (size_t i = 0; i < td->n_systems; i++)
		if (!strcmp(td->systems[i].name, sys))
			return &td->systems[i];
	n = realloc(td->systems, (td->n_systems + 1) * sizeof(*n));
	if (!n)
		return NULL;
	td->systems = n;
	n = &td->systems[td->n_systems];
	memset(n, 0, sizeof(*n));
	n->name = strdup(sys);
	if (!n->name)
		return NULL;
	td->n_systems++;
	return n;
}

int tracing_data_add_event(struct tracing_data *td, const char *sys, const char *text, size_t len)
{
	struct td_system *s = system_get(td, sys);
	struct td_text *ev;

	if (!s)
		return -ENOMEM;
	if (s->n_events >= TRACING_DATA_MAX_EVENTS)
		return -E2BIG;
	ev = realloc(s->events, (s->n_events + 1) * sizeof(*ev));
	if (!ev)
		return -ENOMEM;
	s->events = ev;
	if (text_dup(&s->events[s->n_events], text, len) < 0)
		return -ENOMEM;
	s->n_events++;
	return 0;
}

int tracing_data_for_each(const struct tracing_data *td,
			  int (*fn)(const char *sys, const struct td_text *t, void *ud), void *ud)
{
	int r;

	for (size_t i = 0; i < td->ftrace.n_events; i++)
		if ((r = fn("ftrace", &td->ftrace.events[i], ud)) != 0)
			return r;
	for (size_t s = 0; s < td->n_systems; s++)
		for (size_t i = 0; i < td->systems[s].n_events; i++)
			if ((r = fn(td->systems[s].name, &td->systems[s].events[i], ud)) != 0)
				return r;
	return 0;
}

static void out_text(struct util_buf *o, size_t size_bytes, const struct td_text *t)
{
	uint64_t n = t->len;

	util_buf_put(o, &n, size_bytes);
	util_buf_put(o, t->data, t->len);
}

static void out_events(struct util_buf *o, const struct td_system *s)
{
	uint32_t n = (uint32_t)s->n_events;

	util_buf_put(o, &n, 4);
	for (size_t i = 0; i < s->n_events; i++)
		out_text(o, 8, &s->events[i]);
}

int tracing_data_build(const struct tracing_data *td, uint8_t **ret_buf, size_t *ret_len)
{
	struct util_buf o = { 0 };
	uint8_t zero = 0;
	uint32_t n = (uint32_t)td->n_systems;

	util_buf_put(&o, td_magic, sizeof(td_magic));
	util_buf_put(&o, td->version, strlen(td->version) + 1);
	util_buf_put(&o, &zero, 1);
	util_buf_put(&o, &td->long_size, 1);
	util_buf_put(&o, &td->page_size, 4);
	util_buf_put(&o, "header_page", 12);
	out_text(&o, 8, &td->header_page);
	util_buf_put(&o, "header_event", 13);
	out_text(&o, 8, &td->header_event);
	out_events(&o, &td->ftrace);
	util_buf_put(&o, &n, 4);
	for (size_t i = 0; i < td->n_systems; i++) {
		util_buf_put(&o, td->systems[i].name, strlen(td->systems[i].name) + 1);
		out_events(&o, &td->systems[i]);
	}
	out_text(&o, 4, &td->kallsyms);
	out_text(&o, 4, &td->printk);
	if (td->has_cmdlines)
		out_text(&o, 8, &td->cmdlines);
	if (o.oom) {
		free(o.p);
		return -ENOMEM;
	}
	*ret_buf = o.p;
	*ret_len = o.len;
	return 0;
}

static void system_free(struct td_system *s)
{
	for (size_t i = 0; i < s->n_events; i++)
		free(s->events[i].data);
	free(s->events);
	free(s->name);
}

void tracing_data_free(struct tracing_data *td)
{
	if (!td)
		return;
	system_free(&td->ftrace);
	for (size_t i = 0; i < td->n_systems; i++)
		system_free(&td->systems[i]);
	free(td->systems);
	free(td->header_page.data);
	free(td->header_event.data);
	free(td->kallsyms.data);
	free(td->printk.data);
	free(td->cmdlines.data);
	memset(td, 0, sizeof(*td));
}
