// SPDX-License-Identifier: GPL-2.0-only
/* setup --qmp SOCKET: gives a running QEMU the ports through its QMP monitor, the same
 * devices and chardevs 'setup' prints as arguments (qemu_config_qemu_argv), turned into
 * device_add and chardev-add commands. What the VM already has is left as it is, so that
 * running it twice is harmless. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "log.h"
#include "qemu-config.h"
#include "setup.h"
#include "util.h"

#define QMP_TIMEOUT_MS 10000
#define QMP_LINE_MAX (1u << 20)

struct qmp {
	int fd;
	char *buf;
	size_t len;
};

/* The next line QEMU sends that is not an event; 0, or -errno. */
static int qmp_line(struct qmp *q, char **ret)
{
	for (;;) {
		char *nl = q->len ? memchr(q->buf, '\n', q->len) : NULL;
		struct pollfd p = { .fd = q->fd, .events = POLLIN };
		ssize_t n;

		if (nl) {
			size_t l = (size_t)(nl - q->buf) + 1;
			char *line = strndup(q->buf, l - 1);

			memmove(q->buf, q->buf + l, q->len - l);
			q->len -= l;
			if (!line)
				return -ENOMEM;
			/* QEMU puts "timestamp" before "event" in its events ({"timestamp": {...},
			 * "event": "VSERPORT_CHANGE", ...}): anything but a greeting, a return or an
			 * error that names an event is one */
			if (strncmp(line, "{\"QMP\"", 6) && strncmp(line, "{\"return\"", 9) && strncmp(line, "{\"error\"", 8) &&
			    strstr(line, "\"event\":")) {
				free(line);
				continue;
			}
			*ret = line;
			return 0;
		}
		if (q->len >= QMP_LINE_MAX)
			return -E2BIG;
		if (poll(&p, 1, QMP_TIMEOUT_MS) <= 0)
			return -ETIMEDOUT;
		n = read(q->fd, q->buf + q->len, QMP_LINE_MAX - q->len);
		if (n <= 0)
			return n < 0 ? -errno : -ECONNRESET;
		q->len += (size_t)n;
	}
}

/* Sends one command; 0 when QEMU answered "return" (its text in *ret when asked), else
 * -EREMOTEIO with QEMU's "desc" in why. */
static int qmp_cmd(struct qmp *q, const char *json, char **ret, char *why, size_t whylen)
{
	_cleanup_free_ char *line = NULL;
	int r = util_write_full(q->fd, json, strlen(json));

	if (r == 0)
		r = util_write_full(q->fd, "\n", 1);
	if (r == 0)
		r = qmp_line(q, &line);
	if (r < 0) {
		snprintf(why, whylen, "%s", strerror(-r));
		return r;
	}
	if (!strncmp(line, "{\"return\"", 9)) {
		if (ret)
			*ret = line, line = NULL;
		return 0;
	}
	const char *d = strstr(line, "\"desc\": \"");

	snprintf(why, whylen, "%.*s", d ? (int)strcspn(d + 9, "\"") : 200, d ? d + 9 : line);
	return -EREMOTEIO;
}

/* "k=v,k=v" of a QEMU option into JSON members; numbers stay numbers, on/off booleans. */
static void qmp_members(FILE *f, char *opts, const char *skip)
{
	for (char *save = NULL, *kv = strtok_r(opts, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
		char *v = strchr(kv, '=');
		bool num;

		if (!v)
			continue;
		*v++ = '\0';
		if (skip && !strcmp(kv, skip))
			continue;
		num = *v && strspn(v, "0123456789") == strlen(v);
		if (num || !strcmp(v, "true") || !strcmp(v, "false"))
			fprintf(f, ", \"%s\": %s", kv, v);
		else
			fprintf(f, ", \"%s\": \"%s\"", kv, v);
	}
}

/* The value of key in "k=v,k=v". */
static void opt_value(const char *opts, const char *key, char *buf, size_t size)
{
	size_t kl = strlen(key);

	buf[0] = '\0';
	for (const char *p = opts; p; p = strchr(p, ','), p = p ? p + 1 : NULL)
		if (!strncmp(p, key, kl) && p[kl] == '=') {
			snprintf(buf, size, "%.*s", (int)strcspn(p + kl + 1, ","), p + kl + 1);
			return;
		}
}

static int qmp_connect(const char *path, struct qmp *q)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_free_ char *greeting = NULL;
	char why[256];
	int r;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		log_error("setup: QMP socket path %s is too long", path);
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, path);
	q->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	q->buf = malloc(QMP_LINE_MAX);
	if (q->fd < 0 || !q->buf)
		return -ENOMEM;
	if (connect(q->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		r = -errno;
		log_error("setup: cannot connect to QMP socket %s: %s (start QEMU with -qmp unix:%s,server=on,wait=off)",
			  path, strerror(-r), path);
		return r;
	}
	r = qmp_line(q, &greeting);
	if (r == 0 && strncmp(greeting, "{\"QMP\"", 6))
		r = -EPROTO;
	if (r == 0)
		r = qmp_cmd(q, "{\"execute\": \"qmp_capabilities\"}", NULL, why, sizeof(why));
	if (r < 0)
		log_error("setup: %s is no QMP monitor that answers (%s)", path, r == -EPROTO ? "no QMP greeting" : why);
	return r;
}

int setup_qmp_attach(const struct qemu_config *qc, const char *path)
{
	struct qmp q = { .fd = -1 };
	_cleanup_free_ char *devs = NULL, *chardevs = NULL;
	char **argv = NULL, why[512];
	unsigned added = 0, kept = 0;
	int r;

	r = qemu_config_qemu_argv(qc, &argv);
	if (r == 0)
		r = qmp_connect(path, &q);
	/* What the VM has: its devices with ids, and its chardevs. */
	if (r == 0 && (r = qmp_cmd(&q, "{\"execute\": \"qom-list\", \"arguments\": {\"path\": \"/machine/peripheral\"}}",
				   &devs, why, sizeof(why))) == 0)
		r = qmp_cmd(&q, "{\"execute\": \"query-chardev\"}", &chardevs, why, sizeof(why));
	if (r < 0 && q.fd >= 0 && why[0])
		log_error("setup: QMP at %s: %s", path, why);
	for (size_t i = 0; r == 0 && argv[i] && argv[i + 1]; i += 2) {
		_cleanup_free_ char *json = NULL, *opts = strdup(argv[i + 1]);
		char id[64], have[96];
		size_t jl = 0;
		FILE *f;

		if (!opts || !(f = open_memstream(&json, &jl))) {
			r = -ENOMEM;
			break;
		}
		if (!strcmp(argv[i], "-name")) {
			fclose(f);
			continue; /* boot-time only: says so below */
		}
		opt_value(opts, "id", id, sizeof(id));
		if (!strcmp(argv[i], "-device")) {
			bool named = id[0];

			if (!named) { /* a port: an id of our own, to find it next time */
				char pname[40];

				opt_value(opts, "name", pname, sizeof(pname));
				snprintf(id, sizeof(id), "vt-port-%s", pname);
			}
			snprintf(have, sizeof(have), "\"name\": \"%s\"", id);
			if (devs && strstr(devs, have)) {
				fclose(f);
				kept++;
				continue;
			}
			fprintf(f, "{\"execute\": \"device_add\", \"arguments\": {\"driver\": \"%.*s\"",
				(int)strcspn(opts, ","), opts);
			if (!named)
				fprintf(f, ", \"id\": \"%s\"", id);
			qmp_members(f, opts + strcspn(opts, ","), NULL);
			fputs("}}", f);
		} else { /* -chardev pipe|socket,id=...,path=... */
			char dpath[4096];

			snprintf(have, sizeof(have), "\"label\": \"%s\"", id);
			if (chardevs && strstr(chardevs, have)) {
				fclose(f);
				kept++;
				continue;
			}
			opt_value(opts, "path", dpath, sizeof(dpath));
			if (!strncmp(opts, "pipe,", 5))
				fprintf(f, "{\"execute\": \"chardev-add\", \"arguments\": {\"id\": \"%s\", \"backend\": "
					   "{\"type\": \"pipe\", \"data\": {\"device\": \"%s\"}}}}", id, dpath);
			else
				fprintf(f, "{\"execute\": \"chardev-add\", \"arguments\": {\"id\": \"%s\", \"backend\": "
					   "{\"type\": \"socket\", \"data\": {\"addr\": {\"type\": \"unix\", \"data\": "
					   "{\"path\": \"%s\"}}, \"server\": true, \"wait\": false}}}}", id, dpath);
		}
		if (fclose(f) != 0) {
			r = -ENOMEM;
			break;
		}
		r = qmp_cmd(&q, json, NULL, why, sizeof(why));
		if (r < 0) {
			log_error("setup: QEMU refused '%s %s': %s%s", argv[i], argv[i + 1], why,
				  strstr(argv[i + 1], "virtio-serial-pci") ?
				  " (this machine cannot hot-plug a PCI controller there: start the VM with the "
				  "controllers 'setup' prints, then attach the ports live)" : "");
			break;
		}
		printf("added: %s %s\n", argv[i], argv[i + 1]);
		added++;
	}
	if (r == 0)
		printf("QMP %s: %u devices and chardevs added, %u already there. For the vCPU threads' names "
		       "(guest events tagged with the vCPU's host CPU) QEMU needs '-name %s,debug-threads=on' at boot.\n",
		       path, added, kept, qc->vm);
	qemu_config_argv_free(argv);
	if (q.fd >= 0)
		close(q.fd);
	free(q.buf);
	return r;
}
