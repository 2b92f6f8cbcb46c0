// SPDX-License-Identifier: GPL-2.0-only
/* QEMU -chardev/-device arguments and libvirt <channel> XML for the virtio-trace ports. */
#include "qemu-config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* A growing NULL-terminated argv. */
struct argv_vec {
	char **v;
	size_t n, cap;
};

static bool char_in(char c, const char *extra)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr(extra, c));
}

bool qemu_config_vm_name_ok(const char *name)
{
	size_t len = name ? strlen(name) : 0;

	if (len == 0 || len > QEMU_CONFIG_MAX_VM_NAME || name[0] == '.' || name[0] == '-')
		return false;
	for (size_t i = 0; i < len; i++)
		if (!char_in(name[i], "_-."))
			return false;
	return true;
}

bool qemu_config_dir_ok(const char *dir)
{
	if (!dir || dir[0] != '/' || strlen(dir) >= 4000 || strstr(dir, "/../") ||
	    (strlen(dir) >= 3 && !strcmp(dir + strlen(dir) - 3, "/..")))
		return false;
	for (const char *p = dir; *p; p++)
		if (!char_in(*p, "_./+@:-"))
			return false;
	return true;
}

unsigned qemu_config_nports(const struct qemu_config *qc)
{
	return qc->ncpus * (qc->perf ? 2 : 1) + 1;
}

int qemu_config_port_name(const struct qemu_config *qc, unsigned i, char *buf, size_t len)
{
	int n = i == 0		   ? snprintf(buf, len, "%s", QEMU_CONFIG_CTL_PORT)
		: i <= qc->ncpus ? snprintf(buf, len, "%s%u", QEMU_CONFIG_DATA_PORT, i - 1)
				   : snprintf(buf, len, "%s%u", QEMU_CONFIG_PERF_PORT, i - 1 - qc->ncpus);

	return n < 0 || (size_t)n >= len ? -ENOBUFS : 0;
}

int qemu_config_port_path(const struct qemu_config *qc, unsigned i, char *buf, size_t len)
{
	char name[32];
	int n;

	if (qemu_config_port_name(qc, i, name, sizeof(name)) < 0)
		return -ENOBUFS;
	if (qc->transport == QEMU_CONFIG_SOCKET)
		n = snprintf(buf, len, "%s/" QEMU_CONFIG_SOCK_DIR "/%s.sock", qc->dir, name);
	else
		n = snprintf(buf, len, "%s/%s", qc->dir, name);
	return n < 0 || (size_t)n >= len ? -ENOBUFS : 0;
}

int qemu_config_check(const struct qemu_config *qc)
{
	char path[4096];

	if (!qemu_config_vm_name_ok(qc->vm) || !qemu_config_dir_ok(qc->dir))
		return -EINVAL;
	if (qc->ncpus < 1 || qc->ncpus > QEMU_CONFIG_MAX_CPUS)
		return -ERANGE;
	if (qc->transport != QEMU_CONFIG_PIPE && qc->transport != QEMU_CONFIG_SOCKET)
		return -EINVAL;
	/* The longest port path is the last CPU's. */
	if (qemu_config_port_path(qc, qc->ncpus, path, sizeof(path)) < 0)
		return -ENAMETOOLONG;
	if (qc->transport == QEMU_CONFIG_SOCKET && strlen(path) >= QEMU_CONFIG_SUN_PATH_MAX)
		return -ENAMETOOLONG;
	return 0;
}

unsigned qemu_config_nctrls(const struct qemu_config *qc)
{
	unsigned n = qemu_config_nports(qc);

	return (n + QEMU_CONFIG_PORTS_PER_CTRL - 1) / QEMU_CONFIG_PORTS_PER_CTRL;
}

/* Ports per controller when they are spread evenly (the last may have fewer). */
static unsigned ports_per_ctrl(const struct qemu_config *qc)
{
	unsigned c = qemu_config_nctrls(qc);

	return (qemu_config_nports(qc) + c - 1) / c;
}

unsigned qemu_config_port_ctrl(const struct qemu_config *qc, unsigned i)
{
	return i / ports_per_ctrl(qc);
}

/* Port number on its controller: port 0 is reserved for a console. */
static unsigned port_slot(const struct qemu_config *qc, unsigned i)
{
	return i % ports_per_ctrl(qc) + 1;
}

static int argv_push(struct argv_vec *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int argv_push(struct argv_vec *a, const char *fmt, ...)
{
	va_list ap;
	char *s;
	int r;

	if (a->n + 2 > a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 16;
		char **v = realloc(a->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		a->v = v;
		a->cap = cap;
	}
	va_start(ap, fmt);
	r = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (r < 0)
		return -ENOMEM;
	a->v[a->n++] = s;
	a->v[a->n] = NULL;
	return 0;
}

void qemu_config_argv_free(char **argv)
{
	if (!argv)
		return;
	for (char **p = argv; *p; p++)
		free(*p);
	free(argv);
}

static void chardev_id(const struct qemu_config *qc, unsigned i, char *buf, size_t len)
{
	if (i == 0)
		snprintf(buf, len, "vt-ctl");
	else if (i <= qc->ncpus)
		snprintf(buf, len, "vt-cpu%u", i - 1);
	else
		snprintf(buf, len, "vt-perf%u", i - 1 - qc->ncpus);
}

/* -chardev and -device virtserialport for port i. */
static int push_port(struct argv_vec *a, const struct qemu_config *qc, unsigned i)
{
	char id[32], name[32], path[4096];
	int r;

	chardev_id(qc, i, id, sizeof(id));
	if (qemu_config_port_name(qc, i, name, sizeof(name)) < 0 ||
	    qemu_config_port_path(qc, i, path, sizeof(path)) < 0)
		return -ENOBUFS;
	r = argv_push(a, "-chardev");
	if (r == 0 && qc->transport == QEMU_CONFIG_PIPE)
		r = argv_push(a, "pipe,id=%s,path=%s", id, path);
	else if (r == 0)
		r = argv_push(a, "socket,id=%s,path=%s,server=on,wait=off", id, path);
	if (r == 0)
		r = argv_push(a, "-device");
	if (r == 0)
		r = argv_push(a, "virtserialport,bus=%s%u.0,nr=%u,chardev=%s,name=%s", QEMU_CONFIG_SERIAL_ID,
			      qemu_config_port_ctrl(qc, i), port_slot(qc, i), id, name);
	return r;
}

/* The controllers: on the root bus while few, else behind PCI bridges of our own. */
static int push_ctrls(struct argv_vec *a, const struct qemu_config *qc)
{
	unsigned n = qemu_config_nctrls(qc);
	bool bridged = n > QEMU_CONFIG_ROOT_CTRLS;
	int r = 0;

	for (unsigned b = 0; bridged && r == 0 && b * QEMU_CONFIG_BRIDGE_SLOTS < n; b++) {
		r = argv_push(a, "-device");
		if (r == 0)
			r = argv_push(a, "pci-bridge,id=vt-pci%u,chassis_nr=%u", b, 200 + b);
	}
	for (unsigned c = 0; r == 0 && c < n; c++) {
		r = argv_push(a, "-device");
		if (r == 0 && bridged)
			r = argv_push(a, "virtio-serial-pci,id=%s%u,bus=vt-pci%u", QEMU_CONFIG_SERIAL_ID, c,
				      c / QEMU_CONFIG_BRIDGE_SLOTS);
		else if (r == 0)
			r = argv_push(a, "virtio-serial-pci,id=%s%u", QEMU_CONFIG_SERIAL_ID, c);
	}
	return r;
}

static int push_all(struct argv_vec *a, const struct qemu_config *qc)
{
	int r;

	r = argv_push(a, "-name");
	if (r == 0)
		r = argv_push(a, "%s,debug-threads=on", qc->vm);
	if (r == 0)
		r = push_ctrls(a, qc);
	for (unsigned i = 0; r == 0 && i < qemu_config_nports(qc); i++)
		r = push_port(a, qc, i);
	return r;
}

int qemu_config_qemu_argv(const struct qemu_config *qc, char ***ret_argv)
{
	struct argv_vec a = { 0 };
	int r = qemu_config_check(qc);

	if (r < 0)
		return r;
	r = push_all(&a, qc);
	if (r < 0) {
		qemu_config_argv_free(a.v);
		return r;
	}
	*ret_argv = a.v;
	return 0;
}

/* Renders a finished memstream into *ret_text, or frees it on error. */
static int memstream_finish(FILE *f, char **buf, char **ret_text)
{
	/* The buffer pointer is only valid after fclose. */
	if (fclose(f) != 0) {
		free(*buf);
		return -ENOMEM;
	}
	*ret_text = *buf;
	return 0;
}

int qemu_config_qemu_text(const struct qemu_config *qc, char **ret_text)
{
	char **argv = NULL, *buf = NULL;
	size_t len = 0;
	FILE *f;
	int r;

	r = qemu_config_qemu_argv(qc, &argv);
	if (r < 0)
		return r;
	f = open_memstream(&buf, &len);
	if (!f) {
		qemu_config_argv_free(argv);
		return -ENOMEM;
	}
	/* Arguments come in option/value pairs; the values need no shell quoting (see checks). */
	for (size_t i = 0; argv[i] && argv[i + 1]; i += 2)
		fprintf(f, "%s %s%s\n", argv[i], argv[i + 1], argv[i + 2] ? " \\" : "");
	qemu_config_argv_free(argv);
	return memstream_finish(f, &buf, ret_text);
}

static void xml_channel(FILE *f, const struct qemu_config *qc, unsigned i)
{
	char name[32], path[4096];

	qemu_config_port_name(qc, i, name, sizeof(name));
	qemu_config_port_path(qc, i, path, sizeof(path));
	if (qc->transport == QEMU_CONFIG_PIPE)
		fprintf(f, "<channel type='pipe'>\n  <source path='%s'/>\n", path);
	else
		fprintf(f, "<channel type='unix'>\n  <source mode='bind' path='%s'/>\n", path);
	fprintf(f, "  <target type='virtio' name='%s'/>\n", name);
	fprintf(f, "  <address type='virtio-serial' controller='%u' bus='0' port='%u'/>\n</channel>\n",
		QEMU_CONFIG_LIBVIRT_CTRL_BASE + qemu_config_port_ctrl(qc, i), port_slot(qc, i));
}

int qemu_config_libvirt_xml(const struct qemu_config *qc, char **ret_xml)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int r = qemu_config_check(qc);

	if (r < 0)
		return r;
	f = open_memstream(&buf, &len);
	if (!f)
		return -ENOMEM;
	fprintf(f, "<!-- virtio-trace ports of VM '%s': %u CPUs, %s transport (trace-collector setup) -->\n",
		qc->vm, qc->ncpus, qc->transport == QEMU_CONFIG_PIPE ? "pipe" : "unix socket");
	fprintf(f, "<!-- %u virtio-serial controllers of at most %u ports each: more ports on one controller"
		   " lose QEMU's port announcements in a busy guest. They must be in the domain when it"
		   " boots; index 0 stays the domain's own. -->\n",
		qemu_config_nctrls(qc), QEMU_CONFIG_PORTS_PER_CTRL);
	for (unsigned c = 0; c < qemu_config_nctrls(qc); c++)
		fprintf(f, "<controller type='virtio-serial' index='%u'/>\n", QEMU_CONFIG_LIBVIRT_CTRL_BASE + c);
	for (unsigned i = 0; i < qemu_config_nports(qc); i++)
		xml_channel(f, qc, i);
	return memstream_finish(f, &buf, ret_xml);
}
