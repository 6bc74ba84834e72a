/* SPDX-License-Identifier: MIT */
/*
 * The catalogue of changes: every way an application gives the pages behind
 * a cached buffer X new contents or a new owner (munmap, mremap, madvise,
 * MAP_FIXED, brk, shmdt, free, a hole punched in a file, by this process,
 * by a child, through io_uring or the i386 entry...), written once and run
 * under any oracle.
 *
 * An oracle is a registration cache and a device that can DMA into what it
 * registered: io_uring fixed buffers (changes-uring.c), an RDMA device's
 * memory regions (changes-rxe.c). Each case does
 *
 *   1. t_change_begin(): get X, DMA into it, put it, get it again (a hit
 *      where the monitor caches such memory) and hold it;
 *   2. the change, then fresh memory mapped at X where the change left a
 *      hole;
 *   3. t_change_end(): the negative control first, DMA through the held
 *      registration is NOT visible (the change really stranded the pinned
 *      pages, so the case tests something); then put, get X again: a miss,
 *      and DMA into it is visible where the application looks.
 *
 * The same catalogue under an address-keyed cache that never invalidates
 * (the oracle's "naive" mode: REGCACHE_FLAG_EXPLICIT_INVALIDATE under the
 * monitor "none") must find every stranding case stale: the oracle sees
 * what it exists to see.
 *
 * A change the kernel or the oracle's device refuses (a call newer than the
 * kernel, memory io_uring cannot register) is printed as not possible, with
 * the reason, and counts as no case.
 */
#ifndef T_CHANGES_H
#define T_CHANGES_H

#include "helpers.h"

/* A registration cache with a device behind it. */
struct t_oracle {
	const char *name;
	/* Create the cache with @flags (regcache_params.flags). */
	struct regcache *(*create)(unsigned flags);
	void (*destroy)(struct regcache *c);
	/* The access flags every get asks for. */
	unsigned access;
	/* Does DMA through @r, into [buf, buf+len), show the bytes of @seed
	 * where the application looks? */
	bool (*visible)(struct regcache_region *r, void *buf, size_t len,
			unsigned seed);
	/* Why the device cannot register such memory at all, or NULL. */
	const char *(*refuses)(void *buf, size_t len);
};

/* What kind of memory X is: whether a monitor can cache it. */
enum t_memory {
	T_ANON,		/* private anonymous: every kernel monitor caches it */
	T_SHARED,	/* shmem, SysV, memfd, tmpfs: not under userfaultfd */
	T_PRIVATE_FILE,	/* copy-on-write file pages: cached or not */
};

/* What the change must lead to. */
enum t_outcome {
	T_STRANDS,	/* the pinned pages are no longer X's: negative
			 * control, then a miss whose DMA is visible */
	T_INVALIDATES,	/* pinned pages stay coherent (MADV_FREE): no
			 * negative control; a miss except under userfaultfd,
			 * which is not told; DMA visible either way */
	T_KEEPS,	/* nothing changed X: a hit, DMA visible */
	T_UNSEEN,	/* strands, but the monitor is documented not to see
			 * it: the get after it must be stale, so that the
			 * documentation stays true */
};

struct t_change {
	struct regcache_region *held;
	char *buf;
	size_t len;
	enum t_memory mem;
	bool cached;			/* the held get was a hit */
	struct regcache_stats before;	/* after the held get */
};

void t_change_begin(struct t_change *k, char *buf, size_t len,
		    enum t_memory mem);
void t_change_end(struct t_change *k, const char *what, enum t_outcome out);

/* The kernel refused the change: no case. Lets go of X when @k holds it. */
void t_change_refused(struct t_change *k, const char *what, const char *why);

/*
 * Run the catalogue under @o; returns the exit status. Arguments:
 *
 *   [naive] [--daemon plain|restart|dead] [CASE ...]
 *
 * naive: the address-keyed cache above; every stranding case must be
 * stale. --daemon (monitor regcached, under regcached-launch): "restart"
 * kills the daemon and starts it again between caching X and changing it;
 * "dead" kills it before the change and starts it only after; afterwards
 * the process must cache again (a hit) without restarting. CASE: run only
 * these (the names are printed by --list); all by default.
 */
int t_changes_main(const struct t_oracle *o, int argc, char **argv);

#endif
