/* SPDX-License-Identifier: MIT */
/* VMA lookups shared by the bpf and userfaultfd backends; see vma.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "../base/log.h"
#include "vma.h"

int rc_vma_source_open_pid(struct rc_vma_source *src, pid_t pid,
			   bool procmap)
{
	struct rc_procmap_query q = {
		.size = sizeof(q),
		.query_flags = RC_PROCMAP_COVERING_OR_NEXT,
		.query_addr = (uintptr_t)src,
	};
	int err = 0;

	src->pid = pid;
	src->procmap = false;
	if (pid)
		snprintf(src->path, sizeof(src->path), "/proc/%d/maps",
			 (int)pid);
	else
		snprintf(src->path, sizeof(src->path), "/proc/self/maps");
	src->maps_fd = open(src->path, O_RDONLY | O_CLOEXEC);
	if (src->maps_fd < 0)
		return -errno;
	/* The query only tells whether the ioctl exists. The address is in
	 * the caller's own struct: another process may have no VMA at or
	 * above it (ENOENT), which still proves the ioctl works. */
	if (procmap && ioctl(src->maps_fd, RC_PROCMAP_QUERY, &q) &&
	    (errno != ENOENT || !pid))
		err = errno;
	src->procmap = procmap && !err;
	return -err;
}

void rc_vma_source_open(struct rc_vma_source *src, enum rc_env_id disable)
{
	bool disabled = rc_env_flag(disable);
	int err = -rc_vma_source_open_pid(src, 0, !disabled);

	if (disabled)
		rc_info("PROCMAP_QUERY disabled by %s: each miss reads "
			"/proc/self/maps", rc_env_table[disable].name);
	else if (src->maps_fd < 0)
		rc_info("cannot open /proc/self/maps (%s): each miss opens it "
			"again", strerror(err));
	else if (err == ENOTTY || err == EINVAL)
		/* An ioctl the kernel does not know, or a layout it rejects. */
		rc_info("PROCMAP_QUERY unavailable (%s: Linux < 6.11): each "
			"miss reads /proc/self/maps", strerror(err));
	else if (err)
		rc_info("PROCMAP_QUERY failed (%s): each miss reads "
			"/proc/self/maps", strerror(err));
}

void rc_vma_source_close(struct rc_vma_source *src)
{
	if (src->maps_fd >= 0)
		close(src->maps_fd);
	src->maps_fd = -1;
	src->procmap = false;
}

/* Linux < 6.11: the first VMA ending above @addr in the text of the maps
 * file, read from a fresh descriptor (any thread may query at once)
 * through a stack buffer (no allocation). */
static int maps_text_query(const char *path, uintptr_t addr,
			   struct rc_procmap_query *q)
{
	char buf[4096], line[512];
	size_t len = 0;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < n; i++) {
			unsigned long long s, e, off, ino;
			unsigned maj, min;
			char perms[8];

			if (buf[i] != '\n') {
				if (len < sizeof(line) - 1)
					line[len++] = buf[i];
				continue;
			}
			line[len] = 0;
			len = 0;
			if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu", &s, &e,
				   perms, &off, &maj, &min, &ino) != 7 ||
			    e <= addr)
				continue;
			close(fd);
			q->vma_start = s;
			q->vma_end = e;
			q->vma_offset = off;
			q->dev_major = maj;
			q->dev_minor = min;
			q->inode = ino;
			q->vma_flags = perms[3] == 's' ? RC_PROCMAP_VMA_SHARED : 0;
			/* Huge pages cannot be told from the text cheaply
			 * ("KernelPageSize" is in smaps): a hugetlbfs file is
			 * named after its mount. SysV shm and memfd show an
			 * inode; shared anonymous memory "/dev/zero". */
			q->vma_page_size = strstr(line, "/hugepages") ||
						   strstr(line, "anon_hugepage")
						   ? 0
						   : (__u64)sysconf(_SC_PAGESIZE);
			return 0;
		}
	}
	close(fd);
	return n < 0 ? -errno : -ENOENT;
}

int rc_vma_query(const struct rc_vma_source *src, uintptr_t addr,
		 struct rc_procmap_query *q)
{
	memset(q, 0, sizeof(*q));
	q->size = sizeof(*q);
	q->query_flags = RC_PROCMAP_COVERING_OR_NEXT;
	q->query_addr = addr;
	if (!src->procmap)
		return maps_text_query(src->path[0] ? src->path : "/proc/self/maps",
				       addr, q);
	return ioctl(src->maps_fd, RC_PROCMAP_QUERY, q) ? -errno : 0;
}
