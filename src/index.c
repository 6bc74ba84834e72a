/* SPDX-License-Identifier: MIT */
/* The interval index (see index.h). */
#include <errno.h>
#include <stdlib.h>

#include "index.h"

static int region_cmp(struct rc_region *a, struct rc_region *b)
{
	uintptr_t sa = rc_region_start(a), sb = rc_region_start(b);

	return sa < sb ? -1 : sa > sb;
}

RB_GENERATE_INTERNAL(rc_tree, rc_region, rb, region_cmp,
		     __attribute__((unused)) static)

int rc_index_init(struct rc_index *ix, size_t max_regions)
{
	size_t want = max_regions < 1024 ? 1024 : max_regions;
	unsigned bits = 10;

	/* One slot per cached region, at most 2^22: hints collide rarely for
	 * a hot set much smaller than the cache, and cost 8 bytes a region. */
	while (bits < 22 && ((size_t)1 << bits) < want)
		bits++;
	ix->hint = calloc((size_t)1 << bits, sizeof(*ix->hint));
	if (!ix->hint)
		return -ENOMEM;
	ix->hint_bits = bits;
	ix->hint_mask = ((uint32_t)1 << bits) - 1;
	RB_INIT(&ix->tree);
	return 0;
}

void rc_index_fini(struct rc_index *ix)
{
	free(ix->hint);
	ix->hint = NULL;
}

void rc_index_insert(struct rc_index *ix, struct rc_region *r)
{
	rc_assert(rc_region_start(r) < rc_region_end(r));
	rc_assert(!rc_index_first_overlap(ix, rc_region_start(r),
					  rc_region_end(r)));
	RB_INSERT(rc_tree, &ix->tree, r);
}

void rc_index_remove(struct rc_index *ix, struct rc_region *r)
{
	rc_assert(rc_index_first_overlap(ix, rc_region_start(r),
					 rc_region_end(r)) == r);
	RB_REMOVE(rc_tree, &ix->tree, r);
}

struct rc_region *rc_index_first_overlap(const struct rc_index *ix,
					 uintptr_t start, uintptr_t end)
{
	struct rc_region *n = RB_ROOT(&ix->tree), *pred = NULL, *succ = NULL;

	/* One descent finds both neighbours of @start: pred, the last region
	 * starting below it, and succ, the first starting at or above it.
	 * With a million regions cached this lookup is most of a miss. */
	while (n) {
		if (rc_region_start(n) < start) {
			pred = n;
			n = RB_RIGHT(n, rb);
		} else {
			succ = n;
			n = RB_LEFT(n, rb);
		}
	}
	/* Regions do not overlap, so only pred can reach over @start. */
	if (pred && rc_region_end(pred) > start)
		return pred;
	if (succ && rc_region_start(succ) < end)
		return succ;
	return NULL;
}

struct rc_region *rc_index_next_overlap(const struct rc_index *ix,
					const struct rc_region *r,
					uintptr_t end)
{
	struct rc_region *next = RB_NEXT(rc_tree, &ix->tree,
					 (struct rc_region *)r);

	(void)ix; /* RB_NEXT ignores its head argument */
	return next && rc_region_start(next) < end ? next : NULL;
}
