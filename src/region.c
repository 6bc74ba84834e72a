/* SPDX-License-Identifier: MIT */
/*
 * Regions: the thread reference slots and the fences that make them safe,
 * and type-stable allocation (see region_refs.h and region_pool.h).
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/fork.h"
#include "base/log.h"
#include "region.h"
#include "region_pool.h"
#include "region_refs.h"

_Static_assert(sizeof(struct rc_region) == 48, "a region is 48 bytes");
_Static_assert(offsetof(struct rc_region, shared_refs) == 32,
	       "hits and puts touch the first 32 bytes");
_Static_assert(sizeof(struct rc_slab) == 64, "the slab header is one line");

/* ---------------------------------------------------------------------
 * Thread reference slots
 * ------------------------------------------------------------------- */

/* Threads beyond this many at once count in shared_refs. The tables are
 * zero pages until a thread uses one (2 KiB each). */
#define RC_THREAD_TABLES 1024

/* table_state[]: whether a table's owner may still count with plain stores. */
enum { TABLE_TRUSTED, TABLE_REVOKED, TABLE_GIVEN_UP };

__thread struct rc_thread_refs *rc_my_refs;

static struct rc_thread_refs tables[RC_THREAD_TABLES];
static _Atomic bool table_taken[RC_THREAD_TABLES];
static _Atomic uint8_t table_state[RC_THREAD_TABLES];
/* Tables [0, tables_used) may hold counts: what rc_region_refs() reads. */
static _Atomic unsigned tables_used;

static pthread_once_t slots_once = PTHREAD_ONCE_INIT;
static pthread_key_t slots_key;
/* membarrier() registered: threads may take tables. Cleared for good when
 * membarrier() fails later (revoke_all()). */
static _Atomic bool slots_usable;
/* Slots were revoked; revoked_owners tables still have an owner that may
 * count in them with plain stores. */
static _Atomic bool slots_revoked;
static _Atomic unsigned revoked_owners;
static pthread_mutex_t revoke_lock = PTHREAD_MUTEX_INITIALIZER;

/* The owner of a revoked table leaves it (its slot was missed, or it
 * exits): every plain store it made to the table comes before this
 * release RMW, which whoever reads revoked_owners as zero acquires. */
static void table_leave(struct rc_thread_refs *t)
{
	uint8_t state = TABLE_REVOKED;

	if (atomic_compare_exchange_strong(&table_state[t - tables], &state,
					   TABLE_GIVEN_UP))
		atomic_fetch_sub_explicit(&revoked_owners, 1,
					  memory_order_seq_cst);
}

/* A thread exits: move its counts to the regions' shared_refs, then free
 * its table for the next thread. The RMW comes before the release store
 * that empties the slot, so a reader that sees the slot empty (acquire)
 * sees the count in shared_refs: it may count a reference twice, never
 * miss one. */
static void thread_exit(void *arg)
{
	struct rc_thread_refs *t = arg;

	rc_my_refs = NULL;
	for (size_t i = 0; i < RC_THREAD_SLOTS; i++) {
		uint64_t v = rc_load_relaxed(&t->slot[i]);
		struct rc_region *r = (struct rc_region *)rc_ref_region(v);

		if (v >= RC_REF_ONE && r)
			rc_fetch_add_seqcst(&r->shared_refs,
					    (uint32_t)(v >> 48));
		rc_store_release(&t->slot[i], 0);
	}
	/* Left for good, whether revoked yet or not: a revoke_all() that
	 * comes later finds it not TRUSTED and does not wait for it. The
	 * next owner makes it TRUSTED again (take_table()). */
	if (atomic_exchange(&table_state[t - tables], TABLE_GIVEN_UP) ==
	    TABLE_REVOKED)
		atomic_fetch_sub(&revoked_owners, 1);
	rc_store_release(&table_taken[t - tables], false);
}

/* A forked child has one thread, the one that forked: the other tables'
 * owners do not exist there, and the membarrier() registration belonged to
 * the parent's mm. Register again, or count with RMWs from now on. */
static void slots_forked_child(void)
{
	pthread_mutex_init(&revoke_lock, NULL);
	if (rc_load_relaxed(&slots_revoked)) {
		/* Revoked in the parent: no owner is left to wait for. */
		for (unsigned i = 0; i < RC_THREAD_TABLES; i++)
			if (rc_load_relaxed(&table_state[i]) == TABLE_REVOKED)
				rc_store_relaxed(&table_state[i],
						 TABLE_GIVEN_UP);
		rc_store_relaxed(&revoked_owners, 0);
		rc_my_refs = NULL;
		return;
	}
	if (!rc_load_relaxed(&slots_usable) ||
	    !syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED,
		     0, 0))
		return;
	/* Nobody but this thread can store to a table any more. */
	rc_store_relaxed(&slots_usable, false);
	rc_my_refs = NULL;
}

static const struct rc_fork_handlers slots_fork = {
	.child = slots_forked_child
};

/* Registering for the expedited private command is per process and
 * idempotent. Where it fails (old kernel, seccomp, valgrind) no thread
 * gets slots: every count is an RMW, correct but slower. */
static void slots_init(void)
{
	long ret = syscall(SYS_membarrier,
			   MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0);

	if (ret) {
		rc_info("membarrier unavailable (%s): hits use atomic "
			"reference counts", strerror(errno));
		return;
	}
	if (pthread_key_create(&slots_key, thread_exit))
		return;
	rc_fork_enable(RC_FORK_SLOTS, &slots_fork);
	rc_store_relaxed(&slots_usable, true);
}

static struct rc_thread_refs *take_table(void)
{
	for (unsigned i = 0; i < RC_THREAD_TABLES; i++) {
		bool expected = false;
		unsigned used;

		if (rc_load_relaxed(&table_taken[i]) ||
		    !atomic_compare_exchange_strong(&table_taken[i], &expected,
						    true))
			continue;
		atomic_store(&table_state[i], TABLE_TRUSTED);
		/* Publish the table to readers before the first count in it. */
		used = rc_load_relaxed(&tables_used);
		while (used <= i &&
		       !atomic_compare_exchange_weak(&tables_used, &used, i + 1))
			;
		/* Against revoke_all(), which clears slots_usable and then
		 * looks at table_taken: one of us sees the other. */
		if (!atomic_load(&slots_usable)) {
			rc_store_release(&table_taken[i], false);
			return NULL;
		}
		return &tables[i];
	}
	return NULL;
}

void rc_region_count_up_shared(struct rc_region *r)
{
	struct rc_thread_refs *t = rc_my_refs;

	/* A thread's first reference, or one that found its slot taken. */
	if (!t && rc_load_relaxed(&slots_usable)) {
		t = take_table();
		if (t && !pthread_setspecific(slots_key, t)) {
			rc_my_refs = t;
			rc_region_count_up(r);
			return;
		}
		if (t)
			rc_store_release(&table_taken[t - tables], false);
	} else if (t) {
		rc_region_slot_missed(t);
	}
	rc_fetch_add_seqcst(&r->shared_refs, 1);
}

void rc_region_slot_missed(struct rc_thread_refs *t)
{
	if (rc_likely(rc_load_relaxed(&table_state[t - tables]) !=
		      TABLE_REVOKED))
		return;
	/* Never store to the table again: its counts stay where readers
	 * find them, and our puts of them count down shared_refs. */
	rc_my_refs = NULL;
	table_leave(t);
}

uint32_t rc_region_slot_refs(const struct rc_region *r)
{
	unsigned used = rc_load_acquire(&tables_used);
	uint32_t n = 0;

	for (unsigned i = 0; i < used; i++) {
		uint64_t v = rc_load_acquire(rc_ref_slot(&tables[i], r));

		if (rc_ref_region(v) == (uintptr_t)r)
			n += (uint32_t)(v >> 48);
	}
	return n;
}

uint32_t rc_region_refs(const struct rc_region *r)
{
	/* Slots before shared_refs: see thread_exit(). */
	uint32_t n = rc_region_slot_refs(r);

	return n + rc_load_acquire(&r->shared_refs);
}

/* Mark every slot of @t revoked. Its owner may overwrite a mark with a
 * plain store based on what it read before (then it keeps counting in that
 * slot until it misses another): so this runs again at every fence until
 * the owner has left. */
static void revoke_table(struct rc_thread_refs *t)
{
	for (size_t i = 0; i < RC_THREAD_SLOTS; i++) {
		uint64_t v = rc_load_relaxed(&t->slot[i]);
		uint64_t mark = v >= RC_REF_ONE ? v | RC_REF_REVOKED
						: RC_REF_MAX | RC_REF_REVOKED;

		while (!(v & RC_REF_REVOKED) &&
		       !atomic_compare_exchange_weak(&t->slot[i], &v, mark))
			mark = v >= RC_REF_ONE ? v | RC_REF_REVOKED
					       : RC_REF_MAX | RC_REF_REVOKED;
	}
}

/* membarrier() failed with slots in use: stop handing them out and revoke
 * the ones taken (see References in region.h). The caller leaves its own
 * table at once. */
static void revoke_all(int err)
{
	unsigned used;

	pthread_mutex_lock(&revoke_lock);
	if (!rc_load_relaxed(&slots_revoked)) {
		rc_warn("membarrier failed (%s) after threads took reference "
			"slots: revoking them; killed regions stay registered "
			"until every such thread has made one more regcache "
			"call or exited", strerror(err));
		atomic_store(&slots_usable, false);
		used = atomic_load(&tables_used);
		for (unsigned i = 0; i < used; i++) {
			uint8_t state = TABLE_TRUSTED;

			if (!atomic_load(&table_taken[i]))
				continue;
			atomic_fetch_add(&revoked_owners, 1);
			if (!atomic_compare_exchange_strong(&table_state[i],
							    &state,
							    TABLE_REVOKED))
				atomic_fetch_sub(&revoked_owners, 1);
		}
		atomic_store(&slots_revoked, true);
	}
	/* Again at every call: an owner may have overwritten a mark. */
	if (atomic_load(&revoked_owners)) {
		used = atomic_load(&tables_used);
		for (unsigned i = 0; i < used; i++)
			if (rc_load_relaxed(&table_state[i]) == TABLE_REVOKED)
				revoke_table(&tables[i]);
	}
	pthread_mutex_unlock(&revoke_lock);
	if (rc_my_refs)
		rc_region_slot_missed(rc_my_refs);
}

/* Pairs with the getter's plain slot store + compiler fence in
 * rc_region_count_up(): after this returns true, every thread's earlier
 * store is visible here, or that thread's later load of seq sees the
 * kill. */
bool rc_region_fence_counts(void)
{
	if (rc_load_relaxed(&slots_usable) &&
	    !syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0))
		return true;
	if (rc_load_relaxed(&slots_usable) || rc_load_relaxed(&slots_revoked))
		revoke_all(errno);
	/* Every count is now an RMW, or a plain store that came before an
	 * owner's release in table_leave() (acquired here). */
	if (atomic_load_explicit(&revoked_owners, memory_order_acquire))
		return false;
	rc_fence_seqcst();
	return true;
}

/* ---------------------------------------------------------------------
 * Lifecycle and the pool
 * ------------------------------------------------------------------- */

void rc_region_make_live(struct rc_region *r)
{
	uint32_t seq = rc_load_relaxed(&r->seq);

	rc_region_count_up(r);
	/* Release pairs with the acquire of seq in regcache_get(): a hit that
	 * sees the new LIVE value sees the fields rc_region_fill() wrote. */
	rc_store_release(&r->seq, (seq | 3u) + 1);
}

#define RC_POOL_MAX_SLABS ((uint32_t)1 << (RC_REGION_NUM_BITS - RC_SLAB_NUM_BITS))

/* Region number 0 of every pool (struct rc_region_table). */
static struct rc_region no_region = { .seq = RC_SEQ_FREE };

int rc_region_pool_init(struct rc_region_pool *pool, size_t max_regions)
{
	static _Atomic uint32_t next_tag = 1;
	/* Room for dead and pass-through regions beyond the live ones, which
	 * callers may hold in any number: 4x max_regions, at least 2^20. */
	size_t want = max_regions < ((size_t)1 << 18) ? (size_t)1 << 20
			: max_regions > (size_t)RC_POOL_MAX_SLABS * RC_SLAB_REGIONS
			? (size_t)RC_POOL_MAX_SLABS * RC_SLAB_REGIONS
			: max_regions * 4;	/* no overflow: bounded above */
	size_t cap = 1 + (want + RC_SLAB_REGIONS - 1) / RC_SLAB_REGIONS;

	pthread_once(&slots_once, slots_init);
	memset(pool, 0, sizeof(*pool));
	if (cap > RC_POOL_MAX_SLABS)
		cap = RC_POOL_MAX_SLABS;
	pool->table.slab = calloc(cap, sizeof(*pool->table.slab));
	if (!pool->table.slab)
		return -ENOMEM;
	pool->table.cap = (uint32_t)cap;
	pool->table.slab[0] = &no_region;
	pool->table.nslabs = 1;
	pool->tag = rc_fetch_add_relaxed(&next_tag, 1) & RC_REGION_TAG_MASK;
	rc_region_list_init(&pool->free);
	return 0;
}

void rc_region_pool_fini(struct rc_region_pool *pool)
{
	struct rc_slab *slab;

	while ((slab = pool->slabs)) {
		pool->slabs = slab->next;
		rc_region_slab_free(slab);
	}
	free(pool->table.slab);
	pool->table.slab = NULL;
}

struct rc_region *rc_region_alloc_locked(struct rc_region_pool *pool)
{
	struct rc_region *r = rc_region_list_first(pool->table.slab, &pool->free);

	if (r)
		rc_region_list_remove(pool->table.slab, &pool->free, r);
	return r;
}

/* Slabs are mapped, not allocated: the alignment they need would cost
 * malloc a page of its own per slab. Twice the size is mapped and the
 * aligned half used; the rest is never touched, so it costs address space
 * only, and nothing is unmapped until the slab is freed. */
#define SLAB_MAP_BYTES (2 * RC_SLAB_BYTES)

struct rc_slab *rc_region_slab_new(struct rc_region_pool *pool)
{
	void *map = mmap(NULL, SLAB_MAP_BYTES, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct rc_slab *slab;

	if (map == MAP_FAILED)
		return NULL;
	slab = (struct rc_slab *)(((uintptr_t)map + RC_SLAB_BYTES - 1) &
				  ~(RC_SLAB_BYTES - 1));
	slab->map = map;
	/* Slot pointers need 48 bits: the kernel maps nothing above 2^47
	 * (x86-64, also with 5-level paging) or 2^48 (arm64) unless asked
	 * to with a hint, and we do not ask. */
	if ((uintptr_t)slab + RC_SLAB_BYTES > RC_REF_ONE) {
		rc_error("region memory at %p is above 2^48", (void *)slab);
		rc_region_slab_free(slab);
		return NULL;
	}
	/* Fresh anonymous memory is zeroed. */
	for (size_t i = 0; i < RC_SLAB_REGIONS; i++) {
		rc_store_relaxed(&slab->regions[i].seq, RC_SEQ_FREE);
		rc_store_relaxed(&slab->regions[i].tag_flags,
				 (uint16_t)(pool->tag & RC_REGION_TAG_MASK));
	}
	return slab;
}

void rc_region_slab_free(struct rc_slab *slab)
{
	munmap(slab->map, SLAB_MAP_BYTES);
}

bool rc_region_slab_add_locked(struct rc_region_pool *pool,
			       struct rc_slab *slab)
{
	struct rc_region_table *t = &pool->table;

	if (t->nslabs == t->cap) {
		rc_error("region pool full: %u slabs of %zu regions at once "
			 "(held dead or pass-through ones included)", t->cap - 1,
			 (size_t)RC_SLAB_REGIONS);
		return false;
	}
	rc_region_slab_format(slab, t->nslabs);
	t->slab[t->nslabs++] = slab->regions;
	slab->next = pool->slabs;
	pool->slabs = slab;
	for (uint32_t i = 0; i < RC_SLAB_REGIONS; i++)
		rc_region_list_insert_tail(t->slab, &pool->free, &slab->regions[i]);
	return true;
}

void rc_region_free_locked(struct rc_region_pool *pool, struct rc_region *r)
{
	rc_store_relaxed(&r->seq, rc_load_relaxed(&r->seq) | RC_SEQ_FREE);
	/* A second put of a pass-through region finds it not pass-through. */
	rc_region_set_flags(r, 0);
	rc_region_list_insert_head(pool->table.slab, &pool->free, r);
}

bool rc_region_forget_locked(struct rc_region_pool *pool, struct rc_region *r)
{
	rc_store_relaxed(&r->seq, rc_load_relaxed(&r->seq) | RC_SEQ_FREE);
	if (rc_region_refs(r)) {
		rc_region_set_flags(r, rc_region_flags(r) |
					       RC_REGION_FORGOTTEN);
		return false;
	}
	rc_region_free_locked(pool, r);
	return true;
}
