/* SPDX-License-Identifier: MIT */
/*
 * Description: the interval index alone (src/index.c, built into this
 * program with rc_assert compiled in): insert, remove, first_overlap,
 * next_overlap and the hint table, at the edges of half-open ranges, then
 * a randomized run against a naive list of intervals, then bulk runs deep
 * enough for the tree to split, merge and rebalance on every level
 * (ascending, descending and shuffled inserts and removals of 200000
 * regions, checked by a full walk and by lookups). A negative control
 * proves that an overlapping insert, and one the leaves cannot hold
 * (starting at RC_INDEX_ADDR_LIMIT), trip rc_assert.
 */
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"

#include "index.h"

#define EXPECT_EQ(expected, actual) T_EXPECT_EQ(expected, actual)
/* Regions are printed by their index in the test's array (-1: NULL). */
#define EXPECT_REGION(expected, actual)                                     \
	T_EXPECT_EQ(region_no(expected), region_no(actual))

#define NREGIONS 512
/* Number 0 is no region (struct rc_region_table); region i is the i-th of
 * slab 1 (new_slabs()). */
static struct rc_region no_region = { .seq = RC_SEQ_FREE };
static struct rc_region *regions;
static struct rc_region *regions_slab[2] = { &no_region };
static const struct rc_region_table table = { .slab = regions_slab,
					      .nslabs = 2, .cap = 2 };

/* Slabs 1 to @n of regions, as a pool makes them (aligned to their size);
 * slab[0] is no slab. */
static void new_slabs(struct rc_region **slab, size_t n)
{
	slab[0] = &no_region;
	for (size_t i = 1; i <= n; i++) {
		void *mem = aligned_alloc(RC_SLAB_BYTES, RC_SLAB_BYTES);

		T_REQUIRE(mem);
		memset(mem, 0, RC_SLAB_BYTES);
		slab[i] = rc_region_slab_format(mem, (uint32_t)i);
	}
}

/* An empty hint reads as region number 0, printed as NULL. */
static long region_no(const struct rc_region *r)
{
	return r && r != &no_region ? (long)(r - regions) : -1;
}

static struct rc_region *region(int i, uintptr_t start, uintptr_t end)
{
	struct rc_region *r = &regions[i];

	memset(r, 0, sizeof(*r));
	rc_store_relaxed(&r->start, start);
	rc_store_relaxed(&r->units, (uint32_t)((end - start) >> 12));
	return r;
}

static void test_empty(void)
{
	struct rc_index ix;

	T_REQUIRE(rc_index_init(&ix, 0, &table) == 0);
	EXPECT_REGION(NULL, rc_index_first_overlap(&ix, 0, UINTPTR_MAX));
	EXPECT_REGION(NULL, rc_index_first_overlap(&ix, 0x1000, 0x2000));
	EXPECT_REGION(NULL, rc_index_hint(&ix, 0x1000));
	/* An empty hint slot reads as a region no hit can take. */
	T_CHECK(rc_seq_state(rc_load_relaxed(&rc_index_hint(&ix, 0x1000)->seq)) !=
		RC_SEQ_LIVE);
	rc_index_fini(&ix);
}

/* Ranges are half-open: [start, end) overlaps [a, b) iff a < end and
 * start < b. */
static void test_edges(void)
{
	struct rc_index ix;
	struct rc_region *a = region(0, 0x10000, 0x13000);
	struct rc_region *b = region(1, 0x13000, 0x14000); /* touches a */
	struct rc_region *c = region(2, 0x20000, 0x21000); /* a gap before */

	T_REQUIRE(rc_index_init(&ix, 0, &table) == 0);
	rc_index_insert(&ix, b);
	rc_index_insert(&ix, c);
	rc_index_insert(&ix, a);

	EXPECT_REGION(NULL, rc_index_first_overlap(&ix, 0, 0x10000));
	EXPECT_REGION(a, rc_index_first_overlap(&ix, 0, 0x10001));
	EXPECT_REGION(a, rc_index_first_overlap(&ix, 0x10000, 0x10001));
	EXPECT_REGION(a, rc_index_first_overlap(&ix, 0x12fff, 0x13000));
	EXPECT_REGION(a, rc_index_first_overlap(&ix, 0x12fff, 0x13001));
	EXPECT_REGION(b, rc_index_first_overlap(&ix, 0x13000, 0x13001));
	EXPECT_REGION(b, rc_index_first_overlap(&ix, 0x13fff, 0x30000));
	EXPECT_REGION(NULL, rc_index_first_overlap(&ix, 0x14000, 0x20000));
	EXPECT_REGION(c, rc_index_first_overlap(&ix, 0x14000, 0x20001));
	EXPECT_REGION(c, rc_index_first_overlap(&ix, 0x20fff, UINTPTR_MAX));
	EXPECT_REGION(NULL, rc_index_first_overlap(&ix, 0x21000, UINTPTR_MAX));
	EXPECT_REGION(a, rc_index_first_overlap(&ix, 0, UINTPTR_MAX));

	/* next_overlap walks in address order and stops before @end. */
	EXPECT_REGION(b, rc_index_next_overlap(&ix, a, 0x13001));
	EXPECT_REGION(NULL, rc_index_next_overlap(&ix, a, 0x13000));
	EXPECT_REGION(c, rc_index_next_overlap(&ix, b, 0x20001));
	EXPECT_REGION(NULL, rc_index_next_overlap(&ix, b, 0x20000));
	EXPECT_REGION(NULL, rc_index_next_overlap(&ix, c, UINTPTR_MAX));

	/* Removing the middle one leaves a gap where it was. */
	rc_index_remove(&ix, b);
	EXPECT_REGION(NULL, rc_index_first_overlap(&ix, 0x13000, 0x14000));
	EXPECT_REGION(c, rc_index_next_overlap(&ix, a, UINTPTR_MAX));
	rc_index_remove(&ix, a);
	rc_index_remove(&ix, c);
	EXPECT_REGION(NULL, rc_index_first_overlap(&ix, 0, UINTPTR_MAX));

	/* The highest pages the leaves hold, and queries above them. */
	a = region(3, RC_INDEX_ADDR_LIMIT - 0x2000, RC_INDEX_ADDR_LIMIT);
	rc_index_insert(&ix, a);
	EXPECT_REGION(a, rc_index_first_overlap(&ix, RC_INDEX_ADDR_LIMIT - 1,
						UINTPTR_MAX));
	EXPECT_REGION(a, rc_index_first_overlap(&ix, 0, UINTPTR_MAX));
	EXPECT_REGION(NULL, rc_index_first_overlap(&ix, 0,
						   RC_INDEX_ADDR_LIMIT - 0x2000));
	EXPECT_REGION(NULL, rc_index_first_overlap(&ix, RC_INDEX_ADDR_LIMIT,
						   UINTPTR_MAX));
	EXPECT_REGION(NULL, rc_index_first_overlap(&ix, UINTPTR_MAX - 1,
						   UINTPTR_MAX));
	rc_index_remove(&ix, a);
	rc_index_fini(&ix);
}

static void test_hints(void)
{
	struct rc_index ix;
	struct rc_region *a = region(0, 0x10000, 0x11000);
	struct rc_region *b = region(1, 0x11000, 0x12000);
	uintptr_t far;

	/* Slots: 1024 at least, one per region, 2^22 at most. */
	T_REQUIRE(rc_index_init(&ix, 0, &table) == 0);
	EXPECT_EQ(10, ix.hint_bits);
	EXPECT_EQ(1023, ix.hint_mask);
	rc_index_fini(&ix);
	T_REQUIRE(rc_index_init(&ix, 5000, &table) == 0);
	EXPECT_EQ(13, ix.hint_bits);
	rc_index_fini(&ix);
	T_REQUIRE(rc_index_init(&ix, (size_t)1 << 30, &table) == 0);
	EXPECT_EQ(22, ix.hint_bits);
	rc_index_fini(&ix);

	T_REQUIRE(rc_index_init(&ix, 0, &table) == 0);
	/* Neighbouring pages, neighbouring slots. */
	EXPECT_EQ(rc_index_hint_slot(&ix, 0x10000) + 1,
		  rc_index_hint_slot(&ix, 0x11000));
	/* One slot per page: any address in the page finds the hint. */
	EXPECT_EQ(rc_index_hint_slot(&ix, 0x10000),
		  rc_index_hint_slot(&ix, 0x10fff));
	/* Pages exactly 2^bits apart do not collide. */
	far = 0x10000 + ((uintptr_t)1 << (ix.hint_bits + 12));
	T_CHECK(rc_index_hint_slot(&ix, 0x10000) !=
		rc_index_hint_slot(&ix, far));

	rc_index_hint_set(&ix, 0x10000, a);
	rc_index_hint_set(&ix, 0x11000, b);
	EXPECT_REGION(a, rc_index_hint(&ix, 0x10800));
	EXPECT_REGION(b, rc_index_hint(&ix, 0x11000));
	EXPECT_REGION(NULL, rc_index_hint(&ix, 0x12000));
	EXPECT_REGION(NULL, rc_index_hint(&ix, 0x30000));
	/* A hint is a guess: it outlives the region's place in the tree, and
	 * the last one set for a slot wins. */
	rc_index_insert(&ix, a);
	rc_index_remove(&ix, a);
	EXPECT_REGION(a, rc_index_hint(&ix, 0x10000));
	rc_index_hint_set(&ix, 0x10000, b);
	EXPECT_REGION(b, rc_index_hint(&ix, 0x10000));
	rc_index_fini(&ix);
}

/* ------------------------------------------------------------------------
 * Randomized against a naive list
 * ---------------------------------------------------------------------- */

static bool in_index[NREGIONS];

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* The naive answer: the lowest-starting indexed region overlapping. */
static struct rc_region *naive_first(uintptr_t start, uintptr_t end)
{
	struct rc_region *best = NULL;

	for (int i = 0; i < NREGIONS; i++) {
		struct rc_region *r = &regions[i];

		if (in_index[i] && rc_region_start(r) < end &&
		    start < rc_region_end(r) &&
		    (!best || rc_region_start(r) < rc_region_start(best)))
			best = r;
	}
	return best;
}

static int naive_count(uintptr_t start, uintptr_t end)
{
	int n = 0;

	for (int i = 0; i < NREGIONS; i++)
		n += in_index[i] && rc_region_start(&regions[i]) < end &&
		     start < rc_region_end(&regions[i]);
	return n;
}

/* Addresses on a small page grid, so that ranges collide often. */
static uintptr_t rand_addr(void)
{
	return (uintptr_t)(next_rand() % 4096) << 12;
}

static void test_random(int ops)
{
	struct rc_index ix;
	int failures_before = t_failures;

	memset(regions, 0, NREGIONS * sizeof(*regions));
	T_REQUIRE(rc_index_init(&ix, NREGIONS, &table) == 0);
	for (int op = 0; op < ops && t_failures == failures_before; op++) {
		int i = (int)(next_rand() % NREGIONS);
		uintptr_t start = rand_addr();
		uintptr_t end = start + ((next_rand() % 16) + 1) * 4096;
		struct rc_region *r, *prev = NULL;
		int n = 0;

		switch (next_rand() % 3) {
		case 0: /* insert, where the naive list says it fits */
			if (in_index[i] || naive_first(start, end))
				break;
			region(i, start, end);
			rc_index_insert(&ix, &regions[i]);
			in_index[i] = true;
			break;
		case 1: /* remove */
			if (!in_index[i])
				break;
			rc_index_remove(&ix, &regions[i]);
			in_index[i] = false;
			break;
		default: /* query: the first, then every overlap in order */
			EXPECT_REGION(naive_first(start, end),
				      rc_index_first_overlap(&ix, start, end));
			for (r = rc_index_first_overlap(&ix, start, end); r;
			     r = rc_index_next_overlap(&ix, r, end)) {
				T_CHECK(in_index[region_no(r)]);
				T_CHECK(rc_region_start(r) < end &&
					start < rc_region_end(r));
				T_CHECK(!prev || rc_region_end(prev) <=
							 rc_region_start(r));
				prev = r;
				n++;
			}
			EXPECT_EQ(naive_count(start, end), n);
		}
	}
	/* Everything the naive list holds, the index holds, in order. */
	EXPECT_EQ(naive_count(0, UINTPTR_MAX),
		  ({
			  int n = 0;
			  for (struct rc_region *r = rc_index_first_overlap(
				       &ix, 0, UINTPTR_MAX);
			       r; r = rc_index_next_overlap(&ix, r,
							    UINTPTR_MAX))
				  n++;
			  n;
		  }));
	for (int i = 0; i < NREGIONS; i++)
		if (in_index[i])
			rc_index_remove(&ix, &regions[i]);
	EXPECT_REGION(NULL, rc_index_first_overlap(&ix, 0, UINTPTR_MAX));
	memset(in_index, 0, sizeof(in_index));
	rc_index_fini(&ix);
}

#define BULK 200000
static bool bulk_in[BULK];
static struct rc_region *bulk_slabs[1 + (BULK + RC_SLAB_REGIONS - 1) /
					RC_SLAB_REGIONS];
/* Bulk region i: the regions of slabs 1 and on, one after the other. */
#define BULK_R(i)                                                          \
	(&bulk_slabs[1 + (i) / RC_SLAB_REGIONS][(i) % RC_SLAB_REGIONS])

static long bulk_no(const struct rc_region *r)
{
	uint32_t num = rc_region_num(r);

	return (long)((num >> RC_SLAB_NUM_BITS) - 1) * (long)RC_SLAB_REGIONS +
	       (long)(num & ((1u << RC_SLAB_NUM_BITS) - 1));
}
static const struct rc_region_table bulk_table = {
	.slab = bulk_slabs,
	.nslabs = sizeof(bulk_slabs) / sizeof(bulk_slabs[0]),
	.cap = sizeof(bulk_slabs) / sizeof(bulk_slabs[0]),
};

/* Region i of the bulk set covers pages [3i, 3i+2): one-page gaps. */
static uintptr_t bulk_start(int i)
{
	return ((uintptr_t)3 * (uintptr_t)i + 16) << 12;
}

/* A full walk and a lookup of every region and gap agree with bulk_in. */
static void bulk_check(const struct rc_index *ix, const char *when)
{
	int expect = 0, n = 0, failures_before = t_failures;
	const struct rc_region *prev = NULL;

	for (int i = 0; i < BULK; i++)
		expect += bulk_in[i];
	for (struct rc_region *r = rc_index_first_overlap(ix, 0, UINTPTR_MAX);
	     r; r = rc_index_next_overlap(ix, r, UINTPTR_MAX)) {
		long i = bulk_no(r);

		T_CHECK(i >= 0 && i < BULK && bulk_in[i]);
		T_CHECK(!prev || rc_region_end(prev) <= rc_region_start(r));
		prev = r;
		n++;
		if (t_failures > failures_before + 5)
			break;
	}
	EXPECT_EQ(expect, n);
	for (int i = 0; i < BULK && t_failures == failures_before; i++) {
		uintptr_t s = bulk_start(i);

		EXPECT_REGION(bulk_in[i] ? BULK_R(i) : NULL,
			      rc_index_first_overlap(ix, s + 4096, s + 8192));
		/* The gap after region i, then up to region i+1's start. */
		T_CHECK(!rc_index_first_overlap(ix, s + 8192, s + 12288));
		if (i + 1 < BULK)
			EXPECT_REGION(bulk_in[i + 1] ? BULK_R(i + 1) : NULL,
				      rc_index_first_overlap(ix, s + 8192,
							     s + 12289));
	}
	if (t_failures != failures_before)
		fprintf(stderr, "bulk check failed %s\n", when);
}

static void bulk_order(int *order, bool shuffle, bool descending)
{
	for (int i = 0; i < BULK; i++)
		order[i] = descending ? BULK - 1 - i : i;
	for (int i = BULK - 1; shuffle && i > 0; i--) {
		int j = (int)(next_rand() % (uint64_t)(i + 1)), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
}

static void test_bulk(bool shuffle, bool descending)
{
	static int order[BULK];
	struct rc_index ix;

	T_REQUIRE(rc_index_init(&ix, BULK, &bulk_table) == 0);
	for (int i = 0; i < BULK; i++) {
		rc_store_relaxed(&BULK_R(i)->start, bulk_start(i));
		rc_store_relaxed(&BULK_R(i)->units, 2);
	}
	bulk_order(order, shuffle, descending);
	for (int k = 0; k < BULK; k++) {
		T_REQUIRE(rc_index_insert(&ix, BULK_R(order[k])) == 0);
		bulk_in[order[k]] = true;
	}
	bulk_check(&ix, "after the inserts");
	/* Every other one out (merges and rebalancing on every level), then
	 * back in, then all out in another order. */
	for (int k = 0; k < BULK; k += 2) {
		rc_index_remove(&ix, BULK_R(order[k]));
		bulk_in[order[k]] = false;
	}
	bulk_check(&ix, "after removing every other one");
	for (int k = 0; k < BULK; k += 2) {
		T_REQUIRE(rc_index_insert(&ix, BULK_R(order[k])) == 0);
		bulk_in[order[k]] = true;
	}
	bulk_check(&ix, "after inserting them again");
	bulk_order(order, true, false);
	for (int k = 0; k < BULK; k++) {
		rc_index_remove(&ix, BULK_R(order[k]));
		bulk_in[order[k]] = false;
		if (k == BULK * 9 / 10)
			bulk_check(&ix, "with a tenth left");
	}
	EXPECT_REGION(NULL, rc_index_first_overlap(&ix, 0, UINTPTR_MAX));
	EXPECT_EQ(0, ix.depth);
	rc_index_fini(&ix);
}

/* Negative controls: an overlapping insert breaks the index's invariant,
 * a region starting at RC_INDEX_ADDR_LIMIT does not fit a leaf entry, and
 * rc_assert (compiled into this program) must catch either. */
static void test_assert_catches(bool overlap)
{
	pid_t pid = fork();
	int status;

	T_REQUIRE(pid >= 0);
	if (pid == 0) {
		struct rc_index ix;

		/* The expected failure's log line would look like a bug. */
		close(STDERR_FILENO);
		if (rc_index_init(&ix, 0, &table))
			_exit(2);
		if (overlap) {
			rc_index_insert(&ix, region(0, 0x10000, 0x12000));
			rc_index_insert(&ix, region(1, 0x11000, 0x13000));
		} else {
			rc_index_insert(&ix, region(0, RC_INDEX_ADDR_LIMIT,
						    RC_INDEX_ADDR_LIMIT +
							    0x1000));
		}
		_exit(0);
	}
	T_REQUIRE(waitpid(pid, &status, 0) == pid);
	T_CHECK(WIFSIGNALED(status));
	if (WIFSIGNALED(status))
		EXPECT_EQ(SIGABRT, WTERMSIG(status));
}

int main(void)
{
	new_slabs(regions_slab, 1);
	regions = regions_slab[1];
	new_slabs(bulk_slabs, bulk_table.nslabs - 1);
	test_empty();
	test_edges();
	test_hints();
	test_random(T_SCALE(200000));
	test_bulk(false, false);
	test_bulk(false, true);
	test_bulk(true, false);
	test_assert_catches(true);
	test_assert_catches(false);
	return t_exit_status();
}
