/* SPDX-License-Identifier: MIT */
/*
 * What the UCX bridge tests (bridge-ucx.c, bridge-ucx-bench.c,
 * bridge-ucx-idle.c) share: UCX's
 * real ucs_rcache (libucs 1.13 to 1.18, ucx_rcache_compat.h) whose memory domain is a t_registrar, so
 * that each UCX region holds a slot of io_uring's fixed-buffer table and
 * READ_FIXED through it shows which pages UCX has registered.
 */
#ifndef T_BRIDGE_UCX_RCACHE_H
#define T_BRIDGE_UCX_RCACHE_H

#include <ucm/api/ucm.h>

#include "ucx_rcache_compat.h"

#include "helpers.h"

/* A UCX region: UCX's header, then the t_registrar handle (slot + 1). */
struct b_ucx_region {
	ucs_rcache_region_t super;
	void *handle;
};

/*
 * Create a ucs_rcache named @name that registers through @t, subscribed to
 * UCM's VM_UNMAPPED events (as uct's IB memory domain in 1.13), page
 * aligned, with room for 1024 regions and no size limit.
 * Return: the cache, or NULL when UCX refuses (no hooks and no external
 * event source).
 */
ucs_rcache_t *b_ucx_rcache_create(struct t_registrar *t, const char *name);

/*
 * A change the bridge must forward to UCX: a fresh @len-byte buffer is
 * cached in @rcache and put; after @settle_us, in which the forwarding
 * thread forwards the mapping's own records, a raw munmap (which UCM's
 * hooks cannot see) unmaps it. Return: @forwarded() as it was just
 * before that munmap.
 */
long b_ucx_raw_unmap(ucs_rcache_t *rcache, size_t len,
		     long (*forwarded)(void), unsigned settle_us);

#endif
