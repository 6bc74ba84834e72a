/* SPDX-License-Identifier: MIT */
/*
 * Looking up the VMA behind an address, for the backends' ->watch():
 * PROCMAP_QUERY on /proc/self/maps (Linux 6.11+, ~0.5 us), else the text of
 * /proc/self/maps read through a stack buffer. Never allocates.
 */
#ifndef RC_MONITOR_VMA_H
#define RC_MONITOR_VMA_H

#include <linux/types.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "../base/compat.h"
#include "../base/env.h"

/* PROCMAP_QUERY is not in Debian 12's headers: the kernel's layout. */
struct rc_procmap_query {
	__u64 size;
	__u64 query_flags;
	__u64 query_addr;
	__u64 vma_start;
	__u64 vma_end;
	__u64 vma_flags;
	__u64 vma_page_size;
	__u64 vma_offset;
	__u64 inode;
	__u32 dev_major;
	__u32 dev_minor;
	__u32 vma_name_size;
	__u32 build_id_size;
	__u64 vma_name_addr;
	__u64 build_id_addr;
};
#define RC_PROCMAP_QUERY _IOWR('f', 17, struct rc_procmap_query)
#define RC_PROCMAP_COVERING_OR_NEXT 0x10
#define RC_PROCMAP_VMA_SHARED 8

/**
 * struct rc_vma_source - where a backend looks VMAs up
 * @maps_fd: the maps file, or -1.
 * @procmap: PROCMAP_QUERY works on it (and was not disabled).
 * @pid:     whose maps (0: this process).
 * @path:    the maps file's path, which the text fallback opens per query.
 */
struct rc_vma_source {
	int maps_fd;
	bool procmap;
	pid_t pid;
	char path[32];
};

/* Open /proc/self/maps and probe PROCMAP_QUERY; the flag @disable set
 * forces the text fallback (for tests). Logs the fallback at info level. */
rc_hidden void rc_vma_source_open(struct rc_vma_source *src,
				  enum rc_env_id disable);
/* The same for process @pid (0: this one), without a log line (the node
 * service reads its clients' maps). @procmap false forces the text.
 * Returns 0, or the -errno of the open or of the PROCMAP_QUERY probe (the
 * source then reads the text). */
rc_hidden int rc_vma_source_open_pid(struct rc_vma_source *src, pid_t pid,
				     bool procmap);
rc_hidden void rc_vma_source_close(struct rc_vma_source *src);

/*
 * The VMA containing @addr, or the first one above it. Fills vma_start,
 * vma_end, vma_flags (RC_PROCMAP_VMA_SHARED), vma_page_size (0 for huge
 * pages in the text fallback), vma_offset, inode, dev_major and dev_minor.
 * 0, -ENOENT when no VMA lies at or above @addr, or -errno.
 */
rc_hidden int rc_vma_query(const struct rc_vma_source *src, uintptr_t addr,
			   struct rc_procmap_query *q);

#endif /* RC_MONITOR_VMA_H */
