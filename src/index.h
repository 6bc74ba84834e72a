/* SPDX-License-Identifier: MIT */
/*
 * The interval index: the live regions of one cache, which never overlap,
 * in a B+ tree ordered by start, and a direct-mapped hint table that lets
 * a hit find its region without a lock.
 *
 * The tree lives outside the regions: a region carries no links for it,
 * and the keys of a search sit together in the tree's nodes (a lookup
 * among a million regions touches 4 nodes, not 20 scattered regions).
 * A leaf entry is one 64-bit word, the region's start page above its
 * number in its pool (region_pool.h: rc_region_at() turns the number back into
 * the region): 8 bytes a region, with the keys still in the leaf.
 * Sequential inserts, upwards or downwards, fill nodes completely.
 *
 * It knows a region only as [start, end) and its number: it never kills,
 * counts or frees one. The caller serialises every call except
 * rc_index_hint(), which hits make without any lock: a hint is only a
 * guess, which the caller verifies against the region's seq, range and
 * access, so a stale one is harmless (region memory is type-stable, see
 * region.h).
 */
#ifndef RC_INDEX_H
#define RC_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "base/compat.h"
#include "region_pool.h"

struct rc_index_node;

/* What a leaf entry can hold: a region that starts below
 * RC_INDEX_ADDR_LIMIT (2^48), numbered below 2^RC_INDEX_NUM_BITS. */
#define RC_INDEX_NUM_BITS	RC_REGION_NUM_BITS
#define RC_INDEX_ADDR_LIMIT	((uintptr_t)1 << (64 - RC_INDEX_NUM_BITS + \
						  RC_REGION_UNIT_SHIFT))

/**
 * struct rc_index - an interval index with its hint table
 * @hint:      2^@hint_bits slots, each the number of the last region
 *             found for a page that maps to it (or 0, which is never
 *             live: struct rc_region_table): 4 bytes a slot.
 * @hint_mask: 2^@hint_bits - 1.
 * @slab:      the slab array of the table the region numbers refer to
 *             (region_pool.h: rc_region_at()).
 * @root:      the tree, NULL when empty; for any two regions in it,
 *             a.end <= b.start or b.end <= a.start.
 * @depth:     levels of inner nodes above the leaves.
 * @spare:     free nodes, for inserts made under a lock (see
 *             rc_index_spares_wanted()); removals return nodes here.
 *
 * The hint fields come first: a hit reads them, and only them.
 */
struct rc_index {
	_Atomic uint32_t *hint;
	uint32_t hint_mask;
	uint32_t hint_bits;
	struct rc_region *const *slab;
	struct rc_index_node *root;
	unsigned depth;
	unsigned nspare;
	struct rc_index_node *spare;
};

/* An empty index of regions of @regions, with about @max_regions hint
 * slots; 0 or -ENOMEM. */
rc_hidden int rc_index_init(struct rc_index *ix, size_t max_regions,
			    const struct rc_region_table *regions);
/* Free the tree's nodes and the hint table (the regions are the caller's). */
rc_hidden void rc_index_fini(struct rc_index *ix);

/*
 * How many nodes the next insert may need beyond the spares: allocate them
 * with rc_index_node_new() (without the caller's lock: an allocation may
 * unmap memory) and hand them over with rc_index_add_spare(). With no
 * spares wanted, rc_index_insert() never allocates.
 */
rc_hidden unsigned rc_index_spares_wanted(const struct rc_index *ix);
/* rc_index_spares_wanted() never exceeds this. */
#define RC_INDEX_SPARES_MAX 34
rc_hidden struct rc_index_node *rc_index_node_new(void);
rc_hidden void rc_index_add_spare(struct rc_index *ix,
				  struct rc_index_node *node);

/* Add @r, which overlaps no region of @ix, starts below
 * RC_INDEX_ADDR_LIMIT and is in the region table of @ix; 0, or -ENOMEM when
 * it had to allocate a node (no spares) and could not. */
rc_hidden int rc_index_insert(struct rc_index *ix, struct rc_region *r);
/* Remove @r, which is in @ix. Its hints stay: they are only guesses. */
rc_hidden void rc_index_remove(struct rc_index *ix, struct rc_region *r);

/* The lowest-addressed region that overlaps [start, end), or NULL. */
rc_hidden struct rc_region *rc_index_first_overlap(const struct rc_index *ix,
						   uintptr_t start,
						   uintptr_t end);
/* The region after @r (which is in @ix) if it starts below @end, or NULL.
 * With rc_index_first_overlap(), visits every region that overlaps
 * [start, end) in address order, as the kernel's interval_tree_iter_next(). */
rc_hidden struct rc_region *rc_index_next_overlap(const struct rc_index *ix,
						  const struct rc_region *r,
						  uintptr_t end);

static inline size_t rc_index_hint_slot(const struct rc_index *ix,
					uintptr_t addr)
{
	uintptr_t page = addr >> 12;

	/* Neighbouring pages get neighbouring slots (8 per cache line, so a
	 * hot set of nearby buffers touches few lines); folding in the high
	 * bits keeps buffers exactly 2^bits pages apart from colliding. */
	return (size_t)((page ^ (page >> ix->hint_bits)) & ix->hint_mask);
}

/* The hint for @addr: a region that was in @ix and covered @addr once, or
 * region number 0, which is never live. The acquire pairs with the release
 * in rc_index_hint_set(): the region's fields as they were when it was
 * hinted, and its slab in the table, are visible. */
static inline struct rc_region *rc_index_hint(const struct rc_index *ix,
					      uintptr_t addr)
{
	uint32_t num = rc_load_acquire(&ix->hint[rc_index_hint_slot(ix, addr)]);

	return rc_region_at(ix->slab, num);
}

static inline void rc_index_hint_set(struct rc_index *ix, uintptr_t addr,
				     struct rc_region *r)
{
	rc_store_release(&ix->hint[rc_index_hint_slot(ix, addr)],
			 rc_region_num(r));
}

#endif /* RC_INDEX_H */
