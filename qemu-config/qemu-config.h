/* SPDX-License-Identifier: GPL-2.0-only */
/* QEMU arguments and libvirt <channel> elements for a VM's virtio-trace ports. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#define QEMU_CONFIG_CTL_PORT "agent-ctl-path"
#define QEMU_CONFIG_DATA_PORT "trace-path-cpu" /* + CPU number */
#define QEMU_CONFIG_PERF_PORT "perf-path-cpu"  /* + CPU number: guest perf (start --guest-perf) */
#define QEMU_CONFIG_DEFAULT_DIR "/var/lib/virtio-trace"
#define QEMU_CONFIG_MAX_CPUS 256
#define QEMU_CONFIG_MAX_VM_NAME 48
/* The one rule for a VM name, in every command's words (setup, start, stop, status, snapshot). */
#define QEMU_CONFIG_VM_NAME_RULE "1 to 48 letters, digits, '_', '-' or '.', not beginning with '.' or '-'"
/* Ports per virtio-serial controller. QEMU announces each port to the guest with up to three
 * control messages (PORT_ADD, then PORT_NAME and PORT_OPEN once the guest says PORT_READY)
 * through a control in-queue of 32 entries, and drops a message when the guest has no buffer
 * posted (send_control_msg). 8 ports = at most 24 messages: they fit the 32 buffers the guest
 * posts at probe even if it re-posts none in time. */
#define QEMU_CONFIG_PORTS_PER_CTRL 8
/* Controllers beyond this many go behind PCI bridges (31 each): a machine's root bus has
 * about 30 free slots and the VM has devices of its own. */
#define QEMU_CONFIG_ROOT_CTRLS 4
#define QEMU_CONFIG_BRIDGE_SLOTS 31
/* First libvirt controller index: index 0 is left to the domain's own channels
 * (qemu-guest-agent, spice), which libvirt puts there. */
#define QEMU_CONFIG_LIBVIRT_CTRL_BASE 1
#define QEMU_CONFIG_SERIAL_ID "vt-serial" /* + controller number */
#define QEMU_CONFIG_SUN_PATH_MAX 108

enum qemu_config_transport { QEMU_CONFIG_PIPE, QEMU_CONFIG_SOCKET };

struct qemu_config {
	const char *vm;   /* qemu_config_vm_name_ok */
	const char *dir;  /* absolute per-VM dir, characters [A-Za-z0-9_./+@:-] */
	unsigned ncpus;   /* 1 .. QEMU_CONFIG_MAX_CPUS */
	enum qemu_config_transport transport;
	bool perf;        /* also a perf-path-cpuN port per CPU (setup's default) */
};

/* Virtio-serial controllers the ports are spread over, and port i's controller. */
unsigned qemu_config_nctrls(const struct qemu_config *qc);
unsigned qemu_config_port_ctrl(const struct qemu_config *qc, unsigned i);

/* True when name is a valid VM name (QEMU_CONFIG_VM_NAME_RULE: libvirt's and virt-manager's usual
 * names, such as "ubuntu22.04", pass; nothing a path, QEMU's option syntax or XML would read). */
bool qemu_config_vm_name_ok(const char *name);
/* True when dir is absolute, has no "..", and only [A-Za-z0-9_./+@:-] (no quoting needed
 * in a shell, in QEMU's option syntax or in XML). */
bool qemu_config_dir_ok(const char *dir);

/* Sockets live in DIR/sock/, the one directory of the VM dir QEMU's user may write. */
#define QEMU_CONFIG_SOCK_DIR "sock"

/* 0, or -EINVAL (name or dir), -ERANGE (ncpus), -ENAMETOOLONG (socket path past sun_path). */
int qemu_config_check(const struct qemu_config *qc);
/* Number of ports: the control port plus one per CPU (two with perf). */
unsigned qemu_config_nports(const struct qemu_config *qc);
/* Guest name of port i: 0 is agent-ctl-path, 1..ncpus trace-path-cpu(i-1), then (perf)
 * perf-path-cpu(i-1-ncpus). 0 or -ENOBUFS. */
int qemu_config_port_name(const struct qemu_config *qc, unsigned i, char *buf, size_t len);
/* Host path of port i: DIR/NAME for pipes (QEMU opens NAME.in and NAME.out),
 * DIR/sock/NAME.sock for sockets (sock/: the directory QEMU's user may write). 0 or -ENOBUFS. */
int qemu_config_port_path(const struct qemu_config *qc, unsigned i, char *buf, size_t len);
/* QEMU arguments as a NULL-terminated argv; free with qemu_config_argv_free. */
int qemu_config_qemu_argv(const struct qemu_config *qc, char ***ret_argv);
void qemu_config_argv_free(char **argv);
/* The same arguments as shell text, one "-option value \" line per pair. */
int qemu_config_qemu_text(const struct qemu_config *qc, char **ret_text);
/* libvirt <channel> elements (and a virtio-serial <controller> when more than 30 ports). */
int qemu_config_libvirt_xml(const struct qemu_config *qc, char **ret_xml);
