/* SPDX-License-Identifier: MIT */
/*
 * regcache/verbs.h: RDMA verbs memory regions as the registrar.
 *
 * A cache made by regcache_verbs_create() registers with ibv_reg_mr (through
 * ibv_reg_mr_iova2, with iova == address) on a miss and ibv_dereg_mr when a
 * region is evicted or invalidated. The access bits of regcache_get() are
 * IBV_ACCESS_*, and a region's handle (regcache_region_handle()) is its
 * struct ibv_mr *. See docs/verbs.md for a walk-through.
 *
 * On-demand paging. With $REGCACHE_VERBS_ODP=implicit (or the flag
 * REGCACHE_VERBS_FLAG_ODP_IMPLICIT) and a device whose odp_caps report
 * implicit ODP for RC, every get is served from one implicit ODP memory
 * region per access mask (ibv_reg_mr(pd, NULL, SIZE_MAX, ON_DEMAND | ...)):
 * nothing is pinned, nothing can go stale, so such a cache caches without a
 * kernel monitor, and a miss only prefetches the pages (ibv_advise_mr). The
 * default ("auto") is pinned registration: ODP page faults cost microseconds
 * to milliseconds, and no measurement on this project's machines shows ODP
 * faster for the cached, reused buffers a registration cache serves.
 */
#ifndef REGCACHE_VERBS_H
#define REGCACHE_VERBS_H

#include <stdint.h>

#include <infiniband/verbs.h>
#include <regcache.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Flags for regcache_params.flags, only for regcache_verbs_create(). They
 * choose the ODP mode when $REGCACHE_VERBS_ODP is unset; the environment
 * (implicit, off or auto) wins, so that an administrator can turn ODP off
 * without rebuilding the middleware.
 */
/** REGCACHE_VERBS_FLAG_ODP_IMPLICIT - serve gets from implicit ODP MRs when
 *  the device supports it (else pinned registration, with a log line) */
#define REGCACHE_VERBS_FLAG_ODP_IMPLICIT (1u << 16)
/** REGCACHE_VERBS_FLAG_ODP_OFF - always pin (the default "auto" does too) */
#define REGCACHE_VERBS_FLAG_ODP_OFF (1u << 17)

/* ------------------------------------------------------------------------
 * Cache lifetime
 * ---------------------------------------------------------------------- */

/**
 * regcache_verbs_create - a cache whose device is a protection domain
 * @pd:     the protection domain every region is registered in; must
 *          outlive the cache.
 * @params: limits and flags (REGCACHE_FLAG_* and REGCACHE_VERBS_FLAG_*);
 *          may be NULL. Its ops and ctx are ignored.
 * @cache:  out: the new cache.
 *
 * The device is queried once (ibv_query_device_ex): a max_mr smaller than
 * max_regions (or its default) becomes max_regions, a get larger than
 * max_mr_size fails with -E2BIG, and IBV_ACCESS_ON_DEMAND is refused with
 * -EOPNOTSUPP where the device reports no ODP.
 *
 * Pinned mode (the default): regions are cached only where the process-wide
 * monitor can watch them (else served pass-through), exactly as for any
 * registrar; max_bytes defaults to 3/4 of RLIMIT_MEMLOCK, which ibv_reg_mr
 * pins against.
 *
 * Implicit ODP mode: the device's odp_caps are read with
 * ibv_query_device_ex() and one implicit ODP MR is registered now for local
 * access; MRs with remote access bits are registered on first use. Regions
 * are cached whatever the monitor (an ODP registration follows the page
 * tables, so it cannot go stale), hits do not probe the monitor, and
 * max_bytes defaults to unlimited because nothing is pinned.
 *
 * Return: 0; -EINVAL for NULL @pd or @cache or unknown flag bits, or both
 * ODP flags; -ENOMEM; or an error of regcache_create().
 * Context: thread-safe. Calls the device (query, and ODP registration).
 */
int regcache_verbs_create(struct ibv_pd *pd,
			  const struct regcache_params *params,
			  struct regcache **cache);

/**
 * regcache_verbs_odp - whether a verbs cache serves gets from implicit ODP
 * @cache: a cache from regcache_verbs_create().
 *
 * Return: 1 for implicit ODP, 0 for pinned registration, -EINVAL for NULL
 * or a cache of another registrar.
 * Context: thread-safe, does not block.
 */
int regcache_verbs_odp(const struct regcache *cache);

/* ------------------------------------------------------------------------
 * Keys and scatter/gather entries
 * ---------------------------------------------------------------------- */

/**
 * regcache_region_lkey - the local key of a verbs region
 * @region: a region from a verbs cache.
 *
 * Return: the lkey for work requests that use any byte of the region;
 * 0 for NULL.
 * Context: any; reads the region only.
 */
uint32_t regcache_region_lkey(const struct regcache_region *region);

/**
 * regcache_region_rkey - the remote key of a verbs region
 * @region: a region from a verbs cache, obtained with the remote access
 *          bits the peer needs (IBV_ACCESS_REMOTE_*).
 *
 * Send the rkey with the buffer's virtual address (not the region's start):
 * regions are registered with iova == address. In implicit ODP mode the
 * rkey covers the whole address space, see docs/verbs.md.
 *
 * Return: the rkey; 0 for NULL.
 * Context: any; reads the region only.
 */
uint32_t regcache_region_rkey(const struct regcache_region *region);

/**
 * regcache_verbs_sge - fill a scatter/gather entry for any buffer
 * @cache:  a cache from regcache_verbs_create().
 * @addr:   start of the buffer.
 * @len:    its length, 1 .. UINT32_MAX (what an ibv_sge can describe).
 * @access: IBV_ACCESS_* the device needs (LOCAL_WRITE for a receive or an
 *          RDMA read target; 0 for a send source).
 * @sge:    out: addr = @addr, length = @len, lkey of the region.
 * @region: out: the region, to pass to regcache_put() once the work request
 *          that uses @sge has completed.
 *
 * The pointer-only path: regcache_get() plus regcache_region_lkey(), so a
 * caller never handles an MR. @sge is untouched on error.
 *
 * Return: 0; -EINVAL for NULL pointers, a zero length or one above
 * UINT32_MAX, or a wrapping range; otherwise regcache_get()'s error (-EFAULT
 * for unmapped or read-only memory asked for write access, -ENOMEM when
 * locked memory is exhausted even after eviction, -E2BIG beyond the
 * device's max_mr_size, -EOPNOTSUPP for access the device cannot give in
 * ODP mode, or IBV_ACCESS_ON_DEMAND on a device without ODP).
 * Context: as regcache_get(): thread-safe; a hit does not block.
 */
int regcache_verbs_sge(struct regcache *cache, const void *addr, size_t len,
		       unsigned access, struct ibv_sge *sge,
		       struct regcache_region **region);

#ifdef __cplusplus
}
#endif

#endif /* REGCACHE_VERBS_H */
