/* SPDX-License-Identifier: MIT */
/* The interval index (see index.h): a B+ tree keyed by region start. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "index.h"

/* Entries per node: a leaf's keys fill 8 cache lines. */
#define FANOUT 64
/* A node with fewer entries than this is refilled from a sibling when a
 * removal leaves it so (a split at the end of a node leaves one entry in
 * the new node, so that sequential inserts fill their nodes; such a node
 * fills up or empties later). */
#define MIN_FILL (FANOUT / 4)
/* Depth of a tree of 2^64 entries with MIN_FILL children per inner node. */
#define MAX_DEPTH 32

/*
 * A node. In a leaf, key[i] is the start of region ptr[i], ascending, and
 * prev/next link the leaves in key order. In an inner node, ptr[i] is a
 * child and key[i], for i >= 1, a lower bound of every key below it and
 * above every key below child i-1, ascending: a search for x goes to the
 * last child whose key is <= x (the first, if none is). A bound may be
 * below the child's smallest key after removals; the leaf links cover the
 * difference. key[0] is a bound only in a node that is not the first child
 * of its parent, which is when it is used (as the node's separator).
 */
struct rc_index_node {
	uint16_t n;
	bool leaf;
	struct rc_index_node *prev, *next;
	uintptr_t key[FANOUT];
	void *ptr[FANOUT];
};

/* A path from the root to a leaf: node[l] and the child taken, at[l]. */
struct path {
	struct rc_index_node *node[MAX_DEPTH + 1];
	unsigned at[MAX_DEPTH + 1];
};

int rc_index_init(struct rc_index *ix, size_t max_regions)
{
	size_t want = max_regions < 1024 ? 1024 : max_regions;
	unsigned bits = 10;

	/* One slot per cached region, at most 2^22: hints collide rarely for
	 * a hot set much smaller than the cache, and cost 8 bytes a region. */
	while (bits < 22 && ((size_t)1 << bits) < want)
		bits++;
	memset(ix, 0, sizeof(*ix));
	ix->hint = calloc((size_t)1 << bits, sizeof(*ix->hint));
	if (!ix->hint)
		return -ENOMEM;
	ix->hint_bits = bits;
	ix->hint_mask = ((uint32_t)1 << bits) - 1;
	return 0;
}

static void free_subtree(struct rc_index_node *n)
{
	if (!n->leaf)
		for (unsigned i = 0; i < n->n; i++)
			free_subtree(n->ptr[i]);
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

/* The first i >= @lo with n->key[i] >= @x, or n->n. */
static unsigned lower_bound_from(const struct rc_index_node *n, unsigned lo,
				 uintptr_t x)
{
	unsigned hi = n->n;

	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;

		if (n->key[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Entries of leaf @n with key < @x. */
static unsigned lower_bound(const struct rc_index_node *n, uintptr_t x)
{
	return lower_bound_from(n, 0, x);
}

/* The child of inner node @n to search for @x: the last one whose key is
 * <= x, or the first. The first child's key is never compared: on the
 * leftmost path it may exceed keys inserted below it later. */
static unsigned child_for(const struct rc_index_node *n, uintptr_t x)
{
	unsigned i = lower_bound_from(n, 1, x);

	return i < n->n && n->key[i] == x ? i : i - 1;
}

/* The leaf where @x belongs, recording the way down in @p (if not NULL). */
static struct rc_index_node *descend(const struct rc_index *ix, uintptr_t x,
				     struct path *p)
{
	struct rc_index_node *n = ix->root;

	for (unsigned l = 0; l < ix->depth; l++) {
		unsigned i = child_for(n, x);

		if (p) {
			p->node[l] = n;
			p->at[l] = i;
		}
		n = n->ptr[i];
	}
	return n;
}

struct rc_region *rc_index_first_overlap(const struct rc_index *ix,
					 uintptr_t start, uintptr_t end)
{
	const struct rc_index_node *leaf, *succ_leaf;
	struct rc_region *pred;
	unsigned i;

	if (!ix->root)
		return NULL;
	leaf = descend(ix, start, NULL);
	i = lower_bound(leaf, start);
	/* Regions do not overlap, so only the last one starting below
	 * @start can reach over it; after it comes the first at or above. */
	if (i)
		pred = leaf->ptr[i - 1];
	else
		pred = leaf->prev ? leaf->prev->ptr[leaf->prev->n - 1] : NULL;
	if (pred && rc_region_end(pred) > start)
		return pred;
	succ_leaf = leaf;
	if (i == leaf->n) {
		succ_leaf = leaf->next;
		i = 0;
	}
	if (succ_leaf && succ_leaf->key[i] < end)
		return succ_leaf->ptr[i];
	return NULL;
}

struct rc_region *rc_index_next_overlap(const struct rc_index *ix,
					const struct rc_region *r,
					uintptr_t end)
{
	uintptr_t start = rc_region_start(r);
	const struct rc_index_node *leaf = descend(ix, start, NULL);
	unsigned i = lower_bound(leaf, start) + 1;

	rc_assert(i <= leaf->n && leaf->ptr[i - 1] == r);
	if (i == leaf->n) {
		leaf = leaf->next;
		i = 0;
	}
	return leaf && leaf->key[i] < end ? leaf->ptr[i] : NULL;
}

/* ---------------------------------------------------------------------
 * Insert
 * ------------------------------------------------------------------- */

static void put_entry(struct rc_index_node *n, unsigned i, uintptr_t key,
		      void *ptr)
{
	memmove(&n->key[i + 1], &n->key[i], (n->n - i) * sizeof(n->key[0]));
	memmove(&n->ptr[i + 1], &n->ptr[i], (n->n - i) * sizeof(n->ptr[0]));
	n->key[i] = key;
	n->ptr[i] = ptr;
	n->n++;
}

/*
 * Put (key, ptr) at position @i of @n. A full node is split first: the new
 * right sibling is returned (the caller links it into the parent with its
 * key[0]), or NULL when no split was needed. At either end the split
 * leaves the old entries together, so that ascending or descending inserts
 * fill their nodes.
 */
static struct rc_index_node *insert_at(struct rc_index *ix,
				       struct rc_index_node *n, unsigned i,
				       uintptr_t key, void *ptr)
{
	struct rc_index_node *right;
	unsigned split;

	if (n->n < FANOUT) {
		put_entry(n, i, key, ptr);
		return NULL;
	}
	right = take_node(ix, n->leaf);
	split = i == FANOUT ? FANOUT : i == 0 ? 0 : FANOUT / 2;
	memcpy(right->key, &n->key[split], (FANOUT - split) * sizeof(n->key[0]));
	memcpy(right->ptr, &n->ptr[split], (FANOUT - split) * sizeof(n->ptr[0]));
	right->n = (uint16_t)(FANOUT - split);
	n->n = (uint16_t)split;
	if (n->leaf) {
		right->prev = n;
		right->next = n->next;
		if (n->next)
			n->next->prev = right;
		n->next = right;
	}
	if (i < split || (i == split && split == 0))
		put_entry(n, i, key, ptr);
	else
		put_entry(right, i - split, key, ptr);
	return right;
}

int rc_index_insert(struct rc_index *ix, struct rc_region *r)
{
	uintptr_t key = rc_region_start(r);
	struct rc_index_node *leaf, *right;
	struct path p;
	int l;

	rc_assert(key < rc_region_end(r));
	rc_assert(!rc_index_first_overlap(ix, key, rc_region_end(r)));
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
	leaf = descend(ix, key, &p);
	right = insert_at(ix, leaf, lower_bound(leaf, key), key, r);
	for (l = (int)ix->depth - 1; right && l >= 0; l--)
		right = insert_at(ix, p.node[l], p.at[l] + 1, right->key[0],
				  right);
	if (right) {
		/* The root split: a new root above both halves. */
		struct rc_index_node *root = take_node(ix, false);

		root->key[0] = ix->root->key[0];
		root->ptr[0] = ix->root;
		root->key[1] = right->key[0];
		root->ptr[1] = right;
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

static void drop_entry(struct rc_index_node *n, unsigned i)
{
	memmove(&n->key[i], &n->key[i + 1], (n->n - i - 1) * sizeof(n->key[0]));
	memmove(&n->ptr[i], &n->ptr[i + 1], (n->n - i - 1) * sizeof(n->ptr[0]));
	n->n--;
}

/* Append all of @right to @left, its left sibling, and free @right. */
static void merge(struct rc_index *ix, struct rc_index_node *left,
		  struct rc_index_node *right)
{
	memcpy(&left->key[left->n], right->key, right->n * sizeof(right->key[0]));
	memcpy(&left->ptr[left->n], right->ptr, right->n * sizeof(right->ptr[0]));
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

		memcpy(&left->key[left->n], right->key, k * sizeof(right->key[0]));
		memcpy(&left->ptr[left->n], right->ptr, k * sizeof(right->ptr[0]));
		memmove(right->key, &right->key[k], (right->n - k) * sizeof(right->key[0]));
		memmove(right->ptr, &right->ptr[k], (right->n - k) * sizeof(right->ptr[0]));
	} else {
		unsigned k = left->n - want;

		memmove(&right->key[k], right->key, right->n * sizeof(right->key[0]));
		memmove(&right->ptr[k], right->ptr, right->n * sizeof(right->ptr[0]));
		memcpy(right->key, &left->key[want], k * sizeof(left->key[0]));
		memcpy(right->ptr, &left->ptr[want], k * sizeof(left->ptr[0]));
	}
	left->n = (uint16_t)want;
	right->n = (uint16_t)(total - want);
}

void rc_index_remove(struct rc_index *ix, struct rc_region *r)
{
	uintptr_t key = rc_region_start(r);
	struct rc_index_node *n;
	struct path p;
	unsigned i;
	int l;

	rc_assert(rc_index_first_overlap(ix, key, rc_region_end(r)) == r);
	n = descend(ix, key, &p);
	i = lower_bound(n, key);
	rc_assert(i < n->n && n->ptr[i] == r);
	drop_entry(n, i);
	/* Refill underfull nodes from a sibling, bottom up. */
	for (l = (int)ix->depth - 1; l >= 0 && n->n < MIN_FILL; l--) {
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
		left = parent->ptr[li];
		right = parent->ptr[li + 1];
		if (left->n + right->n <= FANOUT) {
			merge(ix, left, right);
			drop_entry(parent, li + 1);
		} else {
			rebalance(left, right);
			parent->key[li + 1] = right->key[0];
		}
		n = parent;
	}
	/* An inner root with one child goes; an empty root too. */
	while (ix->root && ix->root->n == 1 && !ix->root->leaf) {
		n = ix->root;
		ix->root = n->ptr[0];
		ix->depth--;
		rc_index_add_spare(ix, n);
	}
	if (ix->root && !ix->root->n) {
		rc_index_add_spare(ix, ix->root);
		ix->root = NULL;
		ix->depth = 0;
	}
}
