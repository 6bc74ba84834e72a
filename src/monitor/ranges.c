/* SPDX-License-Identifier: MIT */
/* Sorted stamped range sets and counted range multisets; see ranges.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ranges.h"

/* ---------------------------------------------------------------------
 * struct rc_range_set
 * ------------------------------------------------------------------- */

size_t rc_range_set_lower(const struct rc_range_set *s, uintptr_t addr)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->r[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int rc_range_set_add(struct rc_range_set *s, uintptr_t start, uintptr_t end,
		     uint64_t gen)
{
	/* The first range that overlaps or touches [start, end) is the first
	 * one with end >= start. */
	size_t i = rc_range_set_lower(s, start ? start - 1 : 0), j = i;

	while (j < s->n && s->r[j].start <= end) {
		if (s->r[j].start < start)
			start = s->r[j].start;
		if (s->r[j].end > end)
			end = s->r[j].end;
		if (s->r[j].gen != gen)
			gen = 0;
		j++;
	}
	if (i == j) {
		/* Nothing merged: make room at i. */
		if (s->n == s->cap) {
			size_t cap = s->cap ? s->cap * 2 : 64;
			void *r = realloc(s->r, cap * sizeof(*s->r));

			if (!r)
				return -ENOMEM;
			s->r = r;
			s->cap = cap;
		}
		memmove(&s->r[i + 1], &s->r[i], (s->n - i) * sizeof(*s->r));
		s->n++;
	} else if (j > i + 1) {
		/* r[i, j) become one: close the gap after r[i]. */
		memmove(&s->r[i + 1], &s->r[j], (s->n - j) * sizeof(*s->r));
		s->n -= j - i - 1;
	}
	s->r[i] = (struct rc_range_stamped){ start, end, gen };
	return 0;
}

bool rc_range_set_covers(const struct rc_range_set *s, uintptr_t start,
			 uintptr_t end, uint64_t gen)
{
	size_t i = rc_range_set_lower(s, start);

	return i < s->n && s->r[i].start <= start && s->r[i].end >= end &&
	       s->r[i].gen == gen;
}

void rc_range_set_free(struct rc_range_set *s)
{
	free(s->r);
	*s = (struct rc_range_set){ 0 };
}

/* ---------------------------------------------------------------------
 * struct rc_range_count
 * ------------------------------------------------------------------- */

static size_t count_hash(uintptr_t start, uintptr_t end)
{
	return (size_t)(((start >> 12) * 0x9e3779b97f4a7c15ull) ^
			((end >> 12) * 0xc2b2ae3d27d4eb4full)) >> 7;
}

static struct rc_range_counted *count_find(const struct rc_range_count *c,
					   uintptr_t start, uintptr_t end)
{
	size_t mask = c->cap - 1;

	if (!c->cap)
		return NULL;
	for (size_t i = count_hash(start, end) & mask;; i = (i + 1) & mask) {
		struct rc_range_counted *e = &c->slot[i];

		if (!e->end)
			return NULL;
		if (e->start == start && e->end == end)
			return e;
	}
}

static void count_place(struct rc_range_counted *tab, size_t cap,
			struct rc_range_counted e)
{
	size_t i = count_hash(e.start, e.end) & (cap - 1);

	while (tab[i].end)
		i = (i + 1) & (cap - 1);
	tab[i] = e;
}

int rc_range_count_add(struct rc_range_count *c, uintptr_t start,
		       uintptr_t end)
{
	struct rc_range_counted *e = count_find(c, start, end);

	if (e) {
		e->count++;
		return 0;
	}
	if ((c->n + 1) * 2 > c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 1024;
		struct rc_range_counted *tab = calloc(cap, sizeof(*tab));

		if (!tab)
			return -ENOMEM;
		for (size_t i = 0; i < c->cap; i++)
			if (c->slot[i].end)
				count_place(tab, cap, c->slot[i]);
		free(c->slot);
		c->slot = tab;
		c->cap = cap;
	}
	count_place(c->slot, c->cap, (struct rc_range_counted){ start, end, 1 });
	c->n++;
	return 0;
}

/* Delete slot i with backward shift, so that probing needs no tombstones. */
static void count_delete(struct rc_range_count *c, size_t i)
{
	size_t mask = c->cap - 1, j = i;

	for (;;) {
		size_t k;

		c->slot[i].end = 0;
		for (;;) {
			j = (j + 1) & mask;
			if (!c->slot[j].end)
				goto done;
			k = count_hash(c->slot[j].start, c->slot[j].end) & mask;
			/* Stays if its home k lies cyclically in (i, j]. */
			if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
				continue;
			break;
		}
		c->slot[i] = c->slot[j];
		i = j;
	}
done:
	c->n--;
}

int64_t rc_range_count_remove(struct rc_range_count *c, uintptr_t start,
			      uintptr_t end)
{
	struct rc_range_counted *e = count_find(c, start, end);

	if (!e)
		return -ENOENT;
	if (--e->count)
		return (int64_t)e->count;
	count_delete(c, (size_t)(e - c->slot));
	return 0;
}

uint64_t rc_range_count_get(const struct rc_range_count *c, uintptr_t start,
			    uintptr_t end)
{
	const struct rc_range_counted *e = count_find(c, start, end);

	return e ? e->count : 0;
}

void rc_range_count_free(struct rc_range_count *c)
{
	free(c->slot);
	*c = (struct rc_range_count){ 0 };
}

/* ---------------------------------------------------------------------
 * Both
 * ------------------------------------------------------------------- */

long rc_range_set_retain_used(struct rc_range_set *s,
			      const struct rc_range_count *used,
			      void (*drop)(void *arg, uintptr_t start,
					   uintptr_t end),
			      void *arg)
{
	size_t kept = 0, n = s->n;
	bool *keep;

	if (!n)
		return 0;
	keep = calloc(n, sizeof(*keep));
	if (!keep)
		return -ENOMEM;
	for (size_t i = 0; i < used->cap; i++) {
		const struct rc_range_counted *e = &used->slot[i];

		if (!e->end)
			continue;
		for (size_t a = rc_range_set_lower(s, e->start);
		     a < n && s->r[a].start < e->end; a++)
			keep[a] = true;
	}
	/* Compact in place: kept <= a, so r[a] is read before any write
	 * reaches it. */
	for (size_t a = 0; a < n; a++) {
		struct rc_range_stamped r = s->r[a];

		if (keep[a])
			s->r[kept++] = r;
		else if (drop)
			drop(arg, r.start, r.end);
	}
	s->n = kept;
	free(keep);
	return (long)(n - kept);
}
