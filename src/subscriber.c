/* SPDX-License-Identifier: MIT */
/*
 * Subscribers: the process-wide monitor's invalidations for caches that
 * regcache does not own (include/regcache/monitor.h). A subscriber is a
 * monitor cursor, a lock that serialises its syncs, and the set of ranges
 * it watches on behalf of a foreign cache.
 *
 * The watch set exists because the foreign caches (UCX, libfabric 1.17)
 * never say when a registration ends: a range is watched once, and its
 * watch ends when its pages change, which is exactly when the foreign
 * cache drops the registration.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include <regcache/monitor.h>

#include "base/log.h"
#include "monitor_core.h"

struct watch {
	uintptr_t start, end;	/* page-aligned; start == 0: empty slot */
	bool undo;		/* rc_monitor_unwatch() it (the ticket's) */
};

/*
 * Invariants, under lock:
 *   nwatches == number of slots of watches[] with start != 0
 *   every such range was accepted by rc_monitor_watch() and not unwatched
 *   nwatches <= cap / 2 (open addressing stays short)
 */
struct regcache_subscriber {
	struct rc_monitor_cursor cur;	/* hit path: read without lock */
	pthread_mutex_t lock;
	struct watch *watches;
	size_t cap, nwatches;
};

static uintptr_t page_mask(void)
{
	return (uintptr_t)sysconf(_SC_PAGESIZE) - 1;
}

/* Round [addr, addr+len) out to pages; false if it is empty or wraps. */
static bool page_range(const void *addr, size_t len, uintptr_t *start,
		       uintptr_t *end)
{
	uintptr_t a = (uintptr_t)addr, mask = page_mask();

	if (!len || a + len < a || a + len > UINTPTR_MAX - mask)
		return false;
	*start = a & ~mask;
	*end = (a + len + mask) & ~mask;
	return true;
}

int regcache_subscriber_create(struct regcache_subscriber **sub)
{
	struct regcache_subscriber *s;
	int ret;

	if (!sub) {
		rc_error("NULL subscriber pointer");
		return -EINVAL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	ret = rc_monitor_acquire();
	if (ret) {
		free(s);
		return ret;
	}
	pthread_mutex_init(&s->lock, NULL);
	rc_monitor_cursor_init(&s->cur);
	rc_info("subscriber %p reads monitor \"%s\"", (void *)s,
		rc_monitor_active() ? rc_monitor_active()->ops.name : "none");
	*sub = s;
	return 0;
}

void regcache_subscriber_destroy(struct regcache_subscriber *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->cap; i++)
		if (s->watches[i].start && s->watches[i].undo)
			rc_monitor_unwatch(s->watches[i].start,
					   s->watches[i].end);
	free(s->watches);
	pthread_mutex_destroy(&s->lock);
	rc_monitor_release();
	free(s);
}

unsigned regcache_subscriber_caps(const struct regcache_subscriber *s)
{
	const struct rc_monitor_active *a = rc_monitor_active();
	unsigned caps = 0;

	(void)s;
	if (!a)
		return 0;
	if (a->caps.can_cache)
		caps |= REGCACHE_MONITOR_CAN_CACHE;
	if (a->caps.can_cache && a->caps.synchronous)
		caps |= REGCACHE_MONITOR_SYNCHRONOUS;
	if (a->caps.validate_hits)
		caps |= REGCACHE_MONITOR_CHECK_HITS;
	return caps;
}

bool regcache_subscriber_current(const struct regcache_subscriber *s)
{
	return rc_monitor_current(&s->cur);
}

int regcache_subscriber_wait(struct regcache_subscriber *s, int timeout_ms)
{
	if (!s || timeout_ms < -1) {
		rc_error("NULL subscriber or bad timeout %d ms", timeout_ms);
		return -EINVAL;
	}
	return rc_monitor_wait(&s->cur, timeout_ms);
}

/* ------------------------------------------------------------------------
 * The watch set: open addressing, deletion by backward shift
 * ---------------------------------------------------------------------- */

static size_t watch_hash(uintptr_t start, uintptr_t end)
{
	return (size_t)((start ^ (end * 0x9e3779b97f4a7c15ull)) *
			0xff51afd7ed558ccdull >> 17);
}

static struct watch *watch_find(struct regcache_subscriber *s,
				uintptr_t start, uintptr_t end)
{
	if (!s->cap)
		return NULL;
	for (size_t i = watch_hash(start, end) & (s->cap - 1);;
	     i = (i + 1) & (s->cap - 1)) {
		if (!s->watches[i].start)
			return NULL;
		if (s->watches[i].start == start && s->watches[i].end == end)
			return &s->watches[i];
	}
}

static void watch_put(struct watch *tab, size_t cap, uintptr_t start,
		      uintptr_t end, bool undo)
{
	size_t i = watch_hash(start, end) & (cap - 1);

	while (tab[i].start)
		i = (i + 1) & (cap - 1);
	tab[i] = (struct watch){ start, end, undo };
}

static int watch_grow(struct regcache_subscriber *s)
{
	size_t cap = s->cap ? s->cap * 2 : 64;
	struct watch *tab = calloc(cap, sizeof(*tab));

	if (!tab)
		return -ENOMEM;
	for (size_t i = 0; i < s->cap; i++)
		if (s->watches[i].start)
			watch_put(tab, cap, s->watches[i].start,
				  s->watches[i].end, s->watches[i].undo);
	free(s->watches);
	s->watches = tab;
	s->cap = cap;
	return 0;
}

static void watch_delete(struct regcache_subscriber *s, struct watch *w)
{
	size_t mask = s->cap - 1, i = (size_t)(w - s->watches), j = i;

	s->watches[i].start = 0;
	for (;;) {
		size_t k;

		j = (j + 1) & mask;
		if (!s->watches[j].start)
			break;
		k = watch_hash(s->watches[j].start, s->watches[j].end) & mask;
		/* Stays if its home k lies cyclically in (i, j]. */
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		s->watches[i] = s->watches[j];
		s->watches[j].start = 0;
		i = j;
	}
	s->nwatches--;
}

/* Drop the watches that [start, end) overlaps: their pages changed. */
static void watch_forget_locked(struct regcache_subscriber *s, uintptr_t start,
				uintptr_t end)
{
	for (size_t i = 0; i < s->cap && s->nwatches;) {
		struct watch *w = &s->watches[i];

		if (w->start && w->start < end && start < w->end) {
			if (w->undo)
				rc_monitor_unwatch(w->start, w->end);
			/* A later slot may have shifted into i: look again. */
			watch_delete(s, w);
			continue;
		}
		i++;
	}
}

int regcache_subscriber_watch(struct regcache_subscriber *s, const void *addr,
			      size_t len)
{
	struct rc_monitor_ticket ticket;
	uintptr_t start, end;
	int ret = 0;

	if (!s || !page_range(addr, len, &start, &end)) {
		rc_error("bad range %p+%zu (NULL subscriber, empty or wrapping)",
			 addr, len);
		return -EINVAL;
	}
	pthread_mutex_lock(&s->lock);
	if (watch_find(s, start, end))
		goto out;
	if ((s->nwatches + 1) * 2 > s->cap) {
		ret = watch_grow(s);
		if (ret)
			goto out;
	}
	ret = rc_monitor_watch(start, end, &ticket);
	if (!ret) {
		watch_put(s->watches, s->cap, start, end, ticket.undo);
		s->nwatches++;
	}
out:
	pthread_mutex_unlock(&s->lock);
	return ret;
}

void regcache_subscriber_unwatch(struct regcache_subscriber *s,
				 const void *addr, size_t len)
{
	uintptr_t start, end;
	struct watch *w;

	if (!s || !page_range(addr, len, &start, &end))
		return;
	pthread_mutex_lock(&s->lock);
	w = watch_find(s, start, end);
	if (w) {
		if (w->undo)
			rc_monitor_unwatch(start, end);
		watch_delete(s, w);
	}
	pthread_mutex_unlock(&s->lock);
}

int regcache_subscriber_check(const struct regcache_subscriber *s,
			      const void *addr, size_t len)
{
	uintptr_t start, end;

	if (!s || !page_range(addr, len, &start, &end))
		return -EINVAL;
	if (!rc_monitor_validates_hits())
		return 0;
	return rc_monitor_validate(start, end) ? -ESTALE : 0;
}

/* ------------------------------------------------------------------------
 * Sync
 * ---------------------------------------------------------------------- */

struct sync_ctx {
	struct regcache_subscriber *s;
	regcache_changed_fn *fn;
	void *arg;
	int n;
};

static void report(void *arg, uintptr_t start, uintptr_t end)
{
	struct sync_ctx *x = arg;

	watch_forget_locked(x->s, start, end);
	x->fn(x->arg, start, end);
	x->n++;
}

int regcache_subscriber_sync(struct regcache_subscriber *s,
			     regcache_changed_fn *fn, void *arg)
{
	struct sync_ctx x = { .s = s, .fn = fn, .arg = arg };

	if (!s || !fn) {
		rc_error("NULL subscriber or callback");
		return -EINVAL;
	}
	pthread_mutex_lock(&s->lock);
	/* A thread that waited for another's sync may find nothing left;
	 * rc_monitor_sync() then reports nothing and returns at once. */
	switch (rc_monitor_sync(&s->cur, report, &x)) {
	case RC_MONITOR_SYNCED:
		break;
	case RC_MONITOR_SWITCHED:
		/* Another backend took over: a watch with an undo was taken
		 * by it (only a backend without ->unwatch hands over), so
		 * undo those; the retired one's need nothing. */
		for (size_t i = 0; i < s->cap; i++)
			if (s->watches[i].start && s->watches[i].undo)
				rc_monitor_unwatch(s->watches[i].start,
						   s->watches[i].end);
		/* fall through */
	case RC_MONITOR_FORKED:
		/* Tell the foreign cache everything changed (after a fork its
		 * registrations are the parent's: it decides what to keep),
		 * and forget the watch set; after a fork without unwatching:
		 * the child's monitor is a fresh one. */
		free(s->watches);
		s->watches = NULL;
		s->cap = s->nwatches = 0;
		fn(arg, 0, UINTPTR_MAX);
		x.n++;
		rc_monitor_cursor_init(&s->cur);
	}
	pthread_mutex_unlock(&s->lock);
	return x.n;
}
