// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "qemu-config.h"

static const struct qemu_config two = { .vm = "vm1", .dir = "/srv/vt/vm1", .ncpus = 2 };

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

TEST(vm_names)
{
	CHECK(qemu_config_vm_name_ok("vm1"));
	CHECK(qemu_config_vm_name_ok("Web_01-a"));
	CHECK(!qemu_config_vm_name_ok(""));
	CHECK(!qemu_config_vm_name_ok(NULL));
	CHECK(qemu_config_vm_name_ok("ubuntu22.04")); /* virt-manager's default names */
	CHECK(qemu_config_vm_name_ok("rhel-10.0_x"));
	CHECK(qemu_config_vm_name_ok("012345678901234567890123456789012345678901234567"));
	CHECK(!qemu_config_vm_name_ok("0123456789012345678901234567890123456789012345678"));
	CHECK(!qemu_config_vm_name_ok(".hidden"));
	CHECK(!qemu_config_vm_name_ok(".."));
	CHECK(!qemu_config_vm_name_ok("-x"));
	CHECK(!qemu_config_vm_name_ok("a/b"));
	CHECK(!qemu_config_vm_name_ok("a b"));
	CHECK(!qemu_config_vm_name_ok("../x"));
	CHECK(!qemu_config_vm_name_ok("vm,debug-threads=off"));
	CHECK(!qemu_config_vm_name_ok("0123456789012345678901234567890123456789012345678901234567890123x"));
}

TEST(dirs)
{
	CHECK(qemu_config_dir_ok("/var/lib/virtio-trace/vm1"));
	CHECK(qemu_config_dir_ok("/tmp/a.b+c@d:e"));
	CHECK(!qemu_config_dir_ok("relative/dir"));
	CHECK(!qemu_config_dir_ok("/a/../b"));
	CHECK(!qemu_config_dir_ok("/a/.."));
	CHECK(!qemu_config_dir_ok("/a,b"));      /* QEMU option separator */
	CHECK(!qemu_config_dir_ok("/a'b"));      /* XML attribute quote */
	CHECK(!qemu_config_dir_ok("/a b"));
	CHECK(!qemu_config_dir_ok("/a\nb"));
	CHECK(qemu_config_dir_ok("/a/..b"));     /* a name starting with dots is fine */
}

TEST(check_bounds)
{
	struct qemu_config qc = two;

	CHECK_INT(qemu_config_check(&qc), ==, 0);
	qc.ncpus = 0;
	CHECK_INT(qemu_config_check(&qc), ==, -ERANGE);
	qc.ncpus = 257;
	CHECK_INT(qemu_config_check(&qc), ==, -ERANGE);
	qc.ncpus = 256;
	CHECK_INT(qemu_config_check(&qc), ==, 0);
	qc.vm = "bad name";
	CHECK_INT(qemu_config_check(&qc), ==, -EINVAL);
}

TEST(socket_path_limit)
{
	/* 108-byte sun_path: dir + "/sock/trace-path-cpu255.sock" (28 bytes) must stay under it. */
	char dir[128];
	struct qemu_config qc = { .vm = "v", .dir = dir, .ncpus = 256, .transport = QEMU_CONFIG_SOCKET };

	memset(dir, 'a', sizeof(dir));
	dir[0] = '/';
	dir[79] = '\0'; /* 79 + 28 = 107: fits */
	CHECK_INT(qemu_config_check(&qc), ==, 0);
	dir[79] = 'a';
	dir[80] = '\0';
	CHECK_INT(qemu_config_check(&qc), ==, -ENAMETOOLONG);
	qc.transport = QEMU_CONFIG_PIPE; /* FIFOs have no such limit */
	CHECK_INT(qemu_config_check(&qc), ==, 0);
}

TEST(port_names_and_paths)
{
	struct qemu_config qc = two;
	char buf[64];

	CHECK_INT(qemu_config_nports(&qc), ==, 3);
	CHECK_INT(qemu_config_port_name(&qc, 0, buf, sizeof(buf)), ==, 0);
	CHECK_STR(buf, "agent-ctl-path");
	CHECK_INT(qemu_config_port_name(&qc, 2, buf, sizeof(buf)), ==, 0);
	CHECK_STR(buf, "trace-path-cpu1");
	qc.ncpus = 256;
	CHECK_INT(qemu_config_port_name(&qc, 256, buf, sizeof(buf)), ==, 0);
	CHECK_STR(buf, "trace-path-cpu255");
	qc.ncpus = 2;
	CHECK_INT(qemu_config_port_name(&qc, 2, buf, 8), ==, -ENOBUFS);
	/* perf ports follow the trace ports */
	qc.perf = true;
	CHECK_INT(qemu_config_nports(&qc), ==, 5);
	CHECK_INT(qemu_config_port_name(&qc, 2, buf, sizeof(buf)), ==, 0);
	CHECK_STR(buf, "trace-path-cpu1");
	CHECK_INT(qemu_config_port_name(&qc, 3, buf, sizeof(buf)), ==, 0);
	CHECK_STR(buf, "perf-path-cpu0");
	CHECK_INT(qemu_config_port_name(&qc, 4, buf, sizeof(buf)), ==, 0);
	CHECK_STR(buf, "perf-path-cpu1");
	qc.perf = false;
	CHECK_INT(qemu_config_port_path(&qc, 1, buf, sizeof(buf)), ==, 0);
	CHECK_STR(buf, "/srv/vt/vm1/trace-path-cpu0");
	qc.transport = QEMU_CONFIG_SOCKET;
	CHECK_INT(qemu_config_port_path(&qc, 0, buf, sizeof(buf)), ==, 0);
	CHECK_STR(buf, "/srv/vt/vm1/sock/agent-ctl-path.sock");
}

TEST(qemu_argv_pipe)
{
	char **argv = NULL;
	size_t n = 0;

	CHECK_INT(qemu_config_qemu_argv(&two, &argv), ==, 0);
	while (argv[n])
		n++;
	CHECK_INT(n, ==, 4 + 3 * 4);
	CHECK_STR(argv[0], "-name");
	CHECK_STR(argv[1], "vm1,debug-threads=on");
	CHECK_STR(argv[3], "virtio-serial-pci,id=vt-serial0");
	CHECK_STR(argv[4], "-chardev");
	CHECK_STR(argv[5], "pipe,id=vt-ctl,path=/srv/vt/vm1/agent-ctl-path");
	CHECK_STR(argv[7], "virtserialport,bus=vt-serial0.0,nr=1,chardev=vt-ctl,name=agent-ctl-path");
	CHECK_STR(argv[13], "pipe,id=vt-cpu1,path=/srv/vt/vm1/trace-path-cpu1");
	CHECK_STR(argv[15], "virtserialport,bus=vt-serial0.0,nr=3,chardev=vt-cpu1,name=trace-path-cpu1");
	qemu_config_argv_free(argv);
}

TEST(qemu_argv_socket)
{
	struct qemu_config qc = two;
	char **argv = NULL;

	qc.transport = QEMU_CONFIG_SOCKET;
	CHECK_INT(qemu_config_qemu_argv(&qc, &argv), ==, 0);
	CHECK_STR(argv[5], "socket,id=vt-ctl,path=/srv/vt/vm1/sock/agent-ctl-path.sock,server=on,wait=off");
	CHECK_STR(argv[9], "socket,id=vt-cpu0,path=/srv/vt/vm1/sock/trace-path-cpu0.sock,server=on,wait=off");
	qemu_config_argv_free(argv);
}

static size_t argv_count(char **argv, const char *prefix)
{
	size_t n = 0;

	for (; *argv; argv++)
		n += !strncmp(*argv, prefix, strlen(prefix));
	return n;
}

/* At most QEMU_CONFIG_PORTS_PER_CTRL ports per controller, spread evenly; many controllers go
 * behind bridges. */
TEST(qemu_ports_spread_over_controllers)
{
	struct qemu_config qc = two;
	char **argv = NULL;

	qc.ncpus = 7; /* 8 ports: one controller */
	CHECK_INT(qemu_config_nctrls(&qc), ==, 1);
	qc.ncpus = 16; /* 17 ports: 6 + 6 + 5 */
	CHECK_INT(qemu_config_nctrls(&qc), ==, 3);
	CHECK_INT(qemu_config_port_ctrl(&qc, 5), ==, 0);
	CHECK_INT(qemu_config_port_ctrl(&qc, 6), ==, 1);
	CHECK_INT(qemu_config_port_ctrl(&qc, 16), ==, 2);
	CHECK_INT(qemu_config_qemu_argv(&qc, &argv), ==, 0);
	CHECK_INT(argv_count(argv, "virtio-serial-pci,"), ==, 3);
	CHECK_STR(argv[7], "virtio-serial-pci,id=vt-serial2");
	CHECK_INT(argv_count(argv, "virtserialport,bus=vt-serial1.0,"), ==, 6);
	CHECK_INT(argv_count(argv, "virtserialport,bus=vt-serial2.0,"), ==, 5);
	CHECK_INT(argv_count(argv, "pci-bridge"), ==, 0);
	qemu_config_argv_free(argv);
	qc.ncpus = 256; /* 257 ports: 33 controllers behind 2 bridges */
	CHECK_INT(qemu_config_nctrls(&qc), ==, 33);
	CHECK_INT(qemu_config_qemu_argv(&qc, &argv), ==, 0);
	CHECK_STR(argv[3], "pci-bridge,id=vt-pci0,chassis_nr=200");
	CHECK_STR(argv[5], "pci-bridge,id=vt-pci1,chassis_nr=201");
	CHECK_STR(argv[7], "virtio-serial-pci,id=vt-serial0,bus=vt-pci0");
	CHECK_INT(argv_count(argv, "virtio-serial-pci,"), ==, 33);
	CHECK_INT(argv_count(argv, "virtserialport,"), ==, 257);
	for (unsigned c = 0; c < 33; c++) {
		char pre[64];

		snprintf(pre, sizeof(pre), "virtserialport,bus=vt-serial%u.0,", c);
		CHECK_INT(argv_count(argv, pre), <=, QEMU_CONFIG_PORTS_PER_CTRL);
	}
	qemu_config_argv_free(argv);
}

TEST(qemu_text_is_shell_lines)
{
	char *text = NULL;

	CHECK_INT(qemu_config_qemu_text(&two, &text), ==, 0);
	CHECK(!strncmp(text, "-name vm1,debug-threads=on \\\n-device virtio-serial-pci,id=vt-serial0 \\\n", 71));
	CHECK_INT(count(text, "\n"), ==, 8);
	CHECK_INT(count(text, " \\\n"), ==, 7); /* every line but the last continues */
	free(text);
}

TEST(libvirt_pipe)
{
	char *xml = NULL;

	CHECK_INT(qemu_config_libvirt_xml(&two, &xml), ==, 0);
	CHECK_INT(count(xml, "<channel type='pipe'>"), ==, 3);
	CHECK_INT(count(xml, "</channel>"), ==, 3);
	CHECK(strstr(xml, "<source path='/srv/vt/vm1/agent-ctl-path'/>\n  <target type='virtio' name='agent-ctl-path'/>"));
	CHECK(strstr(xml, "<source path='/srv/vt/vm1/trace-path-cpu1'/>\n  <target type='virtio' name='trace-path-cpu1'/>"));
	CHECK_INT(count(xml, "<controller type='virtio-serial' index='1'/>"), ==, 1);
	CHECK_INT(count(xml, "<controller"), ==, 1);
	CHECK(strstr(xml, "name='trace-path-cpu1'/>\n  <address type='virtio-serial' controller='1' bus='0' port='3'/>"));
	free(xml);
}

TEST(libvirt_unix_and_controller)
{
	struct qemu_config qc = two;
	char *xml = NULL;

	qc.transport = QEMU_CONFIG_SOCKET;
	qc.ncpus = 40;
	CHECK_INT(qemu_config_libvirt_xml(&qc, &xml), ==, 0);
	CHECK_INT(count(xml, "<channel type='unix'>"), ==, 41);
	CHECK(strstr(xml, "<source mode='bind' path='/srv/vt/vm1/sock/trace-path-cpu39.sock'/>"));
	CHECK_INT(count(xml, "<controller type='virtio-serial'"), ==, 6); /* 41 ports, 7 each */
	CHECK(strstr(xml, "<controller type='virtio-serial' index='6'/>"));
	CHECK(strstr(xml, "name='trace-path-cpu39'/>\n  <address type='virtio-serial' controller='6' bus='0' port='6'/>"));
	free(xml);
}

TEST(generators_refuse_invalid)
{
	struct qemu_config qc = two;
	char **argv = NULL;
	char *text = NULL;

	qc.dir = "/x,y";
	CHECK_INT(qemu_config_qemu_argv(&qc, &argv), ==, -EINVAL);
	CHECK(argv == NULL);
	CHECK_INT(qemu_config_libvirt_xml(&qc, &text), ==, -EINVAL);
	CHECK(text == NULL);
}
