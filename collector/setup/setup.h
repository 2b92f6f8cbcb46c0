/* SPDX-License-Identifier: GPL-2.0-only */
/* setup's attach to a running VM (cmd-setup.c calls them). */
#pragma once

/* qmp.c: setup --qmp, the ports given to a running QEMU; 0 or -errno (said). */
struct qemu_config;
int setup_qmp_attach(const struct qemu_config *qc, const char *qmp_path);
/* libvirt-live.c: setup --format libvirt --live DOMAIN, with virsh; 0 or -errno (said). */
int setup_libvirt_attach(const struct qemu_config *qc, const char *domain);
