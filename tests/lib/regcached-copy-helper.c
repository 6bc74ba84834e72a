/* SPDX-License-Identifier: MIT */
/*
 * The second copy of the library for regcached-two-copies: this shared
 * object links libregcache statically (as a middleware might) with every
 * symbol of that copy kept local, so the process holds two independent
 * monitors, each registered with the daemon on its own connection.
 */
#include <string.h>

#include "helpers.h"

static struct io_uring ring;
static struct regcache *cache;
static struct t_case k;

const char *copy_start(void)
{
	t_ring_init(&ring);
	cache = t_uring_cache(&ring, 0, 0, 0);
	return regcache_monitor_name();
}

void copy_begin(char *buf, size_t len)
{
	t_case_begin(&k, &ring, cache, buf, len);
}

int copy_end(const char *what)
{
	t_case_end(&k, what, true);
	return t_failures;
}

void copy_stop(void)
{
	regcache_destroy(cache);
	io_uring_queue_exit(&ring);
}
