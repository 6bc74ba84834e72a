/* SPDX-License-Identifier: MIT */
/* Small portability helpers: branch hints, atomics that name their order. */
#ifndef RC_COMPAT_H
#define RC_COMPAT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define rc_likely(x)	__builtin_expect(!!(x), 1)
#define rc_unlikely(x)	__builtin_expect(!!(x), 0)
#define rc_noinline	__attribute__((noinline))
#define rc_hidden	__attribute__((visibility("hidden")))
#define rc_cacheline	64

/* Every atomic access names its order, so a reader sees at each access
 * what it synchronises with. */
#define rc_load_relaxed(p)	atomic_load_explicit((p), memory_order_relaxed)
#define rc_load_acquire(p)	atomic_load_explicit((p), memory_order_acquire)
#define rc_store_relaxed(p, v)	atomic_store_explicit((p), (v), memory_order_relaxed)
#define rc_store_release(p, v)	atomic_store_explicit((p), (v), memory_order_release)
#define rc_fetch_add_relaxed(p, v) atomic_fetch_add_explicit((p), (v), memory_order_relaxed)
/* seq_cst RMW: a full barrier on x86; used for the Dekker pairs of refcounts */
#define rc_fetch_add_seqcst(p, v) atomic_fetch_add_explicit((p), (v), memory_order_seq_cst)
#define rc_fetch_sub_seqcst(p, v) atomic_fetch_sub_explicit((p), (v), memory_order_seq_cst)
#define rc_fence_seqcst()	atomic_thread_fence(memory_order_seq_cst)
/* Orders a thread's own accesses against the compiler only; the CPU side is
 * supplied by membarrier() in the thread that reads them (see region_refs.h,
 * rc_region_ref() and rc_region_fence_counts()). */
#define rc_compiler_fence()	atomic_signal_fence(memory_order_seq_cst)

/* Non-atomic increment of a word only one thread writes, readable by
 * others; the new value. */
#define rc_bump_relaxed(p, v)                                              \
	({                                                                 \
		__typeof__(rc_load_relaxed(p)) rc_new_ =                    \
			(__typeof__(rc_load_relaxed(p)))(rc_load_relaxed(p) + (v)); \
		rc_store_relaxed((p), rc_new_);                              \
		rc_new_;                                                     \
	})

/*
 * rc_assert(expr): an invariant check, compiled in only with RC_DEBUG
 * (cmake -DREGCACHE_DEBUG=ON), as mimalloc's mi_assert. A failure logs the
 * expression and where, then aborts. In a release build @expr is not
 * evaluated, so it may be as costly as it needs to be.
 */
#if defined(RC_DEBUG) && RC_DEBUG
#define rc_assert(expr)                                                    \
	(rc_likely(expr) ? (void)0                                         \
			 : rc_assert_fail(#expr, __FILE__, __LINE__, __func__))
#else
#define rc_assert(expr) ((void)0)
#endif
__attribute__((visibility("hidden"), noreturn, cold)) void
rc_assert_fail(const char *expr, const char *file, int line, const char *func);

#ifndef MADV_WIPEONFORK
#define MADV_WIPEONFORK 18
#endif

#endif /* RC_COMPAT_H */
