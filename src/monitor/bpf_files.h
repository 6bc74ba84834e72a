/* SPDX-License-Identifier: MIT */
/*
 * The eBPF backend's policy for file and shared mappings: which
 * filesystems may be cached, and the `files` map that tells the page-cache
 * hook which inodes (and page offsets) a watched range maps. See
 * docs/monitor-bpf.md, "Shared and file mappings".
 */
#ifndef RC_MONITOR_BPF_FILES_H
#define RC_MONITOR_BPF_FILES_H

#include <linux/types.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "../base/compat.h"
#include "../kernel/vma.h"

/**
 * struct rc_bpf_files - the watched files of one process
 * @lock:         serialises rc_bpf_files_watch() and the filesystem cache;
 *                the backend holds it across fork (see bpf.c).
 * @mountinfo_fd: /proc/self/mountinfo, or -1 (then only shmem is allowed).
 * @shmem_dev:    dev of the kernel's internal shmem mount (memfd, shared
 *                anonymous memory, SysV shm), which mountinfo does not
 *                list; 0 when unknown.
 * @nfiles:       entries this process added to the files map; published
 *                to the programs' nfiles word after each new entry.
 * @vmas:         VMA lookups for pruning an entry's mapping bases; opened
 *                at the first prune.
 * @nfs:          valid entries of @fs.
 * @fs:           cached answers of "may this filesystem be cached", by
 *                superblock dev; dropped when the mount table changes.
 *
 * Invariant: nfiles == entries of the files map whose tgid is ours.
 */
struct rc_bpf_files {
	pthread_mutex_t lock;
	int mountinfo_fd;
	__u64 shmem_dev;
	uint64_t nfiles;
	struct rc_vma_source vmas;	/* for pruning bases, opened lazily */
	unsigned nfs;
	struct {
		__u64 dev;
		bool ok;
	} fs[32];
};

#define RC_BPF_FILES_INIT \
	{ .lock = PTHREAD_MUTEX_INITIALIZER, .mountinfo_fd = -1,	\
	  .vmas = { .maps_fd = -1 } }

/**
 * rc_bpf_files_open - prepare to watch files
 * @f: zero or RC_BPF_FILES_INIT state.
 *
 * Opens /proc/self/mountinfo and learns the shmem dev.
 *
 * Return: NULL, or why some shared and file mappings will be served
 * uncached (for the caller's log line).
 */
rc_hidden const char *rc_bpf_files_open(struct rc_bpf_files *f);

/** rc_bpf_files_close - forget everything; @f can be opened again */
rc_hidden void rc_bpf_files_close(struct rc_bpf_files *f);

/**
 * rc_bpf_files_watch - watch the file behind a shared file VMA
 * @f:           the state.
 * @map_fd:      the programs' files map.
 * @nfiles_word: the programs' nfiles counter (their cheap first test).
 * @tgid:        our global tgid, as the programs see it.
 * @q:           the VMA (has an inode).
 * @start:       first byte of the watched range.
 * @end:         one past its last byte.
 *
 * Adds (or widens) the entry for the VMA's inode so that any page of
 * [@start, @end) leaving the page cache, by any process, invalidates this
 * process, and records the VMA's base (the address of file offset 0) so
 * that the programs can tell which of our addresses the page had
 * (rc_bpf_abi.h, struct rc_bpf_file). Entries live until
 * rc_bpf_files_close(): a stale one only costs a spurious invalidation.
 *
 * Return: 0; -EOPNOTSUPP when the filesystem's page-cache inode may not be
 * the one the VMA names (overlayfs, FUSE, network filesystems, unknown);
 * -errno when the map update failed. Takes @f->lock.
 */
rc_hidden int rc_bpf_files_watch(struct rc_bpf_files *f, int map_fd,
				 __u64 *nfiles_word, __u32 tgid,
				 const struct rc_procmap_query *q,
				 uintptr_t start, uintptr_t end);

#endif /* RC_MONITOR_BPF_FILES_H */
