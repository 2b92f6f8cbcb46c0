// SPDX-License-Identifier: GPL-2.0-only
/* Fuzz target: what the collector does with the agent's frames (hello, stopped, metadata
 * names) after the stream reader. */
#include <stdint.h>
#include <stdlib.h>

#include "collector.h"

void daemon_agent_msg(struct daemon *d, const struct vt_msg *m) {}
void daemon_agent_gone(struct daemon *d, int err) {}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vt_cpu_stats stats[COLLECTOR_MAX_CPUS];
	struct agent_hello h;
	struct vt_reader r;
	struct vt_msg m;
	char legacy;
	unsigned n;

	if (vt_reader_init(&r) < 0)
		return 0;
	if (vt_reader_feed(&r, data, size) == 0) {
		enum vt_read_result res;

		while ((res = vt_reader_next(&r, &m, &legacy)) != VT_READ_NEED_MORE) {
			char *name = NULL;

			if (res != VT_READ_MSG || vt_msg_validate(&m) < 0)
				continue;
			(void)agentctl_parse_hello(&m, &h);
			(void)agentctl_parse_stopped(&m, 1, stats, (unsigned)(m.hdr.seq % COLLECTOR_MAX_CPUS) + 1, &n);
			if (vt_msg_str(&m, VT_A_FILE_NAME, 4096, &name) == 0)
				(void)agentctl_meta_name_ok(name);
			free(name);
		}
	}
	vt_reader_free(&r);
	return 0;
}
