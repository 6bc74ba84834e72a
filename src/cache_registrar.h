/* SPDX-License-Identifier: MIT */
/*
 * What a registrar (registrar/io_uring.c, registrar/verbs.c) gives the core
 * when it creates its cache, and the one thing it asks of a cache later.
 * A registrar sees no more of struct regcache than this.
 */
#ifndef RC_CACHE_REGISTRAR_H
#define RC_CACHE_REGISTRAR_H

#include <stdbool.h>
#include <stddef.h>

#include <regcache.h>

#include "base/compat.h"

struct rc_registrar {
	/* The registrar's own state, freed by @destroy when the cache is
	 * destroyed (not when its creation fails: the registrar frees it). */
	void *priv;
	void (*destroy)(void *priv);
	/* The device's own limit on registrations (io_uring's table, a
	 * NIC's max_mr), or 0: the cache holds no more live regions. */
	size_t max_regions;
	/* The registrations follow the page tables (implicit ODP), so they
	 * never go stale: cache under any monitor, never watch, never probe,
	 * no byte limit by default. */
	bool follows_page_tables;
};

/* regcache_create() with a registrar's state and limits (@reg may be
 * NULL): the same checks of @params, the same errors. */
rc_hidden int rc_cache_create(const struct regcache_params *params,
			      const struct rc_registrar *reg,
			      struct regcache **cache);

/* The registrar's priv of @cache when it was created with @destroy as its
 * destructor (a registrar recognising its own caches), else NULL. */
rc_hidden void *rc_cache_registrar_priv(const struct regcache *cache,
					void (*destroy)(void *priv));

#endif /* RC_CACHE_REGISTRAR_H */
