/* SPDX-License-Identifier: MIT */
/*
 * Two pure structures over address ranges [start, end), used by the
 * userfaultfd backend's bookkeeping. Neither knows what a range means:
 * each function takes its structure as an argument, takes no lock and
 * calls the kernel for nothing but memory. The caller serialises.
 *
 *  - struct rc_range_set: sorted, merged ranges, each stamped with a
 *    generation ("what we registered, and when it was last confirmed").
 *  - struct rc_range_count: a counted multiset of exact ranges ("what is
 *    watched, and how many times").
 *
 * Both start zeroed (= empty) and are emptied by their _free().
 */
#ifndef RC_MONITOR_RANGES_H
#define RC_MONITOR_RANGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../base/compat.h"

/**
 * struct rc_range_stamped - one range of a struct rc_range_set
 * @start: first byte.
 * @end:   one past the last byte.
 * @gen:   the generation its whole extent was last confirmed at, or 0 when
 *         parts of it were confirmed at different generations.
 */
struct rc_range_stamped {
	uintptr_t start, end;
	uint64_t gen;
};

/**
 * struct rc_range_set - sorted, merged, generation-stamped ranges
 * @r:   the ranges, @n of them, in an array of @cap.
 * @n:   number of ranges.
 * @cap: allocated entries.
 *
 * Invariants, for 0 <= i < n:
 *   r[i].start < r[i].end
 *   i + 1 < n  =>  r[i].end < r[i + 1].start   (disjoint, never touching:
 *                                              touching ranges are merged)
 *   n <= cap
 */
struct rc_range_set {
	struct rc_range_stamped *r;
	size_t n, cap;
};

/**
 * rc_range_set_lower - index of the first range that ends above @addr
 * @s:    the set.
 * @addr: an address.
 *
 * Return: the smallest i with s->r[i].end > addr, or s->n if none. O(log n).
 */
rc_hidden size_t rc_range_set_lower(const struct rc_range_set *s,
				    uintptr_t addr);

/**
 * rc_range_set_add - add [start, end) confirmed at @gen
 * @s:     the set.
 * @start: first byte; @start < @end.
 * @end:   one past the last byte.
 * @gen:   the generation the range is confirmed at (non-zero).
 *
 * Merges the range with every range it overlaps or touches. The merged
 * range keeps @gen only if every range merged into it carried @gen, and
 * gets 0 otherwise: a part confirmed at an older generation must not be
 * vouched for by the new confirmation.
 *
 * Return: 0, or -ENOMEM (the set is unchanged).
 */
rc_hidden int rc_range_set_add(struct rc_range_set *s, uintptr_t start,
			       uintptr_t end, uint64_t gen);

/**
 * rc_range_set_covers - is [start, end) inside one range stamped @gen?
 * @s:     the set.
 * @start: first byte; @start < @end.
 * @end:   one past the last byte.
 * @gen:   the generation asked about (non-zero).
 *
 * Return: true if some s->r[i] has start <= @start, @end <= end and
 * gen == @gen. O(log n).
 */
rc_hidden bool rc_range_set_covers(const struct rc_range_set *s,
				   uintptr_t start, uintptr_t end,
				   uint64_t gen);

/** rc_range_set_free - release the array; @s is empty afterwards */
rc_hidden void rc_range_set_free(struct rc_range_set *s);

/**
 * struct rc_range_counted - one slot of a struct rc_range_count
 * @start: first byte.
 * @end:   one past the last byte; 0 marks an empty slot (a range always
 *         has end > start >= 0, so 0 is never a range's end).
 * @count: how many times the range was added and not yet removed (>= 1).
 */
struct rc_range_counted {
	uintptr_t start, end;
	uint64_t count;
};

/**
 * struct rc_range_count - counted multiset of exact ranges
 * @slot: open-addressing table with linear probing, @cap slots.
 * @n:    distinct ranges held.
 * @cap:  0 or a power of two.
 *
 * Invariants:
 *   n == number of slots with end != 0
 *   2 * n <= cap
 *   no two used slots hold the same (start, end)
 *   a used slot is reachable from its hash slot without crossing an empty
 *   one (deletion shifts entries back; there are no tombstones)
 */
struct rc_range_count {
	struct rc_range_counted *slot;
	size_t n, cap;
};

/**
 * rc_range_count_add - count [start, end) once more
 * @c:     the multiset.
 * @start: first byte; @start < @end.
 * @end:   one past the last byte.
 *
 * Return: 0, or -ENOMEM (the multiset is unchanged).
 */
rc_hidden int rc_range_count_add(struct rc_range_count *c, uintptr_t start,
				 uintptr_t end);

/**
 * rc_range_count_remove - count [start, end) once less
 * @c:     the multiset.
 * @start: first byte.
 * @end:   one past the last byte.
 *
 * A range whose count reaches 0 leaves the multiset.
 *
 * Return: the count left (0 when the range left), or -ENOENT when the
 * range was not in the multiset (nothing changes).
 */
rc_hidden int64_t rc_range_count_remove(struct rc_range_count *c,
					uintptr_t start, uintptr_t end);

/**
 * rc_range_count_get - how many times [start, end) is counted
 * @c:     the multiset.
 * @start: first byte.
 * @end:   one past the last byte.
 *
 * Return: the count, 0 when absent.
 */
rc_hidden uint64_t rc_range_count_get(const struct rc_range_count *c,
				      uintptr_t start, uintptr_t end);

/** rc_range_count_free - release the table; @c is empty afterwards */
rc_hidden void rc_range_count_free(struct rc_range_count *c);

/**
 * rc_range_set_retain_used - drop every range that no counted range overlaps
 * @s:    the set.
 * @used: the multiset whose ranges keep a range of @s.
 * @drop: called with each range removed, after it left @s; it must not use
 *        @s or @used.
 * @arg:  passed to @drop.
 *
 * Afterwards every s->r[i] overlaps some range of @used, and the ranges
 * that stayed are unchanged (same extent and generation). O(W log n + n)
 * for W distinct counted ranges.
 *
 * Return: the number of ranges dropped, or -ENOMEM (nothing changes).
 */
rc_hidden long rc_range_set_retain_used(struct rc_range_set *s,
					const struct rc_range_count *used,
					void (*drop)(void *arg, uintptr_t start,
						     uintptr_t end),
					void *arg);

#endif /* RC_MONITOR_RANGES_H */
