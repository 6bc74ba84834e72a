/*
 * Description: libFuzzer target for the interval index (src/index.c, built
 * in with rc_assert on): each input is a sequence of inserts of
 * non-overlapping ranges, removes, overlap queries and hint updates, and
 * every query is compared with a naive list of intervals: the regions
 * rc_index_first_overlap() + rc_index_next_overlap() visit must be exactly
 * the overlapping ones, in address order.
 *
 * Run: fuzz-index [-max_total_time=S] NEW_CORPUS_DIR tests/fuzz/corpus-index
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index.h"

#define FUZZ_NAME "fuzz-index"
#include "lib/fuzz.h"

#define NREGIONS 64

/* Region i is the i-th of slab 1, as a pool makes them (aligned to their
 * size); number 0 is no region (struct rc_region_table). */
static struct rc_region no_region = { .seq = RC_SEQ_FREE };
static struct rc_region *regions;
static struct rc_region *slabs[2] = { &no_region };
static const struct rc_region_table table = { .slab = slabs, .nslabs = 2,
					      .cap = 2 };
static bool in_index[NREGIONS];

/* Addresses in pages over a small space so that ranges meet and overlap,
 * with the top of what the index holds reachable too (and ranges from
 * there to beyond it). */
static uintptr_t addr(struct input *in)
{
	unsigned v = next(in) | next(in) << 8;

	if (v >= 0xff00)
		return RC_INDEX_ADDR_LIMIT - (uintptr_t)(0x10000 - v) * 4096;
	return (uintptr_t)(v % 4096) * 4096 + (next(in) & 1 ? 0 : 0x10000000);
}

static uintptr_t r_start(int i)
{
	return rc_load_relaxed(&regions[i].start);
}

static uintptr_t r_end(int i)
{
	return rc_region_end(&regions[i]);
}

static bool overlaps(int i, uintptr_t start, uintptr_t end)
{
	return in_index[i] && r_start(i) < end && start < r_end(i);
}

/* The naive answer: indexes of the overlapping regions by start. */
static int naive(uintptr_t start, uintptr_t end, int *out)
{
	int n = 0;

	for (int i = 0; i < NREGIONS; i++)
		if (overlaps(i, start, end)) {
			int j = n++;

			while (j > 0 && r_start(out[j - 1]) > r_start(i)) {
				out[j] = out[j - 1];
				j--;
			}
			out[j] = i;
		}
	return n;
}

static void query(struct rc_index *ix, uintptr_t start, uintptr_t end)
{
	int want[NREGIONS], n = naive(start, end, want), k = 0;
	struct rc_region *r;

	for (r = rc_index_first_overlap(ix, start, end); r;
	     r = rc_index_next_overlap(ix, r, end)) {
		int i = (int)(r - regions);

		if (i < 0 || i >= NREGIONS || !in_index[i])
			FAIL("query %#lx-%#lx returned a region not in the "
			     "index", (unsigned long)start, (unsigned long)end);
		if (k >= n || want[k] != i)
			FAIL("query %#lx-%#lx: visit %d is region %d "
			     "(%#lx-%#lx), the list says %d", (unsigned long)start,
			     (unsigned long)end, k, i, (unsigned long)r_start(i),
			     (unsigned long)r_end(i), k < n ? want[k] : -1);
		k++;
	}
	if (k != n)
		FAIL("query %#lx-%#lx visited %d regions, %d overlap",
		     (unsigned long)start, (unsigned long)end, k, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = { data, size };
	struct rc_index ix;

	if (!regions) {
		void *mem = aligned_alloc(RC_SLAB_BYTES, RC_SLAB_BYTES);

		if (!mem)
			FAIL("no memory for a slab");
		memset(mem, 0, RC_SLAB_BYTES);
		regions = slabs[1] = rc_region_slab_format(mem, 1);
	}
	memset(in_index, 0, sizeof(in_index));
	if (rc_index_init(&ix, 1 + next(&in) * 64, &table))
		FAIL("rc_index_init failed");
	while (in.n) {
		unsigned op = next(&in) % 5;
		int i = next(&in) % NREGIONS;
		uintptr_t start = addr(&in), len = (1 + next(&in)) * 4096;
		uintptr_t end = start + len;
		bool free_range = true;

		switch (op) {
		case 0:
		case 1:	/* insert where nothing overlaps */
			if (in_index[i])
				break;
			for (int j = 0; j < NREGIONS; j++)
				free_range &= !overlaps(j, start, end);
			if (!free_range)
				break;
			memset(&regions[i], 0, sizeof(regions[i]));
			rc_store_relaxed(&regions[i].start, start);
			rc_store_relaxed(&regions[i].units,
					 (uint32_t)(len / 4096));
			rc_index_insert(&ix, &regions[i]);
			in_index[i] = true;
			break;
		case 2:	/* remove */
			if (!in_index[i])
				break;
			rc_index_remove(&ix, &regions[i]);
			in_index[i] = false;
			break;
		case 3:	/* hint: a guess, but the last one set for the slot */
			if (!in_index[i])
				break;
			rc_index_hint_set(&ix, r_start(i), &regions[i]);
			if (rc_index_hint(&ix, r_start(i)) != &regions[i])
				FAIL("hint for %#lx is not the region just "
				     "set", (unsigned long)r_start(i));
			break;
		default:
			break;
		}
		query(&ix, start, end);
		query(&ix, start, UINTPTR_MAX);
		query(&ix, 0, UINTPTR_MAX);
	}
	rc_index_fini(&ix);
	return 0;
}
