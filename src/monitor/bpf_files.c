/* SPDX-License-Identifier: MIT */
/* The eBPF backend's file watching; see bpf_files.h. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "../base/log.h"
#include "bpf_files.h"
#include "../abi/rc_bpf_abi.h"

#define RC_PAGE 4096u

/* Is the filesystem of mountinfo line @line (NUL-terminated) the one with
 * superblock dev maj:min? Sets *ok to whether its type is allowed. */
static bool mountinfo_match(const char *line, bool truncated, unsigned maj,
			    unsigned min, bool *ok)
{
	static const char *const allowed[] = { "tmpfs", "ext4", "xfs",
					       "btrfs" };
	unsigned lmaj, lmin;
	const char *sep;
	size_t n;

	if (sscanf(line, "%*u %*u %u:%u", &lmaj, &lmin) != 2 || lmaj != maj ||
	    lmin != min)
		return false;
	*ok = false;
	/* Optional fields end with " - "; the type follows. A line cut by
	 * our buffer is not trusted. */
	sep = strstr(line, " - ");
	if (truncated || !sep)
		return true;
	sep += 3;
	n = strcspn(sep, " ");
	for (size_t i = 0; i < sizeof(allowed) / sizeof(*allowed); i++)
		if (strlen(allowed[i]) == n && !memcmp(sep, allowed[i], n))
			*ok = true;
	return true;
}

/* Read /proc/self/mountinfo through stack buffers (no allocation) for the
 * filesystem with superblock dev maj:min. Not found: not allowed. */
static bool mountinfo_allowed(struct rc_bpf_files *f, unsigned maj,
			      unsigned min)
{
	char buf[4096], line[4096];
	size_t len = 0;
	bool truncated = false, ok = false;
	ssize_t n;

	if (lseek(f->mountinfo_fd, 0, SEEK_SET) < 0)
		return false;
	while ((n = read(f->mountinfo_fd, buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] != '\n') {
				if (len < sizeof(line) - 1)
					line[len++] = buf[i];
				else
					truncated = true;
				continue;
			}
			line[len] = 0;
			if (mountinfo_match(line, truncated, maj, min, &ok))
				return ok;
			len = 0;
			truncated = false;
		}
	}
	return false;
}

/*
 * May pages of a mapping on filesystem dev be cached? Only where the inode
 * that PROCMAP_QUERY (or /proc/self/maps) reports is the inode whose page
 * cache holds the pages, so that the page-cache hook, keyed by that inode,
 * sees a truncate or hole punch by another process: shmem (memfd, shared
 * anonymous, SysV shm, tmpfs), ext4, xfs, btrfs. Not overlayfs (the mapping
 * names the overlay inode, the pages belong to the upper or lower one) nor
 * FUSE or network filesystems (pages can go away without a local
 * page-cache removal we hook), nor anything unknown. Answers are cached
 * per dev; the cache is dropped when the mount table changes (poll on
 * mountinfo reports it), since a dev can be reused by a new superblock
 * once the old one is unmounted. Under f->lock.
 */
static bool fs_allowed(struct rc_bpf_files *f, unsigned maj, unsigned min)
{
	__u64 dev = ((__u64)maj << 20) | min;
	struct pollfd pfd = { .fd = f->mountinfo_fd, .events = POLLPRI };
	bool ok;

	if (f->shmem_dev && dev == f->shmem_dev)
		return true;
	if (f->mountinfo_fd < 0)
		return false;
	if (poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLERR | POLLPRI)))
		f->nfs = 0;
	for (unsigned i = 0; i < f->nfs; i++)
		if (f->fs[i].dev == dev)
			return f->fs[i].ok;
	ok = mountinfo_allowed(f, maj, min);
	if (f->nfs == sizeof(f->fs) / sizeof(*f->fs))
		f->nfs = 0;
	f->fs[f->nfs].dev = dev;
	f->fs[f->nfs].ok = ok;
	f->nfs++;
	if (!ok)
		rc_debug("eBPF monitor: mappings of filesystem %u:%u are served "
			 "uncached (not tmpfs/shmem, ext4, xfs or btrfs)",
			 maj, min);
	return ok;
}

/* Learn the dev of the kernel's internal shmem mount (memfd, shared
 * anonymous memory, SysV shm), which is not in mountinfo. */
static void learn_shmem_dev(struct rc_bpf_files *f)
{
	struct stat st;
	int fd = memfd_create("regcache-shmem-probe", MFD_CLOEXEC);

	if (fd < 0)
		return;
	if (!fstat(fd, &st))
		f->shmem_dev = ((__u64)major(st.st_dev) << 20) |
			       minor(st.st_dev);
	close(fd);
}

/* Does some VMA of ours still map file @key with base @base somewhere in
 * pages [lo, hi)? Unsure (too many VMAs, a failed query): yes. */
static bool base_live(struct rc_bpf_files *f, const struct rc_bpf_file_key *key,
		      __u64 base, __u64 lo, __u64 hi)
{
	__u64 addr = base + lo * RC_PAGE, end = base + hi * RC_PAGE;

	if (f->vmas.maps_fd < 0)
		rc_vma_source_open(&f->vmas, RC_ENV_BPF_NO_PROCMAP_QUERY);
	if (end < addr)
		return true;	/* wraps: not worth deciding */
	for (int i = 0; i < 64 && addr < end; i++) {
		struct rc_procmap_query q;
		int ret = rc_vma_query(&f->vmas, addr, &q);

		if (ret == -ENOENT || (!ret && q.vma_start >= end))
			return false;
		if (ret)
			return true;
		if (q.inode == key->ino &&
		    (((__u64)q.dev_major << 20) | q.dev_minor) == key->dev &&
		    q.vma_start - q.vma_offset == base)
			return true;
		addr = q.vma_end;
	}
	return addr < end;
}

/* Keep the bases of @e that a VMA still uses. A base whose mappings are all
 * gone has no live region left (unmapping or moving a mapping invalidates
 * its regions), and a new mapping at it adds it again here, under f->lock,
 * before any region there is registered. A sticky "several" stays. */
static void prune_bases(struct rc_bpf_files *f,
			const struct rc_bpf_file_key *key, struct rc_bpf_file *e)
{
	__u32 n = 0;

	if (e->nbases > RC_BPF_FILE_BASES)
		return;
	for (__u32 i = 0; i < e->nbases; i++)
		if (base_live(f, key, e->base[i], e->pgoff_lo, e->pgoff_hi))
			e->base[n++] = e->base[i];
	e->nbases = n;
}

int rc_bpf_files_watch(struct rc_bpf_files *f, int map_fd, __u64 *nfiles_word,
		       __u32 tgid, const struct rc_procmap_query *q,
		       uintptr_t start, uintptr_t end)
{
	struct rc_bpf_file_key key = {
		.dev = ((__u64)q->dev_major << 20) | q->dev_minor,
		.ino = q->inode,
	};
	uintptr_t s = start > q->vma_start ? start : q->vma_start;
	uintptr_t e = end < q->vma_end ? end : q->vma_end;
	__u64 lo = q->vma_offset / RC_PAGE + (s - q->vma_start) / RC_PAGE;
	__u64 hi = q->vma_offset / RC_PAGE + (e - q->vma_start + RC_PAGE - 1) /
						     RC_PAGE;
	/* The address of file offset 0 in this mapping (modulo 2^64). */
	__u64 base = (__u64)q->vma_start - q->vma_offset;
	struct rc_bpf_file entry = { .tgid = tgid, .nbases = 1,
				     .pgoff_lo = lo, .pgoff_hi = hi,
				     .base = { base } };
	bool found, known_base;
	int ret = 0;

	pthread_mutex_lock(&f->lock);
	if (!fs_allowed(f, q->dev_major, q->dev_minor)) {
		ret = -EOPNOTSUPP;
		goto out;
	}
	found = bpf_map_lookup_elem(map_fd, &key, &entry) == 0;
	if (found) {
		/* nbases above RC_BPF_FILE_BASES (sticky): mapped in more
		 * places than recorded, every removal is "everything". */
		known_base = entry.nbases > RC_BPF_FILE_BASES;
		for (__u32 i = 0; i < entry.nbases && i < RC_BPF_FILE_BASES; i++)
			known_base |= entry.base[i] == base;
		if (entry.pgoff_lo <= lo && entry.pgoff_hi >= hi && known_base)
			goto out;
		entry.pgoff_lo = entry.pgoff_lo < lo ? entry.pgoff_lo : lo;
		entry.pgoff_hi = entry.pgoff_hi > hi ? entry.pgoff_hi : hi;
		if (!known_base) {
			if (entry.nbases == RC_BPF_FILE_BASES)
				prune_bases(f, &key, &entry);
			if (entry.nbases < RC_BPF_FILE_BASES)
				entry.base[entry.nbases] = base;
			entry.nbases++;
		}
	}
	if (bpf_map_update_elem(map_fd, &key, &entry, BPF_ANY)) {
		ret = -errno;
		rc_info("cannot watch file %u:%u/%llu (%s): served uncached",
			q->dev_major, q->dev_minor, (unsigned long long)q->inode,
			strerror(-ret));
		goto out;
	}
	if (!found) {
		f->nfiles++;
		/* After the entry exists: the page-cache hook tests nfiles
		 * first. */
		__atomic_store_n(nfiles_word, f->nfiles, __ATOMIC_RELEASE);
	}
out:
	pthread_mutex_unlock(&f->lock);
	return ret;
}

const char *rc_bpf_files_open(struct rc_bpf_files *f)
{
	f->mountinfo_fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	learn_shmem_dev(f);
	if (f->mountinfo_fd < 0)
		return "cannot read /proc/self/mountinfo";
	if (!f->shmem_dev)
		return "cannot learn the shmem device (memfd_create)";
	return NULL;
}

void rc_bpf_files_close(struct rc_bpf_files *f)
{
	if (f->mountinfo_fd >= 0)
		close(f->mountinfo_fd);
	f->mountinfo_fd = -1;
	f->shmem_dev = 0;
	rc_vma_source_close(&f->vmas);
	f->nfs = 0;
	f->nfiles = 0;
}
