/* SPDX-License-Identifier: MIT */
/*
 * UCX's own registration cache (ucs_rcache from libucs, with the UCM memory
 * hooks from libucm), driven through the same struct dev as every other
 * cache in the tools, so the peer is the real thing and not an imitation.
 * Built only when libucx-dev is present (TOOLS_HAVE_UCX); otherwise every
 * call reports -ENOSYS.
 */
#ifndef TOOLS_RCACHE_UCX_H
#define TOOLS_RCACHE_UCX_H

#include <stdbool.h>
#include <stddef.h>

#include "device.h"

struct ucx_cache;

/* The UCX version linked, or NULL when the tools were built without UCX. */
const char *ucx_version(void);

/*
 * An rcache over @d holding at most @max_regions regions. @hooks: subscribe
 * to UCM_EVENT_VM_UNMAPPED | UCM_EVENT_MEM_TYPE_FREE, which makes libucm
 * install its mmap/munmap/mremap/madvise/brk/shmdt hooks (and malloc hooks)
 * in this process, as UCX's transports do. 0 or -errno.
 */
int ucx_cache_create(struct dev *d, size_t max_regions, bool hooks,
		     struct ucx_cache **out);
void ucx_cache_destroy(struct ucx_cache *c);

/* ucs_rcache_get/ucs_rcache_region_put with PROT_READ|PROT_WRITE. *handle
 * is the dev handle of the region. 0 or -errno. */
int ucx_cache_get(struct ucx_cache *c, void *addr, size_t len, void **region,
		  void **handle);
void ucx_cache_put(struct ucx_cache *c, void *region);

#endif
