/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "rcache_ucx.h"

#ifndef TOOLS_HAVE_UCX

const char *ucx_version(void)
{
	return NULL;
}

int ucx_cache_create(struct dev *d, size_t max_regions, bool hooks,
		     struct ucx_cache **out)
{
	(void)d, (void)max_regions, (void)hooks, (void)out;
	return -ENOSYS;
}

void ucx_cache_destroy(struct ucx_cache *c)
{
	(void)c;
}

int ucx_cache_get(struct ucx_cache *c, void *addr, size_t len, void **region,
		  void **handle)
{
	(void)c, (void)addr, (void)len, (void)region, (void)handle;
	return -ENOSYS;
}

void ucx_cache_put(struct ucx_cache *c, void *region)
{
	(void)c, (void)region;
}

#else

#include <sys/mman.h>
#include <ucm/api/ucm.h>
#include "ucx_rcache_compat.h"

#define STR_(x) #x
#define STR(x) STR_(x)

struct ucx_cache {
	ucs_rcache_t *rcache;
	struct dev *dev;
	size_t page;	/* the regions' alignment */
};

/* What a transport keeps in its region: here, the device handle. */
struct ucx_region {
	ucs_rcache_region_t super;
	void *handle;
};

const char *ucx_version(void)
{
	return STR(TOOLS_UCX_VERSION);
}

/* Called by ucs_rcache under its page-table write lock, like uct_ib_md. */
static ucs_status_t ucx_mem_reg(void *ctx, ucs_rcache_t *rcache, void *arg,
				ucs_rcache_region_t *r, uint16_t flags)
{
	struct ucx_region *ur = (struct ucx_region *)r;
	struct dev *d = ctx;

	(void)rcache, (void)arg, (void)flags;
	return dev_reg(d, (void *)r->super.start, r->super.end - r->super.start,
		       &ur->handle) ? UCS_ERR_IO_ERROR : UCS_OK;
}

static void ucx_mem_dereg(void *ctx, ucs_rcache_t *rcache,
			  ucs_rcache_region_t *r)
{
	(void)rcache;
	dev_dereg(ctx, ((struct ucx_region *)r)->handle);
}

static void ucx_dump(void *ctx, ucs_rcache_t *rcache, ucs_rcache_region_t *r,
		     char *buf, size_t max)
{
	(void)ctx, (void)rcache, (void)r;
	if (max)
		buf[0] = 0;
}

static const ucs_rcache_ops_t ucx_ops = {
	.mem_reg = ucx_mem_reg,
	.mem_dereg = ucx_mem_dereg,
	RC_UCX_OPS_MERGE
	.dump_region = ucx_dump,
};

int ucx_cache_create(struct dev *d, size_t max_regions, bool hooks,
		     struct ucx_cache **out)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	ucs_rcache_params_t p = {
		.region_struct_size = sizeof(struct ucx_region),
		RC_UCX_PARAMS_ALIGNMENT(page)
		/* What uct's IB and CMA transports ask for in 1.13 (the
		 * MEM_TYPE event matters for GPU memory only). */
		.ucm_events = hooks ? UCM_EVENT_VM_UNMAPPED |
					      UCM_EVENT_MEM_TYPE_FREE
				    : 0,
		.ucm_event_priority = 1000,	/* UCX_RCACHE_EVENT_PRIO */
		.ops = &ucx_ops,
		.context = d,
		.flags = 0,
		.max_regions = max_regions,
		.max_size = SIZE_MAX,
		.max_unreleased = 512ul << 20,	/* UCX_RCACHE_MAX_UNRELEASED */
	};
	struct ucx_cache *c = calloc(1, sizeof(*c));
	ucs_status_t st;

	if (!c)
		return -ENOMEM;
	c->dev = d;
	c->page = page;
	/* ucs_rcache_create installs the UCM hooks through
	 * ucm_set_event_handler(); libucs' constructor has already passed
	 * UCX_MEM_* options to libucm. If the hooks fail their self-test,
	 * creation fails, as it does in UCX. */
	st = ucs_rcache_create(&p, "regcache-tools", NULL, &c->rcache);
	if (st != UCS_OK) {
		free(c);
		return -EIO;
	}
	*out = c;
	return 0;
}

void ucx_cache_destroy(struct ucx_cache *c)
{
	if (!c)
		return;
	ucs_rcache_destroy(c->rcache);
	free(c);
}

int ucx_cache_get(struct ucx_cache *c, void *addr, size_t len, void **region,
		  void **handle)
{
	ucs_rcache_region_t *r;
	ucs_status_t st;

	st = rc_ucx_rcache_get(c->rcache, addr, len, c->page,
			       PROT_READ | PROT_WRITE, NULL, &r);
	if (st != UCS_OK)
		return -EIO;
	*region = r;
	*handle = ((struct ucx_region *)r)->handle;
	return 0;
}

void ucx_cache_put(struct ucx_cache *c, void *region)
{
	ucs_rcache_region_put(c->rcache, region);
}

#endif
