/* SPDX-License-Identifier: MIT */
/*
 * Pointer-only io_uring helpers: get the region behind any buffer and
 * prepare a READ_FIXED/WRITE_FIXED SQE with its fixed-buffer index, so that
 * a caller who thinks in plain pointers never sees a buffer index.
 */
#include <errno.h>
#include <liburing.h>

#include <regcache/uring.h>

#include "../base/log.h"

static int prep_fixed(struct regcache *cache, struct io_uring_sqe *sqe,
		      bool write, int fd, const void *buf, unsigned nbytes,
		      uint64_t offset, struct regcache_region **region)
{
	struct regcache_region *r;
	int ret;

	if (!cache || !sqe || !buf || !nbytes || !region) {
		rc_warn("regcache_uring_prep_%s_fixed(cache=%p, sqe=%p, "
			"buf=%p, nbytes=%u, region=%p): pass a cache, an SQE, "
			"a buffer, a non-zero length and a region pointer",
			write ? "write" : "read", (void *)cache, (void *)sqe,
			buf, nbytes, (void *)region);
		return -EINVAL;
	}
	/* io_uring ignores access bits: fixed buffers are read-write. */
	ret = regcache_get(cache, buf, nbytes, 0, &r);
	if (ret)
		return ret;
	/* The buffer lies inside the region, so the kernel's check that
	 * [buf, buf+nbytes) is within the fixed buffer always passes. */
	if (write)
		io_uring_prep_write_fixed(sqe, fd, buf, nbytes, offset,
					  regcache_region_buf_index(r));
	else
		io_uring_prep_read_fixed(sqe, fd, (void *)buf, nbytes, offset,
					 regcache_region_buf_index(r));
	*region = r;
	return 0;
}

int regcache_uring_prep_read_fixed(struct regcache *cache,
				   struct io_uring_sqe *sqe, int fd, void *buf,
				   unsigned nbytes, uint64_t offset,
				   struct regcache_region **region)
{
	return prep_fixed(cache, sqe, false, fd, buf, nbytes, offset, region);
}

int regcache_uring_prep_write_fixed(struct regcache *cache,
				    struct io_uring_sqe *sqe, int fd,
				    const void *buf, unsigned nbytes,
				    uint64_t offset,
				    struct regcache_region **region)
{
	return prep_fixed(cache, sqe, true, fd, buf, nbytes, offset, region);
}
