/* SPDX-License-Identifier: MIT */
/* UCX's ucs_rcache on a t_registrar; see bridge_ucx_rcache.h. */
#include <sys/syscall.h>

#include "bridge_ucx_rcache.h"

static ucs_status_t mem_reg(void *ctx, ucs_rcache_t *rc, void *arg,
			    ucs_rcache_region_t *r, uint16_t flags)
{
	(void)rc, (void)arg, (void)flags;
	return t_registrar_ops.reg(ctx, (void *)r->super.start,
				   r->super.end - r->super.start, 0,
				   &((struct b_ucx_region *)r)->handle) ?
		       UCS_ERR_IO_ERROR : UCS_OK;
}

static void mem_dereg(void *ctx, ucs_rcache_t *rc, ucs_rcache_region_t *r)
{
	(void)rc;
	t_registrar_ops.dereg(ctx, ((struct b_ucx_region *)r)->handle);
}

static void dump(void *ctx, ucs_rcache_t *rc, ucs_rcache_region_t *r,
		 char *buf, size_t max)
{
	(void)ctx, (void)rc, (void)r;
	if (max)
		buf[0] = 0;
}

static const ucs_rcache_ops_t ops = {
	.mem_reg = mem_reg,
	.mem_dereg = mem_dereg,
	RC_UCX_OPS_MERGE
	.dump_region = dump,
};

ucs_rcache_t *b_ucx_rcache_create(struct t_registrar *t, const char *name)
{
	size_t page __attribute__((unused)) = (size_t)sysconf(_SC_PAGESIZE);
	ucs_rcache_params_t p = {
		.region_struct_size = sizeof(struct b_ucx_region),
		RC_UCX_PARAMS_ALIGNMENT(page)
		.ucm_events = UCM_EVENT_VM_UNMAPPED,
		.ucm_event_priority = 1000,
		.ops = &ops,
		.context = t,
		.max_regions = 1024,
		.max_size = SIZE_MAX,
		.max_unreleased = SIZE_MAX,
	};
	ucs_rcache_t *rcache;

	return ucs_rcache_create(&p, name, NULL, &rcache) == UCS_OK ? rcache :
								    NULL;
}

long b_ucx_raw_unmap(ucs_rcache_t *rcache, size_t len,
		     long (*forwarded)(void), unsigned settle_us)
{
	char *buf = t_map(len);
	ucs_rcache_region_t *r;
	long before;

	memset(buf, 1, len);
	T_REQUIRE(rc_ucx_rcache_get(rcache, buf, len, 4096,
				    PROT_READ | PROT_WRITE, NULL, &r) == UCS_OK);
	ucs_rcache_region_put(rcache, r);
	usleep(settle_us);
	before = forwarded();
	T_REQUIRE(syscall(SYS_munmap, buf, len) == 0);
	return before;
}
