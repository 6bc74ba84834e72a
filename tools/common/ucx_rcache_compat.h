/* SPDX-License-Identifier: MIT */
/*
 * UCX's ucs_rcache across the versions Debian packages (1.13 in Debian 12,
 * 1.18 in Debian 13), taken from the installed headers: UCX 1.14 moved the
 * region alignment from ucs_rcache_params_t to an argument of
 * ucs_rcache_get(), and added the ops' merge callback, which it requires
 * (so ops are written with designated initialisers). The tools and the bridge tests include
 * this instead of spelling either layout.
 */
#ifndef RC_UCX_RCACHE_COMPAT_H
#define RC_UCX_RCACHE_COMPAT_H

#include <ucp/api/ucp_version.h>
#include <ucs/memory/rcache.h>

#if UCP_API_VERSION >= UCP_VERSION(1, 14)
/* UCX >= 1.14 calls ops->merge for every region a new one absorbs, without
 * checking for NULL; a region that holds only a device handle has nothing
 * to carry over. */
static inline void rc_ucx_merge_nothing(void *context, ucs_rcache_t *rcache,
					void *arg, ucs_rcache_region_t *region)
{
	(void)context, (void)rcache, (void)arg, (void)region;
}
/* The ops field for it, in a designated initialiser. */
#define RC_UCX_OPS_MERGE .merge = rc_ucx_merge_nothing,
/* Fields of ucs_rcache_params_t for a cache aligned to @page. */
#define RC_UCX_PARAMS_ALIGNMENT(page)
#define rc_ucx_rcache_get(rcache, addr, len, page, prot, arg, region)        \
	ucs_rcache_get(rcache, addr, len, page, prot, arg, region)
typedef ucs_status_t rc_ucx_rcache_get_fn(ucs_rcache_t *, void *, size_t,
					  size_t, int, void *,
					  ucs_rcache_region_t **);
#define RC_UCX_CALL_GET(fn, rcache, addr, len, page, prot, arg, region)      \
	fn(rcache, addr, len, page, prot, arg, region)
#else
#define RC_UCX_OPS_MERGE
#define RC_UCX_PARAMS_ALIGNMENT(page) .alignment = (page), .max_alignment = (page),
#define rc_ucx_rcache_get(rcache, addr, len, page, prot, arg, region)        \
	ucs_rcache_get(rcache, addr, len, prot, arg, region)
typedef ucs_status_t rc_ucx_rcache_get_fn(ucs_rcache_t *, void *, size_t, int,
					  void *, ucs_rcache_region_t **);
#define RC_UCX_CALL_GET(fn, rcache, addr, len, page, prot, arg, region)      \
	fn(rcache, addr, len, prot, arg, region)
#endif

/* "1.18.1": the library's own version, not the headers'. */
#define RC_UCX_API_MINOR UCP_API_MINOR

#endif
