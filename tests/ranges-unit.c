/* SPDX-License-Identifier: MIT */
/*
 * Description: the range structures of src/monitor/ranges.h alone. Fixed
 * cases for struct rc_range_set (merging, generation stamps, covers, lower)
 * and struct rc_range_count (counts, removal, a range starting at address
 * 0), then a randomized run of each, and of rc_range_set_retain_used(),
 * against a naive model (unsorted arrays searched linearly), checking the
 * structures' invariants after every step.
 *
 * Usage: ranges-unit [seed] [steps]
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "helpers.h"
#include "monitor/ranges.h"

#define PG 4096u

static uint64_t rng_state;

static uint64_t rnd(void)
{
	/* xorshift64*: reproducible from the printed seed. */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static unsigned rnd_below(unsigned n)
{
	return (unsigned)(rnd() % n);
}

/* ---------------------------------------------------------------------
 * Invariants, as stated in ranges.h
 * ------------------------------------------------------------------- */

static int set_invariants_hold(const struct rc_range_set *s)
{
	if (s->n > s->cap)
		return 0;
	for (size_t i = 0; i < s->n; i++) {
		if (s->r[i].start >= s->r[i].end)
			return 0;
		if (i + 1 < s->n && s->r[i].end >= s->r[i + 1].start)
			return 0;
	}
	return 1;
}

static int count_invariants_hold(const struct rc_range_count *c)
{
	size_t used = 0;

	if (c->cap & (c->cap - 1))
		return 0;
	if (2 * c->n > c->cap)
		return 0;
	for (size_t i = 0; i < c->cap; i++) {
		if (!c->slot[i].end)
			continue;
		used++;
		if (!c->slot[i].count)
			return 0;
		/* Reachable: lookup through the public call finds it. */
		if (rc_range_count_get(c, c->slot[i].start, c->slot[i].end) !=
		    c->slot[i].count)
			return 0;
	}
	return used == c->n;
}

/* ---------------------------------------------------------------------
 * Fixed cases
 * ------------------------------------------------------------------- */

static void fixed_set(void)
{
	struct rc_range_set s = { 0 };

	T_EXPECT_EQ(0, rc_range_set_lower(&s, 0));
	T_CHECK(!rc_range_set_covers(&s, PG, 2 * PG, 1));

	T_EXPECT_EQ(0, rc_range_set_add(&s, 10 * PG, 12 * PG, 5));
	T_EXPECT_EQ(0, rc_range_set_add(&s, 20 * PG, 22 * PG, 5));
	T_EXPECT_EQ(2, s.n);
	T_CHECK(rc_range_set_covers(&s, 10 * PG, 12 * PG, 5));
	T_CHECK(rc_range_set_covers(&s, 11 * PG, 12 * PG, 5));
	T_CHECK(!rc_range_set_covers(&s, 10 * PG, 12 * PG, 6));
	T_CHECK(!rc_range_set_covers(&s, 11 * PG, 13 * PG, 5));
	T_CHECK(!rc_range_set_covers(&s, 12 * PG, 13 * PG, 5));
	T_EXPECT_EQ(0, rc_range_set_lower(&s, 0));
	T_EXPECT_EQ(0, rc_range_set_lower(&s, 12 * PG - 1));
	T_EXPECT_EQ(1, rc_range_set_lower(&s, 12 * PG));
	T_EXPECT_EQ(2, rc_range_set_lower(&s, 22 * PG));

	/* Touching on the left merges; the same generation survives. */
	T_EXPECT_EQ(0, rc_range_set_add(&s, 8 * PG, 10 * PG, 5));
	T_EXPECT_EQ(2, s.n);
	T_EXPECT_EQ(8 * PG, s.r[0].start);
	T_EXPECT_EQ(12 * PG, s.r[0].end);
	T_EXPECT_EQ(5, s.r[0].gen);

	/* Touching on the right with another generation: stamp 0. */
	T_EXPECT_EQ(0, rc_range_set_add(&s, 12 * PG, 13 * PG, 6));
	T_EXPECT_EQ(2, s.n);
	T_EXPECT_EQ(13 * PG, s.r[0].end);
	T_EXPECT_EQ(0, s.r[0].gen);
	T_CHECK(!rc_range_set_covers(&s, 8 * PG, 9 * PG, 5));
	T_CHECK(!rc_range_set_covers(&s, 12 * PG, 13 * PG, 6));

	/* A range bridging both merges all three into one. */
	T_EXPECT_EQ(0, rc_range_set_add(&s, 13 * PG, 20 * PG, 7));
	T_EXPECT_EQ(1, s.n);
	T_EXPECT_EQ(8 * PG, s.r[0].start);
	T_EXPECT_EQ(22 * PG, s.r[0].end);
	T_EXPECT_EQ(0, s.r[0].gen);

	/* Re-confirming the whole extent stamps it again. */
	rc_range_set_free(&s);
	T_EXPECT_EQ(0, s.n);
	T_EXPECT_EQ(0, rc_range_set_add(&s, 0, PG, 3));
	T_EXPECT_EQ(0, rc_range_set_add(&s, 0, PG, 3));
	T_EXPECT_EQ(1, s.n);
	T_CHECK(rc_range_set_covers(&s, 0, PG, 3));
	T_CHECK(set_invariants_hold(&s));
	rc_range_set_free(&s);
}

static void fixed_count(void)
{
	struct rc_range_count c = { 0 };

	T_EXPECT_EQ(0, rc_range_count_get(&c, PG, 2 * PG));
	T_EXPECT_EQ(-ENOENT, rc_range_count_remove(&c, PG, 2 * PG));

	T_EXPECT_EQ(0, rc_range_count_add(&c, PG, 2 * PG));
	T_EXPECT_EQ(0, rc_range_count_add(&c, PG, 2 * PG));
	T_EXPECT_EQ(0, rc_range_count_add(&c, PG, 3 * PG));
	T_EXPECT_EQ(2, c.n);
	T_EXPECT_EQ(2, rc_range_count_get(&c, PG, 2 * PG));
	T_EXPECT_EQ(1, rc_range_count_get(&c, PG, 3 * PG));
	T_EXPECT_EQ(0, rc_range_count_get(&c, 2 * PG, 3 * PG));
	T_EXPECT_EQ(1, rc_range_count_remove(&c, PG, 2 * PG));
	T_EXPECT_EQ(0, rc_range_count_remove(&c, PG, 2 * PG));
	T_EXPECT_EQ(-ENOENT, rc_range_count_remove(&c, PG, 2 * PG));
	T_EXPECT_EQ(1, c.n);

	/* A range at address 0 (regcache_get((void *)1, 1) watches
	 * [0, 4096)) is a range like any other. */
	T_EXPECT_EQ(0, rc_range_count_add(&c, 0, PG));
	T_EXPECT_EQ(1, rc_range_count_get(&c, 0, PG));
	T_EXPECT_EQ(2, c.n);
	T_EXPECT_EQ(0, rc_range_count_remove(&c, 0, PG));
	T_EXPECT_EQ(1, c.n);
	T_CHECK(count_invariants_hold(&c));
	rc_range_count_free(&c);
	T_EXPECT_EQ(0, c.n);
}

static void record_drop(void *arg, uintptr_t start, uintptr_t end)
{
	struct rc_range_set *dropped = arg;

	T_REQUIRE(rc_range_set_add(dropped, start, end, 1) == 0);
}

static void fixed_retain(void)
{
	struct rc_range_set s = { 0 }, dropped = { 0 };
	struct rc_range_count used = { 0 };

	T_EXPECT_EQ(0, rc_range_set_retain_used(&s, &used, record_drop,
						&dropped));
	rc_range_set_add(&s, 0, 2 * PG, 1);
	rc_range_set_add(&s, 4 * PG, 6 * PG, 2);
	rc_range_set_add(&s, 8 * PG, 10 * PG, 3);
	/* Overlaps the second only at its last page; touches the third. */
	rc_range_count_add(&used, 5 * PG, 8 * PG);
	T_EXPECT_EQ(2, rc_range_set_retain_used(&s, &used, record_drop,
						&dropped));
	T_EXPECT_EQ(1, s.n);
	T_EXPECT_EQ(4 * PG, s.r[0].start);
	T_EXPECT_EQ(6 * PG, s.r[0].end);
	T_EXPECT_EQ(2, s.r[0].gen);
	T_EXPECT_EQ(2, dropped.n);
	T_EXPECT_EQ(0, dropped.r[0].start);
	T_EXPECT_EQ(8 * PG, dropped.r[1].start);
	rc_range_set_free(&s);
	rc_range_set_free(&dropped);
	rc_range_count_free(&used);
}

/* ---------------------------------------------------------------------
 * Naive models
 * ------------------------------------------------------------------- */

#define MAXM 4096

struct model_set {
	struct rc_range_stamped r[MAXM];	/* unsorted */
	size_t n;
};

static void model_set_add(struct model_set *m, uintptr_t start,
			  uintptr_t end, uint64_t gen)
{
	bool merged = true;

	/* Absorb every range that overlaps or touches, until none does. */
	while (merged) {
		merged = false;
		for (size_t i = 0; i < m->n; i++) {
			if (m->r[i].end < start || m->r[i].start > end)
				continue;
			if (m->r[i].start < start)
				start = m->r[i].start;
			if (m->r[i].end > end)
				end = m->r[i].end;
			if (m->r[i].gen != gen)
				gen = 0;
			m->r[i] = m->r[--m->n];
			merged = true;
			break;
		}
	}
	T_REQUIRE(m->n < MAXM);
	m->r[m->n++] = (struct rc_range_stamped){ start, end, gen };
}

static bool model_set_covers(const struct model_set *m, uintptr_t start,
			     uintptr_t end, uint64_t gen)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->r[i].start <= start && m->r[i].end >= end &&
		    m->r[i].gen == gen)
			return true;
	return false;
}

static int cmp_start(const void *a, const void *b)
{
	const struct rc_range_stamped *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* The structure holds exactly the model's ranges (sorted). */
static bool set_matches(const struct rc_range_set *s, struct model_set *m)
{
	qsort(m->r, m->n, sizeof(m->r[0]), cmp_start);
	if (s->n != m->n)
		return false;
	for (size_t i = 0; i < s->n; i++)
		if (s->r[i].start != m->r[i].start ||
		    s->r[i].end != m->r[i].end || s->r[i].gen != m->r[i].gen)
			return false;
	return true;
}

struct model_count {
	struct rc_range_counted e[MAXM];
	size_t n;
};

static struct rc_range_counted *model_count_find(struct model_count *m,
						 uintptr_t start,
						 uintptr_t end)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->e[i].start == start && m->e[i].end == end)
			return &m->e[i];
	return NULL;
}

static void model_count_add(struct model_count *m, uintptr_t start,
			    uintptr_t end)
{
	struct rc_range_counted *e = model_count_find(m, start, end);

	if (e) {
		e->count++;
		return;
	}
	T_REQUIRE(m->n < MAXM);
	m->e[m->n++] = (struct rc_range_counted){ start, end, 1 };
}

static int64_t model_count_remove(struct model_count *m, uintptr_t start,
				  uintptr_t end)
{
	struct rc_range_counted *e = model_count_find(m, start, end);

	if (!e)
		return -ENOENT;
	if (--e->count)
		return (int64_t)e->count;
	*e = m->e[--m->n];
	return 0;
}

/* A random range in a small universe, so that ranges collide, touch and
 * start at address 0. */
static void rnd_range(unsigned pages, uintptr_t *start, uintptr_t *end)
{
	unsigned s = rnd_below(pages), len = 1 + rnd_below(8);

	*start = (uintptr_t)s * PG;
	*end = (uintptr_t)(s + len) * PG;
}

/* ---------------------------------------------------------------------
 * Randomized runs
 * ------------------------------------------------------------------- */

static struct model_set mset, mdrop;
static struct model_count mcount;

static void random_set(unsigned steps)
{
	struct rc_range_set s = { 0 };
	unsigned bad = 0;

	mset.n = 0;
	for (unsigned i = 0; i < steps && bad < 5; i++) {
		uintptr_t start, end;
		uint64_t gen = 1 + rnd_below(3);

		if (rnd_below(64) == 0) {
			/* Start over sometimes, so the set stays small. */
			rc_range_set_free(&s);
			mset.n = 0;
		}
		rnd_range(512, &start, &end);
		T_REQUIRE(rc_range_set_add(&s, start, end, gen) == 0);
		model_set_add(&mset, start, end, gen);
		if (!set_invariants_hold(&s) || !set_matches(&s, &mset)) {
			fprintf(stderr, "set: step %u add %#lx-%#lx gen %lu: "
				"invariants %d, n expected %zu got %zu\n", i,
				(unsigned long)start, (unsigned long)end,
				(unsigned long)gen, set_invariants_hold(&s),
				mset.n, s.n);
			t_failures++;
			bad++;
		}
		rnd_range(512, &start, &end);
		gen = 1 + rnd_below(3);
		if (rc_range_set_covers(&s, start, end, gen) !=
		    model_set_covers(&mset, start, end, gen)) {
			fprintf(stderr, "set: step %u covers %#lx-%#lx gen %lu: "
				"expected %d\n", i, (unsigned long)start,
				(unsigned long)end, (unsigned long)gen,
				model_set_covers(&mset, start, end, gen));
			t_failures++;
			bad++;
		}
		/* lower: the first (sorted) model range ending above. */
		{
			size_t want = 0;

			while (want < mset.n && mset.r[want].end <= start)
				want++;
			T_EXPECT_EQ(want, rc_range_set_lower(&s, start));
		}
	}
	rc_range_set_free(&s);
}

static void random_count(unsigned steps)
{
	struct rc_range_count c = { 0 };
	unsigned bad = 0;

	mcount.n = 0;
	for (unsigned i = 0; i < steps && bad < 5; i++) {
		uintptr_t start, end;
		int64_t want, got;

		/* 512 x 8 keys: the table grows past its first size and
		 * wraps around, and deletions shift long probe runs. */
		rnd_range(512, &start, &end);
		if (rnd_below(100) < 55) {
			T_REQUIRE(rc_range_count_add(&c, start, end) == 0);
			model_count_add(&mcount, start, end);
		} else {
			want = model_count_remove(&mcount, start, end);
			got = rc_range_count_remove(&c, start, end);
			if (want != got) {
				fprintf(stderr, "count: step %u remove "
					"%#lx-%#lx: expected %lld, got %lld\n",
					i, (unsigned long)start,
					(unsigned long)end, (long long)want,
					(long long)got);
				t_failures++;
				bad++;
			}
		}
		/* The full walk costs O(cap): every 256 steps. */
		if (c.n != mcount.n ||
		    (i % 256 == 0 && !count_invariants_hold(&c))) {
			fprintf(stderr, "count: step %u: n expected %zu got %zu, "
				"invariants %d\n", i, mcount.n, c.n,
				count_invariants_hold(&c));
			t_failures++;
			bad++;
		}
		for (size_t k = 0; k < mcount.n && i % 1024 == 0; k++)
			T_EXPECT_EQ(mcount.e[k].count,
				    rc_range_count_get(&c, mcount.e[k].start,
						       mcount.e[k].end));
	}
	/* Empty it through remove alone: every count reaches 0 exactly. */
	while (mcount.n) {
		struct rc_range_counted e = mcount.e[0];

		for (uint64_t k = e.count; k > 0; k--)
			T_EXPECT_EQ(k - 1, rc_range_count_remove(&c, e.start,
								 e.end));
		mcount.e[0] = mcount.e[--mcount.n];
	}
	T_EXPECT_EQ(0, c.n);
	T_CHECK(count_invariants_hold(&c));
	rc_range_count_free(&c);
}

static void model_drop(void *arg, uintptr_t start, uintptr_t end)
{
	(void)arg;
	model_set_add(&mdrop, start, end, 1);
}

static void random_retain(unsigned rounds)
{
	for (unsigned i = 0; i < rounds; i++) {
		struct rc_range_set s = { 0 };
		struct rc_range_count used = { 0 };
		unsigned nadd = rnd_below(40), nuse = rnd_below(20);
		size_t before;
		long dropped;

		mset.n = 0;
		mcount.n = 0;
		mdrop.n = 0;
		for (unsigned k = 0; k < nadd; k++) {
			uintptr_t start, end;
			uint64_t gen = 1 + rnd_below(3);

			rnd_range(256, &start, &end);
			rc_range_set_add(&s, start, end, gen);
			model_set_add(&mset, start, end, gen);
		}
		for (unsigned k = 0; k < nuse; k++) {
			uintptr_t start, end;

			rnd_range(256, &start, &end);
			rc_range_count_add(&used, start, end);
			model_count_add(&mcount, start, end);
		}
		before = s.n;
		dropped = rc_range_set_retain_used(&s, &used, model_drop, NULL);
		T_EXPECT_EQ(before - s.n, dropped);
		/* Model: keep a range iff some used range overlaps it. */
		{
			struct model_set keep = { .n = 0 };
			size_t ndrop = 0;

			for (size_t a = 0; a < mset.n; a++) {
				bool hit = false;

				for (size_t w = 0; w < mcount.n; w++)
					if (mcount.e[w].start < mset.r[a].end &&
					    mset.r[a].start < mcount.e[w].end)
						hit = true;
				if (hit)
					keep.r[keep.n++] = mset.r[a];
				else
					ndrop++;
			}
			T_EXPECT_EQ(ndrop, dropped);
			T_EXPECT_EQ(ndrop, mdrop.n);
			if (!set_matches(&s, &keep) || !set_invariants_hold(&s)) {
				fprintf(stderr, "retain: round %u: kept set "
					"differs from the model\n", i);
				t_failures++;
			}
		}
		rc_range_set_free(&s);
		rc_range_count_free(&used);
	}
}

int main(int argc, char **argv)
{
	uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 0;
	unsigned steps = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 0) :
				    (unsigned)T_SCALE(200000);

	if (!seed) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		seed = (uint64_t)ts.tv_nsec * 2654435761u + (uint64_t)ts.tv_sec;
		seed |= 1;
	}
	rng_state = seed;
	printf("ranges-unit: seed %#llx, %u steps (rerun: ranges-unit %#llx "
	       "%u)\n", (unsigned long long)seed, steps,
	       (unsigned long long)seed, steps);

	fixed_set();
	fixed_count();
	fixed_retain();
	random_set(steps);
	random_count(steps);
	random_retain(steps / 20);
	return t_exit_status();
}
