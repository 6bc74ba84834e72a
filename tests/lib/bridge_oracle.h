/* SPDX-License-Identifier: MIT */
/*
 * What the bridge tests (bridge-ucx.c, bridge-fabric.c) share: a foreign
 * registration cache (UCX's ucs_rcache, libfabric's MR cache) whose device
 * is io_uring's fixed-buffer table (tests/helpers.c's t_registrar), the
 * changes made under a cached buffer behind the cache's back, and the
 * cross-thread race. The DMA oracle is helpers.c's: READ_FIXED through the
 * registration shows whether the application's pages are the pinned ones.
 */
#ifndef T_BRIDGE_ORACLE_H
#define T_BRIDGE_ORACLE_H

#include "helpers.h"

/* The device: every registration is a slot of this table. */
extern struct t_registrar b_reg;

/* The cache under test, as the scenarios drive it. */
struct b_cache {
	/* Look [buf, buf+len) up: 0 and the entry and its t_registrar handle,
	 * or -errno (the range is not mapped at that instant). */
	int (*get)(void *buf, size_t len, void **entry, void **handle);
	void (*put)(void *entry);
};

/* The DMA oracle through a t_registrar handle (slot + 1). */
bool b_dma_visible(void *handle, void *buf, size_t len, unsigned seed);

/* Look up, DMA through the registration found, put it back. */
bool b_lookup_visible(const struct b_cache *c, void *buf, size_t len,
		      unsigned seed);

/* Anonymous memory, at @hint (never replacing anything) or anywhere. NULL
 * when @hint is taken: under a sanitizer or a monitor thread, another
 * thread may map into a hole the instant it opens. */
char *b_map_at(void *hint, size_t len);

enum b_change {
	B_LIBC_MUNMAP,
	B_RAW_MUNMAP,
	B_RAW_MREMAP,
	B_RAW_DONTNEED,
	B_URING_DONTNEED,
	B_FREE_MMAPPED,
	B_NCHANGES
};
extern const char *const b_change_name[B_NCHANGES];

/*
 * Cache a buffer (a miss, then a hit), change its pages with @what, map
 * fresh memory at the address, look it up again and print the result.
 * Return: 1 if that lookup was stale, 0 if fresh, -1 if the case could not
 * be set up (malloc moved the block, or the address was taken each time).
 */
int b_scenario(const struct b_cache *c, enum b_change what);

/*
 * One thread replaces the pages of a cached buffer with raw
 * mmap(MAP_FIXED) while this one looks it up and DMAs, until @lookups
 * lookups were checked or 3 s passed; after each change it waits for two
 * lookups (2 ms at most). A lookup is checked only if no change
 * was in progress around it (a seqlock): regcache's guarantee is about
 * changes that returned before the lookup began.
 * Return: stale lookups; *checked: lookups checked.
 */
unsigned long b_race(const struct b_cache *c, unsigned long lookups,
		     unsigned long *checked);

#endif
