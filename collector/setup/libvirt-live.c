// SPDX-License-Identifier: GPL-2.0-only
/* setup --format libvirt --live DOMAIN: attaches the channels to a running libvirt domain
 * with virsh, one 'virsh attach-device' per channel (what docs/guide-setup.md shows by hand):
 * --live, plus --config when the domain is persistent. libvirt hot-plugs only unix socket
 * channels and no virtio-serial controller, so the controllers must be in the domain
 * already; channels it has are kept. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "qemu-config.h"
#include "setup.h"
#include "util.h"

#define VIRSH_OUT_MAX (16u << 20)

/* Runs virsh ARGS; its stdout (and stderr) in *ret; the exit status, or -errno. */
static int virsh(char *const args[], char **ret)
{
	char *argv[16] = { (char *)"virsh", (char *)"-q" };
	size_t n = 2, len = 0, cap = 65536;
	char *buf = malloc(cap);
	int p[2], st = 0;
	pid_t pid;

	for (size_t i = 0; args[i] && n < 15; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	if (!buf || pipe2(p, O_CLOEXEC) < 0) {
		free(buf);
		return -errno ?: -ENOMEM;
	}
	pid = fork();
	if (pid < 0) {
		close(p[0]), close(p[1]), free(buf);
		return -errno;
	}
	if (pid == 0) {
		dup2(p[1], 1);
		dup2(p[1], 2);
		execvp("virsh", argv);
		dprintf(2, "cannot run virsh: %s (install libvirt-clients)\n", strerror(errno));
		_exit(127);
	}
	close(p[1]);
	for (ssize_t r; (r = read(p[0], buf + len, cap - len - 1)) != 0;) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			break;
		len += (size_t)r;
		if (len + 1 == cap && cap < VIRSH_OUT_MAX) {
			char *nb = realloc(buf, cap * 2);

			if (!nb)
				break;
			buf = nb, cap *= 2;
		} else if (len + 1 == cap) {
			break;
		}
	}
	close(p[0]);
	buf[len] = '\0';
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	*ret = buf;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void one_line(char *s)
{
	for (char *p = s; *p; p++)
		if (*p == '\n')
			*p = *(p + 1) ? ' ' : '\0';
}

int setup_libvirt_attach(const struct qemu_config *qc, const char *domain)
{
	_cleanup_free_ char *xml = NULL, *dom = NULL, *info = NULL;
	char tmp[] = "/tmp/vt-channel.XXXXXX";
	unsigned added = 0, kept = 0;
	bool persistent;
	int r;

	if (qc->transport != QEMU_CONFIG_SOCKET) {
		log_error("setup --live: libvirt hot-plugs only unix socket channels (\"Hotplug unsupported for char "
			  "device type 'pipe'\"): add --transport socket");
		return -EINVAL;
	}
	r = qemu_config_libvirt_xml(qc, &xml);
	if (r < 0) {
		log_error("setup: cannot generate the libvirt configuration: %s", strerror(-r));
		return r;
	}
	r = virsh((char *const[]){ (char *)"dumpxml", (char *)domain, NULL }, &dom);
	if (r != 0) {
		one_line(dom ? dom : (char[]){ 0 });
		log_error("setup --live: no running libvirt domain '%s' (virsh dumpxml: %s)", domain, dom ? dom : "");
		return -ENOENT;
	}
	/* The controllers must be there: libvirt cannot hot-plug them. */
	for (const char *c = xml; (c = strstr(c, "<controller type='virtio-serial' index='")); c++) {
		char want[80];

		snprintf(want, sizeof(want), "%.*s", (int)(strchr(c, '/') - c), c);
		if (!strstr(dom, want)) {
			log_error("setup --live: domain '%s' has no %s/>: libvirt cannot hot-plug a virtio-serial "
				  "controller; add the controllers that 'setup --format libvirt' prints with 'virsh edit %s' "
				  "and restart the domain, then attach again", domain, want, domain);
			return -ENODEV;
		}
	}
	r = virsh((char *const[]){ (char *)"dominfo", (char *)domain, NULL }, &info);
	persistent = r == 0 && strstr(info, "Persistent:") && strstr(strstr(info, "Persistent:"), "yes");
	for (const char *c = xml; (c = strstr(c, "<channel ")); c++) {
		const char *end = strstr(c, "</channel>"), *tn = strstr(c, "<target type='virtio' name='");
		_cleanup_free_ char *out = NULL;
		char name[64], have[96];
		int fd;

		if (!end || !tn || tn > end)
			break;
		snprintf(name, sizeof(name), "%.*s", (int)strcspn(tn + 28, "'"), tn + 28);
		snprintf(have, sizeof(have), "name='%s'", name);
		if (strstr(dom, have)) {
			kept++;
			continue;
		}
		strcpy(tmp, "/tmp/vt-channel.XXXXXX");
		fd = mkstemp(tmp);
		if (fd < 0 || util_write_full(fd, c, (size_t)(end - c) + 10) < 0) {
			r = -errno;
			if (fd >= 0)
				close(fd), unlink(tmp);
			log_error("setup --live: cannot write %s: %s", tmp, strerror(-r));
			return r;
		}
		close(fd);
		r = virsh((char *const[]){ (char *)"attach-device", (char *)domain, tmp, (char *)"--live",
					   persistent ? (char *)"--config" : NULL, NULL }, &out);
		unlink(tmp);
		if (r != 0) {
			one_line(out);
			log_error("setup --live: virsh attach-device %s (channel %s) failed: %s", domain, name, out);
			return -EIO;
		}
		printf("attached: channel %s to %s (--live%s)\n", name, domain, persistent ? " --config" : "");
		added++;
	}
	printf("libvirt domain %s: %u channels attached, %u already there%s\n", domain, added, kept,
	       persistent ? " (also in its persistent configuration)" : " (transient: live only)");
	return 0;
}
