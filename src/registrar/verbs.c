/* SPDX-License-Identifier: MIT */
/*
 * The RDMA verbs registrar: a region is a struct ibv_mr.
 *
 * Pinned mode registers each region with ibv_reg_mr_iova2 (iova == address,
 * so work requests use plain virtual addresses) and deregisters it with
 * ibv_dereg_mr. Implicit ODP mode hands out one implicit on-demand-paging
 * MR per access mask for every region and only prefetches on a miss.
 *
 * This file is the only place where verbs' conventions (NULL + errno from
 * the reg calls, positive errno from dereg and advise) become -errno: they
 * are converted once, at the boundary.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <regcache/verbs.h>

#include "../cache_registrar.h"
#include "../region.h"
#include "../base/env.h"
#include "../base/log.h"

/* Access bits that select one implicit ODP MR (LOCAL_WRITE is always among
 * them, see odp_reg(): 8 MRs at most). */
#define RC_VERBS_ODP_KEY_BITS                                                \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |                  \
	 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)
/* Bits an implicit ODP MR may ignore: hints, and ON_DEMAND itself. */
#define RC_VERBS_ODP_IGNORED                                                 \
	(IBV_ACCESS_ON_DEMAND | IBV_ACCESS_HUGETLB |                         \
	 IBV_ACCESS_RELAXED_ORDERING)
/* RC transport operations implicit ODP must support before we use it. */
#define RC_VERBS_ODP_RC_NEEDED                                               \
	(IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |                       \
	 IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ)
/* An ibv_sge describes at most 4 GiB; prefetch in 1 GiB pieces, a few per
 * ibv_advise_mr call. */
#define RC_VERBS_PREFETCH_CHUNK ((size_t)1 << 30)
#define RC_VERBS_PREFETCH_SGES 8
/* regcache_create()'s max_regions without params or environment (cache.c);
 * a device with a smaller MR table lowers it to its max_mr. */
#define RC_VERBS_DEFAULT_MAX_REGIONS 65536

enum rc_verbs_mode { RC_ODP_AUTO, RC_ODP_OFF, RC_ODP_IMPLICIT };

struct rc_verbs {
	struct ibv_pd *pd;
	pid_t pid;			/* the process whose pd this is */
	bool odp;			/* implicit ODP mode */
	bool odp_atomic;		/* the device does atomics on ODP MRs */
	uint64_t odp_general;		/* odp_caps.general_caps (0: no ODP) */
	uint64_t max_mr_size;		/* the device's, 0 when unknown */
	_Atomic bool no_prefetch;	/* ibv_advise_mr said EOPNOTSUPP; a hint
					   between threads, relaxed */
	pthread_mutex_t lock;		/* serializes creating implicit MRs */
	/* implicit[access & RC_VERBS_ODP_KEY_BITS]: created on first use,
	 * published with release, read with acquire (pairs with it) on every
	 * ODP miss; deregistered only at destroy. */
	_Atomic(struct ibv_mr *) implicit[RC_VERBS_ODP_KEY_BITS + 1];
};

static void verbs_destroy(void *priv);

/* verbs' NULL + errno, made -errno; a library that forgot errno is -EIO. */
static int errno_ret(void)
{
	return errno > 0 ? -errno : -EIO;
}

/*
 * A forked child shares the parent's uverbs file: deregistering an MR there
 * would destroy the parent's MR (the kernel object is the parent's), and the
 * child cannot use the parent's context anyway. So, as in io_uring.c, a
 * child never calls the device.
 */
static bool in_child(const struct rc_verbs *v)
{
	return getpid() != v->pid;
}

/* The kernel refuses remote write or atomic access without local write
 * (ib_check_mr_access); give it, since a superset of the asked access is
 * what regcache_get() promises anyway. */
static unsigned complete_access(unsigned access)
{
	if (access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC))
		access |= IBV_ACCESS_LOCAL_WRITE;
	return access;
}

/* ---------------------------------------------------------------------
 * Implicit ODP
 * ------------------------------------------------------------------- */

/* The implicit MR for @key, registering it on first use. */
static int implicit_mr(struct rc_verbs *v, unsigned key, struct ibv_mr **out)
{
	struct ibv_mr *mr = rc_load_acquire(&v->implicit[key]);
	int ret = 0;

	if (rc_likely(mr)) {
		*out = mr;
		return 0;
	}
	pthread_mutex_lock(&v->lock);
	mr = rc_load_relaxed(&v->implicit[key]);
	if (!mr) {
		/* addr NULL, length SIZE_MAX, iova 0: the kernel's spelling of
		 * "the whole address space, faulted in on demand". */
		errno = 0;
		mr = ibv_reg_mr_iova2(v->pd, NULL, SIZE_MAX, 0,
				      IBV_ACCESS_ON_DEMAND | key);
		if (mr)
			/* Release pairs with the acquire load above. */
			rc_store_release(&v->implicit[key], mr);
		else
			ret = errno_ret();
	}
	pthread_mutex_unlock(&v->lock);
	if (ret)
		return ret;
	*out = mr;
	return 0;
}

/* Fault the pages in ahead of the device, asynchronously. Advice only: a
 * failure costs page faults later, never correctness. */
static void prefetch(struct rc_verbs *v, struct ibv_mr *mr, uintptr_t addr,
		     size_t len, unsigned access)
{
	struct ibv_sge sg[RC_VERBS_PREFETCH_SGES];
	enum ibv_advise_mr_advice advice =
		access & (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)
			? IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE
			: IBV_ADVISE_MR_ADVICE_PREFETCH;

	if (rc_load_relaxed(&v->no_prefetch))
		return;
	while (len) {
		uint32_t n = 0;
		int ret;

		for (; len && n < RC_VERBS_PREFETCH_SGES; n++) {
			size_t chunk = len < RC_VERBS_PREFETCH_CHUNK
					       ? len : RC_VERBS_PREFETCH_CHUNK;

			sg[n].addr = addr;
			sg[n].length = (uint32_t)chunk;
			sg[n].lkey = mr->lkey;
			addr += chunk;
			len -= chunk;
		}
		ret = ibv_advise_mr(v->pd, advice, 0, sg, n);
		if (ret == EOPNOTSUPP) {
			/* The provider has no advise_mr: stop asking. */
			rc_store_relaxed(&v->no_prefetch, true);
			rc_info("ibv_advise_mr is not supported by this device: "
				"no prefetch, the device faults pages in");
			return;
		}
		if (ret) {
			rc_debug("ibv_advise_mr prefetch of %u pieces failed: "
				 "%s; the device will fault the pages in",
				 n, strerror(ret));
			return;
		}
	}
}

static int odp_reg(struct rc_verbs *v, void *addr, size_t len,
		   unsigned access, void **handle)
{
	unsigned unsupported = access & ~(RC_VERBS_ODP_KEY_BITS |
					  RC_VERBS_ODP_IGNORED);
	struct ibv_mr *mr;
	int ret;

	if (!v->odp_atomic)
		unsupported |= access & IBV_ACCESS_REMOTE_ATOMIC;
	if (unsupported) {
		rc_warn("access %#x is not available with implicit on-demand "
			"paging on this device; create the cache with "
			"REGCACHE_VERBS_ODP=off to register it pinned",
			unsupported);
		return -EOPNOTSUPP;
	}
	/* Local write costs nothing without pinning (a device write to
	 * read-only memory fails at the fault, not here), and it halves the
	 * number of implicit MRs: every region gets it. */
	ret = implicit_mr(v, (access | IBV_ACCESS_LOCAL_WRITE) &
				     RC_VERBS_ODP_KEY_BITS, &mr);
	if (ret) {
		rc_warn("registering an implicit ODP memory region with access "
			"%#x failed: %s; set REGCACHE_VERBS_ODP=off to register "
			"pinned", IBV_ACCESS_ON_DEMAND | access, strerror(-ret));
		return ret;
	}
	prefetch(v, mr, (uintptr_t)addr, len, access);
	*handle = mr;
	return 0;
}

/* Which mode the caller and the environment ask for; the environment wins
 * so that an administrator can turn ODP off without a rebuild. */
static enum rc_verbs_mode wanted_mode(unsigned flags)
{
	/* The order of env.c's choices; -1: unset or malformed. */
	static const enum rc_verbs_mode modes[] = {
		RC_ODP_AUTO, RC_ODP_IMPLICIT, RC_ODP_OFF
	};
	int i = rc_env_choice(RC_ENV_VERBS_ODP);

	if (i >= 0)
		return modes[i];
	if (flags & REGCACHE_VERBS_FLAG_ODP_IMPLICIT)
		return RC_ODP_IMPLICIT;
	if (flags & REGCACHE_VERBS_FLAG_ODP_OFF)
		return RC_ODP_OFF;
	return RC_ODP_AUTO;
}

/* true when the device (@attr, NULL if it could not be queried) does
 * implicit ODP for everything an RC queue pair does with local memory;
 * registers the local-access implicit MR too, so that a device that claims
 * support but refuses is found now. */
static bool odp_usable(struct rc_verbs *v, const struct ibv_device_attr_ex *attr)
{
	struct ibv_mr *mr;
	unsigned missing;
	int ret;

	if (!attr) {
		rc_warn("REGCACHE_VERBS_ODP=implicit, but the device could not "
			"be queried; registering pinned instead of implicit "
			"ODP");
		return false;
	}
	missing = RC_VERBS_ODP_RC_NEEDED & ~attr->odp_caps.per_transport_caps.rc_odp_caps;
	if (!(attr->odp_caps.general_caps & IBV_ODP_SUPPORT) ||
	    !(attr->odp_caps.general_caps & IBV_ODP_SUPPORT_IMPLICIT) ||
	    missing) {
		rc_warn("REGCACHE_VERBS_ODP=implicit, but the device reports "
			"general ODP caps %#llx and RC ODP caps %#x (needs "
			"implicit ODP and send, recv, write, read); registering "
			"pinned", (unsigned long long)attr->odp_caps.general_caps,
			attr->odp_caps.per_transport_caps.rc_odp_caps);
		return false;
	}
	v->odp_atomic = !!(attr->odp_caps.per_transport_caps.rc_odp_caps &
			   IBV_ODP_SUPPORT_ATOMIC);
	ret = implicit_mr(v, IBV_ACCESS_LOCAL_WRITE, &mr);
	if (ret) {
		rc_warn("the device reports implicit ODP, but registering the "
			"implicit memory region failed: %s; registering pinned",
			strerror(-ret));
		return false;
	}
	return true;
}

/* The device's name for log lines ("the device" for a context without
 * one, as the test double's). */
static const char *dev_name(const struct rc_verbs *v)
{
	struct ibv_device *dev = v->pd->context ? v->pd->context->device : NULL;

	return dev ? ibv_get_device_name(dev) : "the device";
}

/*
 * The device's limits, read once at creation: max_mr bounds how many
 * regions the cache keeps (an ibv_reg_mr beyond the device's MR table
 * fails with ENOMEM, which the cache answers by evicting; keeping fewer
 * idle regions than the table holds leaves room for the held ones and for
 * MRs the application registers itself), max_mr_size how large one may
 * be, and the ODP caps whether IBV_ACCESS_ON_DEMAND can be asked for.
 */
static void apply_device_limits(struct rc_verbs *v,
				const struct ibv_device_attr_ex *attr,
				struct regcache_params *p)
{
	size_t max_mr = attr->orig_attr.max_mr > 0
				? (size_t)attr->orig_attr.max_mr : 0;
	size_t asked = p->max_regions ? p->max_regions
				      : rc_env_size(RC_ENV_MAX_REGIONS);

	v->max_mr_size = attr->orig_attr.max_mr_size;
	v->odp_general = attr->odp_caps.general_caps;
	if (!max_mr)
		return;		/* not reported: the device decides */
	if (!asked && max_mr < RC_VERBS_DEFAULT_MAX_REGIONS) {
		p->max_regions = max_mr;
		rc_info("%s has room for %zu memory regions (max_mr): the "
			"cache keeps at most that many", dev_name(v), max_mr);
	} else if (asked > max_mr) {
		p->max_regions = max_mr;
		rc_warn("max_regions %zu is more than %s's max_mr %zu: the "
			"cache keeps at most %zu regions", asked, dev_name(v),
			max_mr, max_mr);
	}
}

/* ---------------------------------------------------------------------
 * Registrar ops
 * ------------------------------------------------------------------- */

static int verbs_reg(void *ctx, void *addr, size_t len, unsigned access,
		     void **handle)
{
	struct rc_verbs *v = ctx;
	struct ibv_mr *mr;

	if (in_child(v)) {
		rc_warn("verbs cache used in a forked child: its protection "
			"domain belongs to the parent; open the device and "
			"create a new cache in the child");
		return -ECHILD;
	}
	if (access & IBV_ACCESS_ZERO_BASED) {
		/* Regions are merged and widened, so a zero-based iova would
		 * not be the caller's offset. */
		rc_warn("IBV_ACCESS_ZERO_BASED is not supported: regions are "
			"registered with iova == virtual address");
		return -EINVAL;
	}
	access = complete_access(access);
	if (v->odp)
		return odp_reg(v, addr, len, access, handle);
	if ((access & IBV_ACCESS_ON_DEMAND) &&
	    !(v->odp_general & IBV_ODP_SUPPORT)) {
		/* The kernel would refuse it too (ib_check_mr_access), with
		 * an errno that does not say why. */
		rc_warn("IBV_ACCESS_ON_DEMAND asked for, but %s has no "
			"on-demand paging (general ODP caps %#llx): ask "
			"without it to register pinned memory",
			dev_name(v), (unsigned long long)v->odp_general);
		return -EOPNOTSUPP;
	}
	if (v->max_mr_size && len > v->max_mr_size) {
		rc_warn("registering %zu bytes: more than %s's largest memory "
			"region (max_mr_size %llu); register smaller pieces",
			len, dev_name(v), (unsigned long long)v->max_mr_size);
		return -E2BIG;
	}

	errno = 0;
	mr = ibv_reg_mr_iova2(v->pd, addr, len, (uintptr_t)addr, access);
	if (!mr) {
		int ret = errno_ret();

		/* -ENOMEM (RLIMIT_MEMLOCK or device tables) makes the cache
		 * evict idle regions and retry; the cache logs final errors. */
		rc_debug("ibv_reg_mr(%p, %zu, %#x): %s", addr, len, access,
			 strerror(-ret));
		return ret;
	}
	*handle = mr;
	return 0;
}

static void verbs_dereg(void *ctx, void *handle)
{
	struct rc_verbs *v = ctx;
	struct ibv_mr *mr = handle;
	int ret;

	/* Implicit MRs are shared by every region; they go at destroy. */
	if (v->odp || in_child(v))
		return;
	ret = ibv_dereg_mr(mr);
	if (ret)
		rc_error("ibv_dereg_mr failed: %s; the memory stays pinned "
			 "until the protection domain is closed",
			 strerror(ret > 0 ? ret : EIO));
}

static const struct regcache_ops verbs_ops = {
	.reg = verbs_reg,
	.dereg = verbs_dereg,
};

static void verbs_destroy(void *priv)
{
	struct rc_verbs *v = priv;

	for (unsigned i = 0; i <= RC_VERBS_ODP_KEY_BITS; i++) {
		struct ibv_mr *mr = rc_load_relaxed(&v->implicit[i]);
		int ret;

		if (!mr || in_child(v))
			continue;
		ret = ibv_dereg_mr(mr);
		if (ret)
			rc_error("ibv_dereg_mr of an implicit ODP MR failed: "
				 "%s", strerror(ret > 0 ? ret : EIO));
	}
	pthread_mutex_destroy(&v->lock);
	free(v);
}

/* ---------------------------------------------------------------------
 * Public calls
 * ------------------------------------------------------------------- */

int regcache_verbs_create(struct ibv_pd *pd,
			  const struct regcache_params *params,
			  struct regcache **cache)
{
	const unsigned odp_flags = REGCACHE_VERBS_FLAG_ODP_IMPLICIT |
				   REGCACHE_VERBS_FLAG_ODP_OFF;
	struct regcache_params p = { 0 };
	struct ibv_device_attr_ex attr;
	bool queried;
	struct rc_verbs *v;
	int ret;

	if (params)
		p = *params;
	if (!pd || !cache || (p.flags & odp_flags) == odp_flags) {
		rc_warn("regcache_verbs_create: %s",
			!pd || !cache ? "pd and cache must not be NULL"
				      : "REGCACHE_VERBS_FLAG_ODP_IMPLICIT and "
					"REGCACHE_VERBS_FLAG_ODP_OFF exclude "
					"each other");
		return -EINVAL;
	}
	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	v->pd = pd;
	v->pid = getpid();
	pthread_mutex_init(&v->lock, NULL);

	memset(&attr, 0, sizeof(attr));
	ret = ibv_query_device_ex(pd->context, NULL, &attr);
	queried = !ret;
	if (ret)
		rc_info("ibv_query_device_ex failed: %s; the device's limits "
			"(max_mr, max_mr_size, ODP) are not known",
			strerror(ret > 0 ? ret : EIO));
	else
		apply_device_limits(v, &attr, &p);
	/* auto means pinned: see docs/verbs.md, "Choosing ODP". */
	if (wanted_mode(p.flags) == RC_ODP_IMPLICIT)
		v->odp = odp_usable(v, queried ? &attr : NULL);

	p.flags &= ~odp_flags;
	p.ops = &verbs_ops;
	p.ctx = v;
	ret = rc_cache_create(&p, &(struct rc_registrar){
		.priv = v, .destroy = verbs_destroy,
		.follows_page_tables = v->odp }, cache);
	if (ret) {
		verbs_destroy(v);
		return ret;
	}
	rc_info("verbs cache %p: %s", (void *)*cache,
		v->odp ? "implicit on-demand paging" : "pinned registration");
	return 0;
}

int regcache_verbs_odp(const struct regcache *cache)
{
	const struct rc_verbs *v = rc_cache_registrar_priv(cache, verbs_destroy);

	return v ? v->odp : -EINVAL;
}

uint32_t regcache_region_lkey(const struct regcache_region *region)
{
	const struct ibv_mr *mr = regcache_region_handle(region);

	return mr ? mr->lkey : 0;
}

uint32_t regcache_region_rkey(const struct regcache_region *region)
{
	const struct ibv_mr *mr = regcache_region_handle(region);

	return mr ? mr->rkey : 0;
}

int regcache_verbs_sge(struct regcache *cache, const void *addr, size_t len,
		       unsigned access, struct ibv_sge *sge,
		       struct regcache_region **region)
{
	struct regcache_region *r;
	int ret;

	if (!cache || !addr || !sge || !region || !len || len > UINT32_MAX) {
		rc_warn("regcache_verbs_sge(cache=%p, addr=%p, len=%zu, "
			"sge=%p, region=%p): %s", (void *)cache, addr, len,
			(void *)sge, (void *)region,
			len > UINT32_MAX ? "an ibv_sge holds at most 4 GiB - 1; "
					   "split the buffer"
					 : "pass a cache, a buffer, a non-zero "
					   "length, an sge and a region pointer");
		return -EINVAL;
	}
	ret = regcache_get(cache, addr, len, access, &r);
	if (ret)
		return ret;
	sge->addr = (uintptr_t)addr;
	sge->length = (uint32_t)len;
	/* The handle directly, not through the exported accessor: this is
	 * the hit path, and an exported call goes through the PLT. */
	sge->lkey = ((const struct ibv_mr *)((struct rc_region *)r)->handle)->lkey;
	*region = r;
	return 0;
}
