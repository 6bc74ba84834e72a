/* SPDX-License-Identifier: MIT */
/* The interval index (see index.h): a B+ tree keyed by region start. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "index.h"

/* Entries per node: a leaf holds 64 one-word entries, an inner node 32
 * keys and 32 children; both fill 8 cache lines. */
#define LEAF_FANOUT 64
#define INNER_FANOUT 32
/* Depth of a tree of 2^64 entries with INNER_FANOUT / 4 children per inner
 * node. */
#define MAX_DEPTH 32

/* Keys are start pages: a region starts at key << RC_REGION_UNIT_SHIFT. */
#define KEY_MAX ((uint64_t)(RC_INDEX_ADDR_LIMIT >> RC_REGION_UNIT_SHIFT) - 1)
#define NUM_MASK (((uint64_t)1 << RC_INDEX_NUM_BITS) - 1)

/*
 * A node. In a leaf, ent[i] is (key << RC_INDEX_NUM_BITS | number) of a
 * region, ascending, and prev/next link the leaves in key order. In an
 * inner node, child[i] is a child and key[i], for i >= 1, a lower bound of
 * every key below it and above every key below child i-1, ascending: a
 * search for x goes to the last child whose key is <= x (the first, if
 * none is). A bound may be below the child's smallest key after removals;
 * the leaf links cover the difference. key[0] is a bound only in a node
 * that is not the first child of its parent, which is when it is used (as
 * the node's separator).
 */
struct rc_index_node {
	uint16_t n;
	bool leaf;
	struct rc_index_node *prev, *next;
	union {
		uint64_t ent[LEAF_FANOUT];
		struct {
			uint64_t key[INNER_FANOUT];
			struct rc_index_node *child[INNER_FANOUT];
		};
	};
};

/* A path from the root to a leaf: node[l] and the child taken, at[l]. */
struct path {
	struct rc_index_node *node[MAX_DEPTH + 1];
	unsigned at[MAX_DEPTH + 1];
};

static unsigned fanout(const struct rc_index_node *n)
{
	return n->leaf ? LEAF_FANOUT : INNER_FANOUT;
}

/* A node with fewer entries than this is refilled from a sibling when a
 * removal leaves it so (a split at the end of a node leaves one entry in
 * the new node, so that sequential inserts fill their nodes; such a node
 * fills up or empties later). */
static unsigned min_fill(const struct rc_index_node *n)
{
	return fanout(n) / 4;
}

static uint64_t key_at(const struct rc_index_node *n, unsigned i)
{
	return n->leaf ? n->ent[i] >> RC_INDEX_NUM_BITS : n->key[i];
}

static uint64_t entry_of(const struct rc_region *r)
{
	return (uint64_t)(rc_region_start(r) >> RC_REGION_UNIT_SHIFT)
		       << RC_INDEX_NUM_BITS |
	       rc_region_num(r);
}

static struct rc_region *region_of(const struct rc_index *ix, uint64_t ent)
{
	return rc_region_at(ix->slab, (uint32_t)(ent & NUM_MASK));
}

static uintptr_t start_of(uint64_t ent)
{
	return (uintptr_t)(ent >> RC_INDEX_NUM_BITS) << RC_REGION_UNIT_SHIFT;
}

int rc_index_init(struct rc_index *ix, size_t max_regions,
		  const struct rc_region_table *regions)
{
	size_t want = max_regions < 1024 ? 1024 : max_regions;
	unsigned bits = 10;

	/* One slot per cached region, at most 2^22: hints collide rarely for
	 * a hot set much smaller than the cache, and cost 4 bytes a region. */
	while (bits < 22 && ((size_t)1 << bits) < want)
		bits++;
	memset(ix, 0, sizeof(*ix));
	ix->hint = calloc((size_t)1 << bits, sizeof(*ix->hint));
	if (!ix->hint)
		return -ENOMEM;
	ix->hint_bits = bits;
	ix->hint_mask = ((uint32_t)1 << bits) - 1;
	ix->slab = regions->slab;
	return 0;
}

static void free_subtree(struct rc_index_node *n)
{
	if (!n->leaf)
		for (unsigned i = 0; i < n->n; i++)
			free_subtree(n->child[i]);
	free(n);
}

void rc_index_fini(struct rc_index *ix)
{
	struct rc_index_node *n;

	if (ix->root)
		free_subtree(ix->root);
	ix->root = NULL;
	while ((n = ix->spare)) {
		ix->spare = n->next;
		free(n);
	}
	ix->nspare = 0;
	free(ix->hint);
	ix->hint = NULL;
}

/* ---------------------------------------------------------------------
 * Nodes
 * ------------------------------------------------------------------- */

unsigned rc_index_spares_wanted(const struct rc_index *ix)
{
	/* A split on every level, plus a new root. */
	unsigned need = ix->depth + 2;

	return ix->nspare >= need ? 0 : need - ix->nspare;
}

struct rc_index_node *rc_index_node_new(void)
{
	return malloc(sizeof(struct rc_index_node));
}

void rc_index_add_spare(struct rc_index *ix, struct rc_index_node *node)
{
	node->next = ix->spare;
	ix->spare = node;
	ix->nspare++;
}

static struct rc_index_node *take_node(struct rc_index *ix, bool leaf)
{
	struct rc_index_node *n = ix->spare;

	if (n) {
		ix->spare = n->next;
		ix->nspare--;
	} else {
		/* Only when the caller left no spares (the unit tests). */
		n = rc_index_node_new();
		if (!n)
			return NULL;
	}
	n->n = 0;
	n->leaf = leaf;
	n->prev = n->next = NULL;
	return n;
}

/* ---------------------------------------------------------------------
 * Search
 * ------------------------------------------------------------------- */

/* The first i >= @lo with key_at(n, i) >= @k, or n->n. */
static unsigned lower_bound_from(const struct rc_index_node *n, unsigned lo,
				 uint64_t k)
{
	unsigned hi = n->n;

	if (n->leaf) {
		/* Compare whole entries: below k << NUM_BITS is below k. */
		uint64_t e = k << RC_INDEX_NUM_BITS;

		if (k > KEY_MAX)
			return hi;
		while (lo < hi) {
			unsigned mid = (lo + hi) / 2;

			if (n->ent[mid] < e)
				lo = mid + 1;
			else
				hi = mid;
		}
		return lo;
	}
	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;

		if (n->key[mid] < k)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Entries of leaf @n with key < @k. */
static unsigned lower_bound(const struct rc_index_node *n, uint64_t k)
{
	return lower_bound_from(n, 0, k);
}

/* The child of inner node @n to search for @k: the last one whose key is
 * <= k, or the first. The first child's key is never compared: on the
 * leftmost path it may exceed keys inserted below it later. */
static unsigned child_for(const struct rc_index_node *n, uint64_t k)
{
	unsigned i = lower_bound_from(n, 1, k);

	return i < n->n && n->key[i] == k ? i : i - 1;
}

/* The leaf where @k belongs, recording the way down in @p (if not NULL). */
static struct rc_index_node *descend(const struct rc_index *ix, uint64_t k,
				     struct path *p)
{
	struct rc_index_node *n = ix->root;

	for (unsigned l = 0; l < ix->depth; l++) {
		unsigned i = child_for(n, k);

		if (p) {
			p->node[l] = n;
			p->at[l] = i;
		}
		n = n->child[i];
	}
	return n;
}

/* The first key whose region starts at or above @addr. */
static uint64_t key_ceil(uintptr_t addr)
{
	return (uint64_t)(addr >> RC_REGION_UNIT_SHIFT) +
	       !!(addr & (((uintptr_t)1 << RC_REGION_UNIT_SHIFT) - 1));
}

struct rc_region *rc_index_first_overlap(const struct rc_index *ix,
					 uintptr_t start, uintptr_t end)
{
	const struct rc_index_node *leaf, *succ_leaf;
	uint64_t k = key_ceil(start), pred = 0;
	bool has_pred = true;
	unsigned i;

	if (!ix->root)
		return NULL;
	leaf = descend(ix, k, NULL);
	i = lower_bound(leaf, k);
	/* Regions do not overlap, so only the last one starting below
	 * @start can reach over it; after it comes the first at or above. */
	if (i)
		pred = leaf->ent[i - 1];
	else if (leaf->prev)
		pred = leaf->prev->ent[leaf->prev->n - 1];
	else
		has_pred = false;
	if (has_pred && rc_region_end(region_of(ix, pred)) > start)
		return region_of(ix, pred);
	succ_leaf = leaf;
	if (i == leaf->n) {
		succ_leaf = leaf->next;
		i = 0;
	}
	if (succ_leaf && start_of(succ_leaf->ent[i]) < end)
		return region_of(ix, succ_leaf->ent[i]);
	return NULL;
}

struct rc_region *rc_index_next_overlap(const struct rc_index *ix,
					const struct rc_region *r,
					uintptr_t end)
{
	uint64_t e = entry_of(r), k = e >> RC_INDEX_NUM_BITS;
	const struct rc_index_node *leaf = descend(ix, k, NULL);
	unsigned i = lower_bound(leaf, k) + 1;

	rc_assert(i <= leaf->n && leaf->ent[i - 1] == e);
	if (i == leaf->n) {
		leaf = leaf->next;
		i = 0;
	}
	return leaf && start_of(leaf->ent[i]) < end
		       ? region_of(ix, leaf->ent[i])
		       : NULL;
}

/* ---------------------------------------------------------------------
 * Entries: a leaf's one word, or an inner node's key and child
 * ------------------------------------------------------------------- */

/* Copy @k entries of @src from @si to @dst at @di (memmove: may overlap). */
static void move_entries(struct rc_index_node *dst, unsigned di,
			 const struct rc_index_node *src, unsigned si,
			 unsigned k)
{
	if (dst->leaf) {
		memmove(&dst->ent[di], &src->ent[si], k * sizeof(dst->ent[0]));
		return;
	}
	memmove(&dst->key[di], &src->key[si], k * sizeof(dst->key[0]));
	memmove(&dst->child[di], &src->child[si], k * sizeof(dst->child[0]));
}

/* Put an entry at @i of @n, which has room: @word is a leaf's entry or an
 * inner node's key, @child the inner node's child. */
static void put_entry(struct rc_index_node *n, unsigned i, uint64_t word,
		      struct rc_index_node *child)
{
	move_entries(n, i + 1, n, i, n->n - i);
	if (n->leaf) {
		n->ent[i] = word;
	} else {
		n->key[i] = word;
		n->child[i] = child;
	}
	n->n++;
}

static void drop_entry(struct rc_index_node *n, unsigned i)
{
	move_entries(n, i, n, i + 1, n->n - i - 1);
	n->n--;
}

/* ---------------------------------------------------------------------
 * Insert
 * ------------------------------------------------------------------- */

/*
 * Put (word, child) at position @i of @n. A full node is split first: the
 * new right sibling is returned (the caller links it into the parent with
 * its first key), or NULL when no split was needed. At either end the
 * split leaves the old entries together, so that ascending or descending
 * inserts fill their nodes.
 */
static struct rc_index_node *insert_at(struct rc_index *ix,
				       struct rc_index_node *n, unsigned i,
				       uint64_t word,
				       struct rc_index_node *child)
{
	unsigned full = fanout(n), split;
	struct rc_index_node *right;

	if (n->n < full) {
		put_entry(n, i, word, child);
		return NULL;
	}
	right = take_node(ix, n->leaf);
	split = i == full ? full : i == 0 ? 0 : full / 2;
	move_entries(right, 0, n, split, full - split);
	right->n = (uint16_t)(full - split);
	n->n = (uint16_t)split;
	if (n->leaf) {
		right->prev = n;
		right->next = n->next;
		if (n->next)
			n->next->prev = right;
		n->next = right;
	}
	if (i < split || (i == split && split == 0))
		put_entry(n, i, word, child);
	else
		put_entry(right, i - split, word, child);
	return right;
}

int rc_index_insert(struct rc_index *ix, struct rc_region *r)
{
	uint64_t e = entry_of(r), k = e >> RC_INDEX_NUM_BITS;
	struct rc_index_node *leaf, *right;
	struct path p;
	int l;

	rc_assert(rc_region_start(r) < rc_region_end(r));
	rc_assert(rc_region_start(r) < RC_INDEX_ADDR_LIMIT &&
		  !(rc_region_start(r) &
		    (((uintptr_t)1 << RC_REGION_UNIT_SHIFT) - 1)) &&
		  rc_region_num(r) <= NUM_MASK &&
		  rc_region_at(ix->slab, rc_region_num(r)) == r);
	rc_assert(!rc_index_first_overlap(ix, rc_region_start(r),
					  rc_region_end(r)));
	/* Every node a split may need, before anything changes. */
	while (rc_index_spares_wanted(ix)) {
		struct rc_index_node *n = rc_index_node_new();

		if (!n)
			return -ENOMEM;
		rc_index_add_spare(ix, n);
	}
	if (!ix->root) {
		ix->root = take_node(ix, true);
		ix->depth = 0;
	}
	leaf = descend(ix, k, &p);
	right = insert_at(ix, leaf, lower_bound(leaf, k), e, NULL);
	for (l = (int)ix->depth - 1; right && l >= 0; l--)
		right = insert_at(ix, p.node[l], p.at[l] + 1, key_at(right, 0),
				  right);
	if (right) {
		/* The root split: a new root above both halves. */
		struct rc_index_node *root = take_node(ix, false);

		root->key[0] = key_at(ix->root, 0);
		root->child[0] = ix->root;
		root->key[1] = key_at(right, 0);
		root->child[1] = right;
		root->n = 2;
		ix->root = root;
		ix->depth++;
		rc_assert(ix->depth <= MAX_DEPTH);
	}
	return 0;
}

/* ---------------------------------------------------------------------
 * Remove
 * ------------------------------------------------------------------- */

/* Append all of @right to @left, its left sibling, and free @right. */
static void merge(struct rc_index *ix, struct rc_index_node *left,
		  struct rc_index_node *right)
{
	move_entries(left, left->n, right, 0, right->n);
	left->n = (uint16_t)(left->n + right->n);
	if (left->leaf) {
		left->next = right->next;
		if (right->next)
			right->next->prev = left;
	}
	rc_index_add_spare(ix, right);
}

/* Even out two siblings that together hold more than one node can. */
static void rebalance(struct rc_index_node *left, struct rc_index_node *right)
{
	unsigned total = left->n + right->n, want = total / 2;

	if (left->n < want) {
		unsigned k = want - left->n;

		move_entries(left, left->n, right, 0, k);
		move_entries(right, 0, right, k, right->n - k);
	} else {
		unsigned k = left->n - want;

		move_entries(right, k, right, 0, right->n);
		move_entries(right, 0, left, want, k);
	}
	left->n = (uint16_t)want;
	right->n = (uint16_t)(total - want);
}

void rc_index_remove(struct rc_index *ix, struct rc_region *r)
{
	uint64_t e = entry_of(r), k = e >> RC_INDEX_NUM_BITS;
	struct rc_index_node *n;
	struct path p;
	unsigned i;
	int l;

	rc_assert(rc_index_first_overlap(ix, rc_region_start(r),
					 rc_region_end(r)) == r);
	n = descend(ix, k, &p);
	i = lower_bound(n, k);
	rc_assert(i < n->n && n->ent[i] == e);
	drop_entry(n, i);
	/* Refill underfull nodes from a sibling, bottom up. */
	for (l = (int)ix->depth - 1; l >= 0 && n->n < min_fill(n); l--) {
		struct rc_index_node *parent = p.node[l];
		unsigned at = p.at[l], li;
		struct rc_index_node *left, *right;

		if (parent->n == 1) {
			/* An only child (a split at the end made its parent):
			 * it stays unless empty; the parent is refilled one
			 * level up. */
			if (n->n)
				break;
			if (n->leaf) {
				if (n->prev)
					n->prev->next = n->next;
				if (n->next)
					n->next->prev = n->prev;
			}
			drop_entry(parent, 0);
			rc_index_add_spare(ix, n);
			n = parent;
			continue;
		}
		li = at + 1 < parent->n ? at : at - 1;
		left = parent->child[li];
		right = parent->child[li + 1];
		if (left->n + right->n <= fanout(left)) {
			merge(ix, left, right);
			drop_entry(parent, li + 1);
		} else {
			rebalance(left, right);
			parent->key[li + 1] = key_at(right, 0);
		}
		n = parent;
	}
	/* An inner root with one child goes; an empty root too. */
	while (ix->root && ix->root->n == 1 && !ix->root->leaf) {
		n = ix->root;
		ix->root = n->child[0];
		ix->depth--;
		rc_index_add_spare(ix, n);
	}
	if (ix->root && !ix->root->n) {
		rc_index_add_spare(ix, ix->root);
		ix->root = NULL;
		ix->depth = 0;
	}
}
