/* SPDX-License-Identifier: MIT */
/* regcache-demo: the caches under test behind one interface (see demo.h). */
#include <errno.h>
#include <stdlib.h>

#include <regcache.h>
#ifdef DEMO_HAVE_VERBS
#include <infiniband/verbs.h>
#else
#define IBV_ACCESS_REMOTE_WRITE 0
#endif

#include "demo.h"
#include "rcache_ucx.h"

static struct regcache *rc;

double demo_phase_ns[P_NPHASES];

int demo_dev_reg(void *addr, size_t len, void **handle)
{
	double t = demo_opt.profile ? now_ns() : 0;
	int ret = demo_opt.verbs ? demo_verbs_reg(addr, len, handle)
				 : dev_reg(&demo_dev, addr, len, handle);

	if (demo_opt.profile)
		demo_phase_ns[P_REG] += now_ns() - t;
	return ret;
}

void demo_dev_dereg(void *handle)
{
	double t = demo_opt.profile ? now_ns() : 0;

	if (demo_opt.verbs)
		demo_verbs_dereg(handle);
	else
		dev_dereg(&demo_dev, handle);
	if (demo_opt.profile)
		demo_phase_ns[P_DEREG] += now_ns() - t;
}

static int timed_reg(void *ctx, void *addr, size_t len, unsigned access,
		     void **handle)
{
	(void)ctx;
	(void)access;
	return demo_dev_reg(addr, len, handle);
}

static void timed_dereg(void *ctx, void *handle)
{
	(void)ctx;
	demo_dev_dereg(handle);
}

/* regcache's registrar with --profile: dev_regcache_ops, timed. */
static const struct regcache_ops timed_ops = {
	.reg = timed_reg,
	.dereg = timed_dereg,
};
static struct ucx_cache *ucx;

/* The naive cache: a hash map from buffer address to registration with
 * LRU eviction at --max-regions, as an application writes one without
 * hooks. It hits whenever the address and a long enough length match. */
struct naive_ent {
	uintptr_t addr;
	size_t len;
	void *handle;
	struct naive_ent *chain;	/* next in the bucket */
	struct naive_ent *newer, *older;	/* LRU list */
};
static struct naive_ent **naive;
static struct naive_ent *naive_newest, *naive_oldest;
static size_t naive_mask, naive_count;

static struct naive_ent **naive_bucket(uintptr_t addr)
{
	return &naive[((uint64_t)addr * 0x9e3779b97f4a7c15ull >> 32) &
		      naive_mask];
}

static void naive_lru_unlink(struct naive_ent *e)
{
	if (e->newer)
		e->newer->older = e->older;
	else
		naive_newest = e->older;
	if (e->older)
		e->older->newer = e->newer;
	else
		naive_oldest = e->newer;
}

static void naive_lru_push(struct naive_ent *e)
{
	e->newer = NULL;
	e->older = naive_newest;
	if (naive_newest)
		naive_newest->newer = e;
	naive_newest = e;
	if (!naive_oldest)
		naive_oldest = e;
}

static void naive_remove(struct naive_ent *e)
{
	struct naive_ent **pp;

	for (pp = naive_bucket(e->addr); *pp != e; pp = &(*pp)->chain)
		;
	*pp = e->chain;
	naive_lru_unlink(e);
	if (e->handle)
		demo_dev_dereg(e->handle);
	free(e);
	naive_count--;
}

static void naive_evict_oldest(void)
{
	naive_remove(naive_oldest);
}

static int naive_get(void *addr, size_t len, void **handle);

static void page_range(void *addr, size_t len, void **start, size_t *plen)
{
	uintptr_t s = (uintptr_t)addr & ~demo_page_mask;
	uintptr_t e = ((uintptr_t)addr + len + demo_page_mask) & ~demo_page_mask;

	*start = (void *)s;
	*plen = e - s;
}

static int naive_get(void *addr, size_t len, void **handle)
{
	struct naive_ent *e, **head = naive_bucket((uintptr_t)addr);
	void *s;
	size_t l;
	int ret;

	for (e = *head; e && e->addr != (uintptr_t)addr; e = e->chain)
		;
	if (e && e->len >= len) {
		naive_lru_unlink(e);
		naive_lru_push(e);
		*handle = e->handle;
		return 0;
	}
	page_range(addr, len, &s, &l);
	if (e) {
		/* Longer than what was registered: register again. */
		demo_dev_dereg(e->handle);
		ret = demo_dev_reg(s, l, &e->handle);
		if (ret) {
			e->handle = NULL;
			naive_remove(e);
			return ret;
		}
		e->len = len;
		naive_lru_unlink(e);
		naive_lru_push(e);
		*handle = e->handle;
		return 0;
	}
	if (naive_count >= demo_opt.max_regions)
		naive_evict_oldest();
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	ret = demo_dev_reg(s, l, &e->handle);
	if (ret) {
		free(e);
		return ret;
	}
	e->addr = (uintptr_t)addr;
	e->len = len;
	e->chain = *head;
	*head = e;
	naive_lru_push(e);
	naive_count++;
	*handle = e->handle;
	return 0;
}

/* Get a registration for the buffer [addr, addr+len). */
int demo_cache_get(void *addr, size_t len, void **region, void **handle)
{
	void *s;
	size_t l;
	int ret;

	switch (demo_cur->kind) {
	case K_NOCACHE:
		page_range(addr, len, &s, &l);
		ret = demo_dev_reg(s, l, handle);
		*region = *handle;
		return ret;
	case K_NAIVE:
		ret = naive_get(addr, len, handle);
		*region = *handle;
		return ret;
	case K_UCX:
		return ucx_cache_get(ucx, addr, len, region, handle);
	case K_REGCACHE:
		ret = regcache_get(rc, addr, len,
				   demo_opt.verbs ? IBV_ACCESS_REMOTE_WRITE : 0,
				   (struct regcache_region **)region);
		if (!ret)
			*handle = regcache_region_handle(*region);
		return ret;
	default:
		return demo_bridge_get(addr, len, region, handle);
	}
}

void demo_cache_put(void *region)
{
	switch (demo_cur->kind) {
	case K_NOCACHE:
		demo_dev_dereg(region);
		break;
	case K_NAIVE:
		break;
	case K_UCX:
		ucx_cache_put(ucx, region);
		break;
	case K_REGCACHE:
		regcache_put(rc, region);
		break;
	default:
		demo_bridge_put(region);
	}
}

int demo_cache_setup(void)
{
	struct regcache_params p = {
		.ops = demo_opt.profile ? &timed_ops : &dev_regcache_ops,
		.ctx = &demo_dev,
		.max_regions = demo_opt.max_regions,
		.max_bytes = (size_t)2 << 30,
	};

	switch (demo_cur->kind) {
	case K_NOCACHE:
		return 0;
	case K_NAIVE:
		naive_mask = 1;
		while (naive_mask < demo_opt.max_regions * 2)
			naive_mask <<= 1;
		naive = calloc(naive_mask, sizeof(*naive));
		naive_mask--;
		return naive ? 0 : -ENOMEM;
	case K_UCX:
		return ucx_cache_create(&demo_dev, demo_opt.max_regions, true, &ucx);
	case K_REGCACHE:
		/* --verbs: the shipped registrar, ibv_reg_mr in the cache's
		 * own calls. */
		if (demo_opt.verbs)
			return demo_verbs_cache(&p, &rc);
		return regcache_create(&p, &rc);
	default:
		return demo_bridge_setup();
	}
}

void demo_cache_teardown(struct result *res)
{
	switch (demo_cur->kind) {
	case K_NOCACHE:
		break;
	case K_NAIVE:
		while (naive_oldest)
			naive_evict_oldest();
		free(naive);
		break;
	case K_UCX:
		ucx_cache_destroy(ucx);
		break;
	case K_REGCACHE:
		regcache_get_stats(rc, &res->st);
		regcache_destroy(rc);
		break;
	default:
		demo_bridge_teardown();
	}
}
