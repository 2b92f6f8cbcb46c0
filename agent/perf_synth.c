// SPDX-License-Identifier: GPL-2.0-only
/* The tasks that exist when a guest perf session starts, as perf record synthesizes them: a
 * COMM per thread and an MMAP2 per executable mapping of each process, read from /proc. The
 * kernel writes these records itself for tasks that start or exec later. These are the only
 * guest perf bytes that cross user space (docs/protocol.md §3). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"
#include "elf_notes.h"
#include "log.h"
#include "util.h"

#define PERF_SYNTH_BUF (64u << 10)
#define PERF_SYNTH_MAPS_MAX (8u << 20) /* a process with a larger maps file gets COMM only */
#define PERF_SYNTH_STOP 1              /* a bound is reached: stop quietly */
#define PERF_SYNTH_BIDS 512            /* files whose build-id is remembered during one synthesis */

/* A mapped file's build-id, read once per synthesis (len 0: it has none). */
struct perf_synth_bid {
	uint32_t maj, min;
	uint64_t ino;
	uint8_t len, id[ELF_NOTES_BUILD_ID_MAX];
};

struct perf_synth {
	const struct pump_port *port;
	uint32_t cpu;
	uint64_t id, time;
	unsigned tasks;
	uint64_t records, bytes;         /* written to the port */
	uint64_t buf_records, buf_bytes; /* waiting in buf */
	unsigned n_bids;
	struct perf_synth_bid bids[PERF_SYNTH_BIDS];
	uint8_t buf[PERF_SYNTH_BUF];
};

/* sample_id_all with VT_PERF_SAMPLE_TYPE: TID, TIME, CPU, IDENTIFIER. */
struct perf_synth_id {
	uint32_t pid, tid;
	uint64_t time;
	uint32_t cpu, res;
	uint64_t id;
};
_Static_assert(sizeof(struct perf_synth_id) == VT_PERF_SAMPLE_ID_LEN, "sample_id trailer");

struct perf_synth_comm {
	uint32_t pid, tid;
};

struct perf_synth_mmap2 {
	uint32_t pid, tid;
	uint64_t addr, len, pgoff;
	uint32_t maj, min;
	uint64_t ino, ino_generation;
	uint32_t prot, flags;
};
_Static_assert(sizeof(struct perf_synth_mmap2) == 64, "PERF_RECORD_MMAP2 body before the name");

/* The same with PERF_RECORD_MISC_MMAP_BUILD_ID: the build-id in place of device and inode. */
struct perf_synth_mmap2_bid {
	uint32_t pid, tid;
	uint64_t addr, len, pgoff;
	uint8_t build_id_size, res1;
	uint16_t res2;
	uint8_t build_id[20];
	uint32_t prot, flags;
};
_Static_assert(sizeof(struct perf_synth_mmap2_bid) == 64, "PERF_RECORD_MMAP2 (build-id) body before the name");

static int perf_synth_flush(struct perf_synth *s)
{
	int r = pump_port_write(s->port, s->buf, (size_t)s->buf_bytes);

	if (r < 0)
		return r;
	s->records += s->buf_records;
	s->bytes += s->buf_bytes;
	s->buf_records = s->buf_bytes = 0;
	return 0;
}

/* Appends one record: header, body, name (NUL, padded to 8 bytes), sample_id trailer. */
static int perf_synth_put(struct perf_synth *s, uint32_t type, uint16_t misc, const void *body, size_t blen,
			  const char *name, uint32_t pid, uint32_t tid)
{
	struct perf_synth_id t = { .pid = pid, .tid = tid, .time = s->time, .cpu = s->cpu, .id = s->id };
	size_t nlen = strnlen(name, 4096), npad = ALIGN_UP(nlen + 1, (size_t)8);
	size_t size = sizeof(struct perf_event_header) + blen + npad + sizeof(t);
	struct perf_event_header h = { .type = type, .misc = misc, .size = (uint16_t)size };
	uint8_t *p;
	int r;

	if (s->bytes + s->buf_bytes + size > PERF_SYNTH_BYTES_MAX)
		return PERF_SYNTH_STOP;
	if (s->buf_bytes + size > sizeof(s->buf)) {
		r = perf_synth_flush(s);
		if (r < 0)
			return r;
	}
	p = s->buf + s->buf_bytes;
	memcpy(p, &h, sizeof(h));
	memcpy(p + sizeof(h), body, blen);
	p += sizeof(h) + blen;
	memset(p, 0, npad);
	memcpy(p, name, nlen);
	memcpy(p + npad, &t, sizeof(t));
	s->buf_bytes += size;
	s->buf_records++;
	return 0;
}

static int perf_synth_threads(struct perf_synth *s, uint32_t pid)
{
	char path[64];
	struct dirent *de;
	DIR *d;
	int r = 0;

	snprintf(path, sizeof(path), "/proc/%u/task", pid);
	d = opendir(path);
	if (!d)
		return 0; /* gone meanwhile */
	while (r == 0 && (de = readdir(d))) {
		_cleanup_free_ char *comm = NULL;
		uint64_t tid;

		if (util_parse_u64(de->d_name, UINT32_MAX, &tid) < 0)
			continue;
		if (s->tasks >= PERF_SYNTH_TASKS_MAX) {
			r = PERF_SYNTH_STOP;
			break;
		}
		snprintf(path, sizeof(path), "/proc/%u/task/%u/comm", pid, (uint32_t)tid);
		if (util_read_file(path, 64, &comm, NULL) < 0)
			continue;
		comm[strcspn(comm, "\n")] = '\0';
		s->tasks++;
		/* misc 0, as the kernel writes a COMM that is not an exec */
		r = perf_synth_put(s, PERF_RECORD_COMM, 0, &(struct perf_synth_comm){ pid, (uint32_t)tid },
				   sizeof(struct perf_synth_comm), comm, pid, (uint32_t)tid);
	}
	closedir(d);
	return r;
}

/* The build-id of the file a mapping shows (its map_files link, which names the mapped file
 * even when the path now holds another), remembered by device and inode; NULL when none. */
static const struct perf_synth_bid *perf_synth_build_id(struct perf_synth *s, uint32_t pid, const char *range,
							 unsigned maj, unsigned min, uint64_t ino)
{
	struct perf_synth_bid *b;
	_cleanup_close_ int fd = -1;
	char path[96];
	struct stat st;
	size_t n = 0;

	for (unsigned i = 0; i < s->n_bids; i++)
		if (s->bids[i].ino == ino && s->bids[i].maj == maj && s->bids[i].min == min)
			return s->bids[i].len ? &s->bids[i] : NULL;
	if (s->n_bids == PERF_SYNTH_BIDS)
		return NULL;
	b = &s->bids[s->n_bids++];
	*b = (struct perf_synth_bid){ .maj = maj, .min = min, .ino = ino };
	snprintf(path, sizeof(path), "/proc/%u/map_files/%.40s", pid, range);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    elf_file_build_id_fd(fd, (uint64_t)st.st_size, b->id, &n) < 0)
		return NULL;
	b->len = (uint8_t)n;
	return b;
}

/* One line of /proc/PID/maps: an MMAP2 if the mapping is executable, with the file's build-id
 * when it has one (as the kernel writes them for attr.build_id). */
static int perf_synth_map_line(struct perf_synth *s, const char *line, uint32_t pid)
{
	unsigned long long start, end, off, ino;
	unsigned maj, min;
	char perms[8];
	int name = -1;
	const char *fn;
	const struct perf_synth_bid *b = NULL;
	uint32_t prot;

	if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &off, &maj, &min, &ino,
		   &name) < 7 || strlen(perms) != 4 || perms[2] != 'x' || end <= start)
		return 0;
	fn = name >= 0 && line[name] ? line + name : "//anon";
	prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) | PROT_EXEC;
	if (fn[0] == '/' && ino) {
		char r[48]; /* map_files names: unpadded hex, unlike maps */

		snprintf(r, sizeof(r), "%llx-%llx", start, end);
		b = perf_synth_build_id(s, pid, r, maj, min, ino);
	}
	if (b) {
		struct perf_synth_mmap2_bid m = { .pid = pid, .tid = pid, .addr = start, .len = end - start,
						  .pgoff = off, .build_id_size = b->len, .prot = prot,
						  .flags = perms[3] == 's' ? MAP_SHARED : MAP_PRIVATE };

		memcpy(m.build_id, b->id, b->len);
		return perf_synth_put(s, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER | PERF_RECORD_MISC_MMAP_BUILD_ID, &m,
				      sizeof(m), fn, pid, pid);
	}
	return perf_synth_put(s, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER,
			      &(struct perf_synth_mmap2){
				      .pid = pid, .tid = pid, .addr = start, .len = end - start, .pgoff = off,
				      .maj = maj, .min = min, .ino = ino, .prot = prot,
				      .flags = perms[3] == 's' ? MAP_SHARED : MAP_PRIVATE },
			      sizeof(struct perf_synth_mmap2), fn, pid, pid);
}

/* Executable mappings of a process; a kernel thread has none. */
static int perf_synth_maps(struct perf_synth *s, uint32_t pid)
{
	_cleanup_free_ char *maps = NULL;
	char path[64];
	int r = 0;

	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	if (util_read_file(path, PERF_SYNTH_MAPS_MAX, &maps, NULL) < 0)
		return 0;
	for (char *line = maps, *next; r == 0 && *line; line = next) {
		next = line + strcspn(line, "\n");
		if (*next)
			*next++ = '\0';
		r = perf_synth_map_line(s, line, pid);
	}
	return r;
}

int perf_synth_tasks(const struct pump_port *port, unsigned cpu, uint64_t id, uint64_t time,
		     uint64_t *ret_records, uint64_t *ret_bytes)
{
	_cleanup_free_ struct perf_synth *s = calloc(1, sizeof(*s));
	struct dirent *de;
	DIR *d;
	int r = 0;

	*ret_records = *ret_bytes = 0;
	if (!s)
		return -ENOMEM;
	s->port = port;
	s->cpu = cpu;
	s->id = id;
	s->time = time;
	d = opendir("/proc");
	if (!d) {
		log_debug("cannot list /proc: %m; no task records");
		return 0;
	}
	while (r == 0 && (de = readdir(d))) {
		uint64_t pid;

		if (util_parse_u64(de->d_name, UINT32_MAX, &pid) < 0)
			continue;
		r = perf_synth_threads(s, (uint32_t)pid);
		if (r == 0)
			r = perf_synth_maps(s, (uint32_t)pid);
	}
	closedir(d);
	if (r == PERF_SYNTH_STOP)
		log_info("guest perf: task records capped at %u tasks or %u MiB (the kernel's own COMM and "
			 "MMAP2 records still name tasks that start or exec later)", s->tasks,
			 PERF_SYNTH_BYTES_MAX >> 20);
	if (r >= 0)
		r = perf_synth_flush(s);
	*ret_records = s->records;
	*ret_bytes = s->bytes;
	return r;
}
