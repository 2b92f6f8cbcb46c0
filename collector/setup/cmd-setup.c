// SPDX-License-Identifier: GPL-2.0-only
/* trace-collector setup: per-VM dir, FIFO pairs, then QEMU arguments or libvirt XML. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "collector.h"
#include "log.h"
#include "qemu-config.h"
#include "setup.h"
#include "util.h"

#define SETUP_USAGE "--name VM --cpus N [--dir D] [--transport pipe|socket] [--format qemu|libvirt]\n" \
	"       [--owner USER:GROUP] [--mode 0600] [--qmp SOCKET | --live DOMAIN] [--guest-perf yes|no]\n\n" \
	"Creates the per-VM dir (default " QEMU_CONFIG_DEFAULT_DIR "/VM) and, for the pipe transport,\n"  \
	"the FIFO pairs agent-ctl-path.{in,out}, trace-path-cpuN.{in,out} and perf-path-cpuN.{in,out}\n" \
	"(idempotent), then prints\n" \
	"the QEMU arguments (--format qemu, default) or libvirt <channel> elements (--format libvirt).\n" \
	"With --transport socket QEMU creates the sockets itself in the dir.\n"                         \
	"  --owner USER:GROUP  owner of the FIFOs, or of sock/ for sockets: the user QEMU runs as\n"       \
	"                      (libvirt: libvirt-qemu:libvirt-qemu); the VM dir itself stays root's\n"    \
	"  --mode MODE         FIFO mode, octal (default 0600: QEMU's user alone)\n"                       \
	"  --qmp SOCKET        attach live: give the running QEMU whose QMP monitor is SOCKET the\n"       \
	"                      controllers, chardevs and ports through device_add/chardev-add\n"          \
	"                      (what it has already is kept) instead of printing arguments\n"             \
	"  --live DOMAIN       with --format libvirt --transport socket: attach the channels to the\n"    \
	"                      running libvirt domain with virsh attach-device (--live, and --config\n"   \
	"                      when it is persistent); its controllers must be there since boot\n"       \
	"  --guest-perf no     leave out the perf-path-cpuN ports (by default every CPU has one, so that\n" \
	"                      'start --guest-perf' can profile the guest without a restart)"

enum setup_format { SETUP_QEMU, SETUP_LIBVIRT };

struct setup_opts {
	struct qemu_config qc;
	enum setup_format format;
	uid_t uid;
	gid_t gid;
	bool chown;
	mode_t mode;
	const char *qmp;      /* --qmp SOCKET: attach to the running QEMU */
	const char *domain;   /* --live DOMAIN: attach to the running libvirt domain */
	char dirbuf[PATH_MAX];
};

static int setup_parse_owner(const char *s, struct setup_opts *o)
{
	_cleanup_free_ char *user = strdup(s);
	char *group = user ? strchr(user, ':') : NULL;
	struct passwd *pw;
	struct group *gr;

	if (!group)
		return -EINVAL;
	*group++ = '\0';
	pw = getpwnam(user);
	gr = getgrnam(group);
	if (!pw || !gr)
		return -ENOENT;
	o->uid = pw->pw_uid;
	o->gid = gr->gr_gid;
	o->chown = true;
	return 0;
}

static int setup_parse_mode(const char *s, mode_t *ret)
{
	char *end;
	unsigned long m;

	errno = 0;
	m = strtoul(s, &end, 8);
	if (errno || end == s || *end || m > 0777 || (m & 0600) != 0600)
		return -EINVAL;
	*ret = (mode_t)m;
	return 0;
}

static int setup_parse_enum(const char *s, const char *const *names, size_t n, int *ret)
{
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(s, names[i])) {
			*ret = (int)i;
			return 0;
		}
	}
	return -EINVAL;
}

static int setup_opt_name(const char *arg, struct setup_opts *o)
{
	o->qc.vm = arg;
	return qemu_config_vm_name_ok(arg) ? 0 : -EINVAL;
}

static int setup_opt_dir(const char *arg, struct setup_opts *o)
{
	o->qc.dir = arg;
	return qemu_config_dir_ok(arg) ? 0 : -EINVAL;
}

static int setup_opt_cpus(const char *arg, struct setup_opts *o)
{
	uint64_t v;

	if (util_parse_u64(arg, QEMU_CONFIG_MAX_CPUS, &v) < 0 || v < 1)
		return -EINVAL;
	o->qc.ncpus = (unsigned)v;
	return 0;
}

static int setup_opt_transport(const char *arg, struct setup_opts *o)
{
	static const char *const names[] = { [QEMU_CONFIG_PIPE] = "pipe", [QEMU_CONFIG_SOCKET] = "socket" };
	int v;

	if (setup_parse_enum(arg, names, ARRAY_SIZE(names), &v) < 0)
		return -EINVAL;
	o->qc.transport = v;
	return 0;
}

static int setup_opt_format(const char *arg, struct setup_opts *o)
{
	static const char *const names[] = { [SETUP_QEMU] = "qemu", [SETUP_LIBVIRT] = "libvirt" };
	int v;

	if (setup_parse_enum(arg, names, ARRAY_SIZE(names), &v) < 0)
		return -EINVAL;
	o->format = v;
	return 0;
}

static int setup_opt_owner(const char *arg, struct setup_opts *o)
{
	return setup_parse_owner(arg, o);
}

static int setup_opt_mode(const char *arg, struct setup_opts *o)
{
	return setup_parse_mode(arg, &o->mode);
}

struct setup_option {
	const char *name;
	const char *must_be;
	int (*parse)(const char *arg, struct setup_opts *o);
};

static int setup_opt_qmp(const char *arg, struct setup_opts *o)
{
	o->qmp = arg;
	return *arg && strlen(arg) < QEMU_CONFIG_SUN_PATH_MAX ? 0 : -EINVAL;
}

static int setup_opt_live(const char *arg, struct setup_opts *o)
{
	o->domain = arg;
	return *arg && strlen(arg) < 256 && !strchr(arg, '/') ? 0 : -EINVAL;
}

static int setup_opt_guest_perf(const char *arg, struct setup_opts *o)
{
	static const char *const names[] = { "no", "yes" };
	int v;

	if (setup_parse_enum(arg, names, ARRAY_SIZE(names), &v) < 0)
		return -EINVAL;
	o->qc.perf = v;
	return 0;
}

static const struct setup_option setup_options[] = {
	{ "name", QEMU_CONFIG_VM_NAME_RULE, setup_opt_name },
	{ "cpus", "a number of CPUs from 1 to 256", setup_opt_cpus },
	{ "dir", "an absolute path of [A-Za-z0-9_./+@:-] without '..'", setup_opt_dir },
	{ "transport", "'pipe' or 'socket'", setup_opt_transport },
	{ "format", "'qemu' or 'libvirt'", setup_opt_format },
	{ "owner", "USER:GROUP naming an existing user and group", setup_opt_owner },
	{ "mode", "an octal mode of at most 0777 with owner read and write (e.g. 0660)", setup_opt_mode },
	{ "qmp", "the path of QEMU's QMP unix socket (-qmp unix:PATH,server=on,wait=off)", setup_opt_qmp },
	{ "live", "a libvirt domain name", setup_opt_live },
	{ "guest-perf", "'yes' or 'no'", setup_opt_guest_perf },
};

static int setup_parse(int argc, char **argv, struct setup_opts *o)
{
	struct option longopts[ARRAY_SIZE(setup_options) + 2] = { { 0 } };
	int c;

	for (size_t i = 0; i < ARRAY_SIZE(setup_options); i++)
		longopts[i] = (struct option){ setup_options[i].name, required_argument, NULL, (int)i };
	longopts[ARRAY_SIZE(setup_options)] = (struct option){ "help", no_argument, NULL, 'h' };
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (c == 'h') {
			cmd_usage(&cmd_setup, 0);
			return 1;
		}
		if (c < 0 || c >= (int)ARRAY_SIZE(setup_options)) {
			cmd_bad_option(&cmd_setup);
			return 2;
		}
		if (setup_options[c].parse(optarg, o) < 0) {
			log_error("setup: --%s '%s': must be %s", setup_options[c].name, optarg,
				  setup_options[c].must_be);
			return 2;
		}
	}
	if (optind < argc) {
		log_error("setup: unexpected argument '%s' (see trace-collector setup --help)", argv[optind]);
		return 2;
	}
	if (!o->qc.vm || !o->qc.ncpus) {
		log_error("setup: --name VM and --cpus N are required (see trace-collector setup --help)");
		return 2;
	}
	return 0;
}

/* Creates the FIFO name (relative to dirfd) or accepts an existing FIFO; fixes mode/owner.
 * A link planted at the name (a VM dir from before 0.x gave QEMU's user the dir) goes. */
static int setup_fifo(int dirfd, const char *dir, const char *name, const struct setup_opts *o)
{
	struct stat st;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
		log_warn("%s/%s was a symbolic link, not a FIFO: removed", dir, name);
		if (unlinkat(dirfd, name, 0) < 0) {
			log_error("cannot remove the link %s/%s: %m", dir, name);
			return -errno;
		}
	}
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno != ENOENT || mkfifoat(dirfd, name, o->mode) < 0) {
			log_error("cannot create FIFO %s/%s: %m", dir, name);
			return -errno;
		}
	} else if (!S_ISFIFO(st.st_mode)) {
		log_error("%s/%s exists and is not a FIFO: remove it or choose another --dir", dir, name);
		return -EEXIST;
	}
	/* mkfifo is subject to the umask; set the mode asked for, on new and old FIFOs alike. */
	if (fchmodat(dirfd, name, o->mode, 0) < 0 ||
	    (o->chown && fchownat(dirfd, name, o->uid, o->gid, AT_SYMLINK_NOFOLLOW) < 0)) {
		log_error("cannot set mode/owner of FIFO %s/%s: %m", dir, name);
		return -errno;
	}
	return 0;
}

static int setup_fifos(int dirfd, const struct setup_opts *o)
{
	static const char *const sides[] = { "in", "out" };

	for (unsigned i = 0; i < qemu_config_nports(&o->qc); i++) {
		char port[32], name[40];

		qemu_config_port_name(&o->qc, i, port, sizeof(port));
		for (size_t s = 0; s < ARRAY_SIZE(sides); s++) {
			snprintf(name, sizeof(name), "%s.%s", port, sides[s]);
			if (setup_fifo(dirfd, o->qc.dir, name, o) < 0)
				return -EIO;
		}
	}
	return 0;
}

/* What the daemon writes (sessions/, cache/) must be root's: a link or a directory another
 * user could change (left by a setup that gave QEMU's user the VM dir) is moved aside. */
static int setup_reclaim(int dirfd, const char *dir, const char *name)
{
	char aside[64];
	struct stat st;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (S_ISDIR(st.st_mode) && st.st_uid == 0 && !(st.st_mode & (S_IWGRP | S_IWOTH)))
		return 0;
	if (S_ISLNK(st.st_mode)) {
		log_warn("%s/%s was a symbolic link: removed (the daemon writes there as root)", dir, name);
		return unlinkat(dirfd, name, 0) < 0 ? -errno : 0;
	}
	snprintf(aside, sizeof(aside), "%s.untrusted-%lld", name, (long long)time(NULL));
	log_warn("%s/%s could be changed by uid %u: moved to %s/%s (check what it holds; the daemon writes a "
		 "new one as root)", dir, name, (unsigned)st.st_uid, dir, aside);
	return renameat(dirfd, name, dirfd, aside) < 0 ? -errno : 0;
}

/* For the socket transport: sock/, QEMU's user's own (it creates the sockets there). */
static int setup_sockdir(int dirfd, const struct setup_opts *o)
{
	struct stat st;

	if (fstatat(dirfd, QEMU_CONFIG_SOCK_DIR, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode) &&
	    unlinkat(dirfd, QEMU_CONFIG_SOCK_DIR, 0) < 0)
		return -errno;
	if (mkdirat(dirfd, QEMU_CONFIG_SOCK_DIR, 0750) < 0 && errno != EEXIST)
		return -errno;
	if (fchmodat(dirfd, QEMU_CONFIG_SOCK_DIR, o->chown ? 0750 : 0700, 0) < 0 ||
	    (o->chown && fchownat(dirfd, QEMU_CONFIG_SOCK_DIR, o->uid, o->gid, AT_SYMLINK_NOFOLLOW) < 0))
		return -errno;
	return 0;
}

/* The per-VM dir: root's, 0755 (QEMU must reach its ports), like its parents. QEMU's user
 * gets the FIFOs or sock/, nothing else (docs/security.md). */
static int setup_dir(const struct setup_opts *o, int *ret_fd)
{
	_cleanup_free_ char *parent = strdup(o->qc.dir);
	char *slash = parent ? strrchr(parent, '/') : NULL;
	_cleanup_close_ int fd = -1;
	int r;

	if (!slash)
		return -ENOMEM;
	*slash = '\0';
	r = slash == parent ? 0 : util_mkdir_p(parent, 0755);
	if (r == 0 && mkdir(o->qc.dir, 0755) < 0 && errno != EEXIST)
		r = -errno;
	if (r < 0) {
		log_error("cannot create directory %s: %s", o->qc.dir, strerror(-r));
		return r;
	}
	fd = open(o->qc.dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		log_error("%s is not a directory (or cannot be opened): %m", o->qc.dir);
		return -errno;
	}
	if (fchown(fd, 0, 0) < 0 || fchmod(fd, 0755) < 0) {
		log_error("cannot make %s root's, mode 0755: %m", o->qc.dir);
		return -EPERM;
	}
	if ((r = setup_reclaim(fd, o->qc.dir, "sessions")) < 0 || (r = setup_reclaim(fd, o->qc.dir, "cache")) < 0) {
		log_error("cannot take back %s/sessions or cache for root: %s", o->qc.dir, strerror(-r));
		return r;
	}
	if (o->qc.transport == QEMU_CONFIG_SOCKET && (r = setup_sockdir(fd, o)) < 0) {
		log_error("cannot prepare %s/" QEMU_CONFIG_SOCK_DIR " for QEMU's sockets: %s", o->qc.dir, strerror(-r));
		return r;
	}
	*ret_fd = TAKE_FD(fd);
	return 0;
}

static int setup_print(const struct setup_opts *o)
{
	_cleanup_free_ char *text = NULL;
	int r;

	if (o->format == SETUP_QEMU)
		r = qemu_config_qemu_text(&o->qc, &text);
	else
		r = qemu_config_libvirt_xml(&o->qc, &text);
	if (r < 0) {
		log_error("setup: cannot generate the %s configuration: %s",
			  o->format == SETUP_QEMU ? "QEMU" : "libvirt", strerror(-r));
		return r;
	}
	fputs(text, stdout);
	return fflush(stdout) == 0 ? 0 : -EIO;
}

/* Whole-configuration checks that single options cannot do; names what to change. */
static int setup_check(const struct setup_opts *o)
{
	int r = qemu_config_check(&o->qc);

	if (r == -ENAMETOOLONG)
		log_error("setup: socket paths under %s would exceed %d bytes: choose a shorter --dir",
			  o->qc.dir, QEMU_CONFIG_SUN_PATH_MAX - 1);
	else if (r < 0)
		log_error("setup: invalid configuration: %s", strerror(-r));
	return r;
}

static int setup_run(int argc, char **argv)
{
	struct setup_opts o = { .qc.transport = QEMU_CONFIG_PIPE, .qc.perf = true, .format = SETUP_QEMU, .mode = 0600 };
	_cleanup_close_ int dirfd = -1;
	int r = setup_parse(argc, argv, &o);

	if (r)
		return r == 1 ? 0 : r;
	if (!o.qc.dir) {
		snprintf(o.dirbuf, sizeof(o.dirbuf), "%s/%s", QEMU_CONFIG_DEFAULT_DIR, o.qc.vm);
		o.qc.dir = o.dirbuf;
	}
	if (setup_check(&o) < 0)
		return 2;
	if (setup_dir(&o, &dirfd) < 0)
		return 1;
	if (o.qc.transport == QEMU_CONFIG_PIPE && setup_fifos(dirfd, &o) < 0)
		return 1;
	if (o.qmp && o.format != SETUP_QEMU) {
		log_error("setup: --qmp attaches to a plain QEMU; for a libvirt domain use virsh attach-device (see the README)");
		return 2;
	}
	if (o.qmp)
		return setup_qmp_attach(&o.qc, o.qmp) < 0 ? 1 : 0;
	if (o.domain && o.format != SETUP_LIBVIRT) {
		log_error("setup: --live DOMAIN attaches to a libvirt domain: add --format libvirt --transport socket "
			  "(a plain QEMU takes --qmp SOCKET)");
		return 2;
	}
	if (o.domain)
		return setup_libvirt_attach(&o.qc, o.domain) < 0 ? 1 : 0;
	return setup_print(&o) < 0 ? 1 : 0;
}

const struct cmd_entry cmd_setup = {
	.name = "setup",
	.summary = "create the per-VM FIFOs/sockets, print QEMU args or libvirt XML",
	.usage = SETUP_USAGE,
	.run = setup_run,
};
