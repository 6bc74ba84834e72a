/* SPDX-License-Identifier: MIT */
/*
 * regcache/uring.h: io_uring fixed buffers as the registrar.
 *
 * io_uring fixed buffers pin pages exactly like ibv_reg_mr() does, and
 * IORING_OP_READ_FIXED/WRITE_FIXED DMA through the pinned pages, so this
 * registrar is both a real device for storage/network engines and the one
 * every regcache test uses to prove staleness with data.
 */
#ifndef REGCACHE_URING_H
#define REGCACHE_URING_H

#include <regcache.h>

#ifdef __cplusplus
extern "C" {
#endif

struct io_uring;

/**
 * regcache_uring_create - a cache whose device is a ring's fixed-buffer table
 * @ring:   the ring; must outlive the cache.
 * @params: limits and flags; may be NULL. Its ops and ctx are ignored.
 * @cache:  out: the new cache.
 *
 * Registers a fixed-buffer table of 16384 empty slots on @ring, which must
 * not have one yet (sparse from Linux 5.19; before, from 5.13, as 16384
 * empty iovecs); the cache then owns every slot. A region's slot is
 * released by updating it to an empty iovec. max_regions is capped at the
 * number of slots.
 *
 * Some kernels (6.1; not 6.18) count a released buffer against
 * RLIMIT_MEMLOCK for about a second more. A registration that then meets
 * -ENOMEM while the process's VmPin shows more pinned than its io_uring
 * caches hold waits for that release, polling, at most 10 s after the
 * process's last one; a process that pins memory by other means (its own
 * fixed buffers or MRs) can wait that long at a real limit. Where the
 * first release lowers VmPin at once, -ENOMEM is returned at once.
 *
 * Return: 0; -EINVAL for NULL @ring or @cache; -EBUSY if @ring already has a
 * fixed-buffer table (create the cache first, or use
 * regcache_uring_create_slots()); or the kernel's error registering the
 * table (-EINVAL, then -EFAULT, before 5.13).
 * Context: thread-safe with respect to other rings.
 */
int regcache_uring_create(struct io_uring *ring,
			  const struct regcache_params *params,
			  struct regcache **cache);

/**
 * regcache_uring_create_slots - a cache using part of an existing table
 * @ring:   the ring; must outlive the cache.
 * @first:  first slot the cache may use.
 * @count:  number of slots, starting at @first, that are empty (sparse) and
 *          that the application will not touch while the cache exists.
 * @params: as for regcache_uring_create().
 * @cache:  out: the new cache.
 *
 * For applications that register their own fixed buffers too: register a
 * sparse table large enough for both, then hand a slice to the cache.
 *
 * Return: 0; -EINVAL for NULL pointers, @count of 0, or a slice beyond 16384.
 */
int regcache_uring_create_slots(struct io_uring *ring, unsigned first,
				unsigned count,
				const struct regcache_params *params,
				struct regcache **cache);

/**
 * regcache_region_buf_index - the fixed-buffer index of a region
 * @region: a region from a cache made by regcache_uring_create*().
 *
 * Return: the index to pass to io_uring_prep_read_fixed()/write_fixed();
 * -EINVAL for NULL.
 */
int regcache_region_buf_index(const struct regcache_region *region);

/* ------------------------------------------------------------------------
 * Pointer-only helpers: prepare fixed-buffer I/O for any buffer
 * ---------------------------------------------------------------------- */

struct io_uring_sqe;

/**
 * regcache_uring_prep_read_fixed - io_uring_prep_read_fixed() for any buffer
 * @cache:  a cache from regcache_uring_create*() on the ring @sqe is from.
 * @sqe:    an SQE from io_uring_get_sqe().
 * @fd:     file to read from.
 * @buf:    where the data goes: any buffer, registered or not.
 * @nbytes: bytes to read, > 0.
 * @offset: file offset, as for io_uring_prep_read_fixed().
 * @region: out: the region behind @buf. Hold it until the completion of
 *          this request has been reaped, then pass it to regcache_put()
 *          (io_uring_sqe_set_data(sqe, region) is a handy place for it).
 *
 * Gets a region covering [@buf, @buf+@nbytes) (a hit costs nanoseconds, a
 * miss registers it) and prepares @sqe with its fixed-buffer index. The
 * caller never handles a buffer index. user_data and flags of @sqe are left
 * to the caller.
 *
 * Return: 0; -EINVAL for NULL pointers or zero @nbytes; otherwise
 * regcache_get()'s error (-EFAULT for unmapped memory, -ENOSPC when every
 * fixed-buffer slot is held). On error @sqe is untouched: prepare something
 * else in it (io_uring_prep_nop()) before submitting.
 * Context: as regcache_get(): thread-safe; a hit does not block. The SQE
 * itself belongs to the caller's thread, as in liburing.
 */
int regcache_uring_prep_read_fixed(struct regcache *cache,
				   struct io_uring_sqe *sqe, int fd, void *buf,
				   unsigned nbytes, uint64_t offset,
				   struct regcache_region **region);

/**
 * regcache_uring_prep_write_fixed - io_uring_prep_write_fixed() for any buffer
 * @cache:  a cache from regcache_uring_create*() on the ring @sqe is from.
 * @sqe:    an SQE from io_uring_get_sqe().
 * @fd:     file to write to.
 * @buf:    where the data comes from: any buffer, registered or not.
 * @nbytes: bytes to write, > 0.
 * @offset: file offset, as for io_uring_prep_write_fixed().
 * @region: out: the region to regcache_put() once the completion is reaped.
 *
 * As regcache_uring_prep_read_fixed(), for the other direction.
 *
 * Return: as regcache_uring_prep_read_fixed().
 * Context: as regcache_uring_prep_read_fixed().
 */
int regcache_uring_prep_write_fixed(struct regcache *cache,
				    struct io_uring_sqe *sqe, int fd,
				    const void *buf, unsigned nbytes,
				    uint64_t offset,
				    struct regcache_region **region);

#ifdef __cplusplus
}
#endif

#endif /* REGCACHE_URING_H */
