/* SPDX-License-Identifier: MIT */
/*
 * regcache: a registration cache for DMA devices that takes invalidation
 * from the kernel instead of from malloc/mmap hooks.
 *
 * Conventions for every call below:
 *  - Calls that can fail return an int: >= 0 on success, -errno on failure.
 *    Results come back through out-parameters. Nothing returns NULL+errno.
 *  - A rejected input is logged once on stderr (see REGCACHE_LOG) with what
 *    to do about it; errno is left alone.
 *  - The hit path of regcache_get()/regcache_put() takes no lock shared by
 *    threads, allocates nothing and never logs.
 *  - No call but regcache_version() is async-signal-safe: a miss takes the
 *    cache's and the registrar's locks and may allocate, so a get or put
 *    from a signal handler that interrupted one in the same thread can
 *    deadlock. Hand the work to a thread instead.
 *
 * The guarantee: when regcache_get() returns a region for [addr, addr+len),
 * the device registration behind it covers exactly the physical pages that
 * the calling thread reaches through [addr, addr+len) at that moment (unless
 * the application itself is unmapping that range concurrently). Where the
 * process-wide monitor cannot prove this for a range, the range is served
 * pass-through: registered at get, deregistered at put, and counted as
 * "uncached" in the statistics.
 */
#ifndef REGCACHE_H
#define REGCACHE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * Version
 * ---------------------------------------------------------------------- */

/**
 * REGCACHE_VERSION_MAJOR - the version of this header: major, minor, patch
 *
 * The build reads the version from these three lines, so the library,
 * regcache.pc and the CMake package carry the same one. A minor release only
 * adds calls, each in the symbol version node of its release, so a program
 * built against 0.1 runs with the library of 0.2.
 */
#define REGCACHE_VERSION_MAJOR 0
#define REGCACHE_VERSION_MINOR 2
#define REGCACHE_VERSION_PATCH 0

/**
 * REGCACHE_VERSION - the header's version as one number
 *
 * major * 10000 + minor * 100 + patch: 100 for 0.1.0, 10203 for 1.2.3.
 */
#define REGCACHE_VERSION                                                   \
	(REGCACHE_VERSION_MAJOR * 10000 + REGCACHE_VERSION_MINOR * 100 +   \
	 REGCACHE_VERSION_PATCH)

/**
 * regcache_version - the version of the library that is running
 *
 * The library loaded at run time may differ from the header the program was
 * compiled against (REGCACHE_VERSION): it may be newer, or older as long as
 * it has every call the program uses (the dynamic linker checks the symbol
 * version of each such call when the program starts). Report both, or
 * compare them before relying on behaviour that a later release changed.
 *
 * Return: the library's REGCACHE_VERSION, e.g. 100 for 0.1.0.
 * Context: any; does not block.
 */
int regcache_version(void);

/** One cache per device context (an io_uring, an ibv_pd, ...). Opaque. */
struct regcache;
/** A registered range, held by the caller between get and put. Opaque. */
struct regcache_region;

/* ------------------------------------------------------------------------
 * Registrar: how to register memory with one device
 * ---------------------------------------------------------------------- */

/**
 * struct regcache_ops - the two calls of a device
 * @reg:   register [addr, addr+len) with @access (device-specific bits) and
 *         return an opaque @handle; 0 or -errno. -ENOMEM, -ENOSPC and -EAGAIN
 *         mean "out of resources": the cache evicts idle regions and retries.
 *         Called without any cache lock held, possibly from several threads
 *         at once, so it must be thread-safe.
 * @dereg: release a handle returned by @reg. Called without cache locks,
 *         never from the monitor thread.
 *
 * addr and len passed to @reg are always page-aligned.
 */
struct regcache_ops {
	int (*reg)(void *ctx, void *addr, size_t len, unsigned access,
		   void **handle);
	void (*dereg)(void *ctx, void *handle);
};

/**
 * REGCACHE_FLAG_EXPLICIT_INVALIDATE - cache without a kernel monitor
 *
 * The caller promises to call regcache_invalidate() on a range before any
 * memory in it that was passed to regcache_get() is unmapped, remapped,
 * madvise(DONTNEED)ed or otherwise given new pages, as NCCL users must do
 * today. Regions are cached even when the monitor is "none"; the kernel
 * monitor, if present, still invalidates. Breaking the promise yields stale
 * registrations, so this is opt-in and never the default.
 */
#define REGCACHE_FLAG_EXPLICIT_INVALIDATE (1u << 0)

/**
 * REGCACHE_FLAG_NO_HIT_PROBE - skip the per-hit probe of the userfaultfd monitor
 *
 * The userfaultfd monitor learns about an munmap only after the kernel has
 * released the mmap lock, so a *second* thread can mmap the same address and
 * hit a stale region in that window. By default every hit under that monitor,
 * once the process has a second thread, pays one probe (an empty
 * UFFDIO_WRITEPROTECT, about 1.5x a getppid()) to close the window. A single-threaded program (or one
 * where no thread reuses addresses that another thread unmaps) may set this
 * flag to skip the probe. Ignored by the other monitors.
 */
#define REGCACHE_FLAG_NO_HIT_PROBE (1u << 1)

/**
 * struct regcache_params - how to build a cache
 * @ops:         the device's registrar (required for regcache_create()).
 * @ctx:         first argument of every @ops call.
 * @max_regions: idle regions beyond this count are evicted, least recently
 *               used first. 0: $REGCACHE_MAX_REGIONS, else 65536.
 * @max_bytes:   idle regions of this cache beyond this many registered
 *               bytes are evicted. 0: no limit of its own.
 *
 * Every cache of a process shares one pinned-memory budget, since the
 * kernel counts pinned pages per process (verbs) or per user (io_uring),
 * not per device: $REGCACHE_MAX_BYTES if set; else unlimited when the
 * process has CAP_IPC_LOCK or RLIMIT_MEMLOCK is infinite; else 3/4 of
 * RLIMIT_MEMLOCK. A registration that would exceed it first evicts idle
 * regions, of its own cache and then of the others.
 * @flags:       REGCACHE_FLAG_*.
 */
struct regcache_params {
	const struct regcache_ops *ops;
	void *ctx;
	size_t max_regions;
	size_t max_bytes;
	unsigned flags;
};

/**
 * struct regcache_stats - counters of one cache since its creation
 * @hits:            gets served by a cached region (approximate when two
 *                   threads hit the very same region at once).
 * @misses:          gets that registered a new cached region.
 * @uncached:        gets served pass-through (no monitor could prove safety).
 * @registrations:   calls to ops->reg that succeeded.
 * @deregistrations: calls to ops->dereg.
 * @invalidations:   regions invalidated by the monitor or regcache_invalidate().
 * @evictions:       idle regions evicted for the limits or to retry a failed
 *                   registration.
 * @merges:          cached regions absorbed into a larger one by a miss.
 * @overflows:       times the monitor's queue overflowed and every region was
 *                   invalidated.
 * @reg_failures:    calls to ops->reg that failed.
 * @regions:         regions currently registered (cached, held or pending).
 * @bytes:           bytes currently registered.
 */
struct regcache_stats {
	uint64_t hits;
	uint64_t misses;
	uint64_t uncached;
	uint64_t registrations;
	uint64_t deregistrations;
	uint64_t invalidations;
	uint64_t evictions;
	uint64_t merges;
	uint64_t overflows;
	uint64_t reg_failures;
	uint64_t regions;
	uint64_t bytes;
};

/* ------------------------------------------------------------------------
 * Cache lifetime
 * ---------------------------------------------------------------------- */

/**
 * regcache_create - create a cache for one device context
 * @params: the registrar and limits; copied, need not outlive the call.
 * @cache:  out: the new cache.
 *
 * The first cache in a process starts the process-wide monitor
 * (see regcache_monitor_name()).
 *
 * Return: 0; -EINVAL if @params, @params->ops, its reg or dereg, or @cache
 * is NULL, or flags has unknown bits; -ENOMEM.
 * Context: thread-safe. May start the monitor thread.
 */
int regcache_create(const struct regcache_params *params,
		    struct regcache **cache);

/**
 * regcache_destroy - deregister every region and free the cache
 * @cache: the cache; NULL is ignored.
 *
 * Regions still held by callers are reported in one log line and
 * deregistered anyway; their region pointers become invalid. Destroying the
 * last cache stops the monitor.
 *
 * Context: must not race with other calls on the same cache. Calls the
 * registrar.
 */
void regcache_destroy(struct regcache *cache);

/* ------------------------------------------------------------------------
 * The hot path
 * ---------------------------------------------------------------------- */

/**
 * regcache_get - get a registration that covers [addr, addr+len)
 * @cache:  the cache.
 * @addr:   start of the buffer.
 * @len:    its length, > 0.
 * @access: device access bits (IBV_ACCESS_* for verbs; ignored by io_uring).
 *          The region returned has a superset of them.
 * @region: out: the region, held until regcache_put().
 *
 * On a miss the range is widened to whole pages (and merged with overlapping
 * cached regions) and registered.
 *
 * Return: 0; -EINVAL for a NULL pointer, zero length or a range that wraps
 * around the address space; -E2BIG, at once and evicting nothing, when the
 * range (whole pages) is larger than the whole pinned-memory budget (see
 * struct regcache_params) or than 16 TiB, the most one region describes;
 * otherwise the registrar's error, e.g. -EFAULT for
 * unmapped memory or write access to read-only memory, -ENOMEM/-ENOSPC when
 * it is out of resources even after evicting every idle region.
 * Context: thread-safe. A hit takes no shared lock and does not block. A miss
 * calls the registrar without holding cache locks.
 */
int regcache_get(struct regcache *cache, const void *addr, size_t len,
		 unsigned access, struct regcache_region **region);

/**
 * regcache_put - release a region obtained from regcache_get()
 * @cache:  the cache it came from.
 * @region: the region; NULL is ignored.
 *
 * An idle region stays registered until evicted or invalidated. A region
 * invalidated while held is deregistered at its last put. Any thread may
 * put a region another thread got.
 *
 * A put of a region nobody holds (a second put), of a region already
 * deregistered, or to a cache the region does not belong to is logged and
 * ignored, and leaves every count intact. A second put while another
 * reference to the same region is still held cannot be told from a put by
 * that holder, and is not detected.
 *
 * Context: thread-safe. May call ops->dereg.
 */
void regcache_put(struct regcache *cache, struct regcache_region *region);

/** regcache_region_handle - the registrar's handle (e.g. struct ibv_mr *) */
void *regcache_region_handle(const struct regcache_region *region);
/** regcache_region_addr - start of the registered range (page-aligned) */
void *regcache_region_addr(const struct regcache_region *region);
/** regcache_region_len - length of the registered range (whole pages) */
size_t regcache_region_len(const struct regcache_region *region);

/* ------------------------------------------------------------------------
 * Control
 * ---------------------------------------------------------------------- */

/**
 * regcache_invalidate - forget every region that overlaps [addr, addr+len)
 * @cache: the cache.
 * @addr:  start of the range.
 * @len:   its length, > 0.
 *
 * For allocators and applications that are about to reuse a range. Idle
 * overlapping regions are deregistered now; held ones at their last put.
 *
 * Return: the number of regions invalidated; -EINVAL for NULL, zero length
 * or a wrapping range.
 * Context: thread-safe. Calls the registrar.
 */
int regcache_invalidate(struct regcache *cache, const void *addr, size_t len);

/**
 * regcache_flush - deregister every idle region
 * @cache: the cache; NULL is ignored.
 *
 * Held regions stay cached; registrations in flight are not cached. To
 * forget a range whatever its state, use regcache_invalidate().
 *
 * Context: thread-safe. Calls the registrar.
 */
void regcache_flush(struct regcache *cache);

/**
 * regcache_get_stats - read the counters of a cache
 * @cache: the cache.
 * @stats: out: the counters; zeroed when @cache is NULL.
 *
 * Context: thread-safe; takes the cache lock and walks the regions.
 */
void regcache_get_stats(const struct regcache *cache,
			struct regcache_stats *stats);

/**
 * regcache_monitor_name - which monitor backend this process uses
 *
 * Return: "regcached", "bpf", "userfaultfd" or "none" (never NULL). While
 * a cache exists this reads the running backend's name. With no cache, it
 * runs the selection ("$REGCACHE_MONITOR", default auto: regcached, then
 * bpf, then userfaultfd, then none) by starting the backend and stopping it again, which takes up to
 * ~50 ms for bpf; call it after regcache_create() to avoid that.
 * Context: thread-safe.
 */
const char *regcache_monitor_name(void)
#ifdef __GNUC__
	__attribute__((returns_nonnull))
#endif
	;

#ifdef __cplusplus
}
#endif

#endif /* REGCACHE_H */
