/* SPDX-License-Identifier: GPL-2.0-only */
/* hostevents.c: host perf's event lists beside KVM's mediated PMU. */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

/* Whether KVM's mediated PMU is enabled on this host (sys_root: "/sys"); which names the
 * module parameter that says so ("kvm_amd.enable_mediated_pmu"). */
bool hostevents_mediated_pmu(const char *sys_root, char *which, size_t len);

struct hostevents_guarded {
	unsigned changed; /* hardware events given :H */
	unsigned guest;   /* hardware events asking for the guest's mode (:G): left as they are */
};

/* perf event list → out, each hardware event (generic, cache, raw r<hex>, cpu/.../) without an
 * H or G modifier given H ("cycles" → "cycles:H", "instructions:u" → "instructions:uH",
 * "cpu/event=0x3c/" → "cpu/event=0x3c/H"); tracepoints and software events as they are.
 * Counts into *g; 0, or -ENOBUFS / -EINVAL (a group without its '}'). */
int hostevents_guard(const char *list, char *out, size_t len, struct hostevents_guarded *g);
