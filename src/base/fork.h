/* SPDX-License-Identifier: MIT */
/*
 * The library's one pthread_atfork() (fork.c). Its prepare handler takes,
 * in the order of enum rc_fork_part (the lock order of docs/design.md,
 * "Fork"), the lock of every part that is in use, so that a child never
 * inherits one held by a thread it does not have; the parent and child
 * handlers release them in the reverse order, and reset in the child what
 * belonged to the parent's threads or mm.
 *
 * A part calls rc_fork_enable() with its handlers once its state exists
 * and before its lock can first be taken; from the next fork on, they run.
 */
#ifndef RC_FORK_H
#define RC_FORK_H

#include "compat.h"

/* Outermost first: a lock of a part is never taken while a lock of a
 * later part is held. */
enum rc_fork_part {
	RC_FORK_CACHES,		/* cache.c: caches_lock */
	RC_FORK_SLOTS,		/* region.c: nothing held; child resets */
	RC_FORK_MONITOR,	/* monitor_core.c: mon_lock */
	RC_FORK_REGCACHED,	/* monitor/regcached.c: rb.sock_lock */
	RC_FORK_BPF,		/* monitor/bpf.c: ebpf.files.lock */
	RC_FORK_UFFD,		/* monitor/uffd.c: rc_uffd.lock */
	RC_FORK_WAITER,		/* monitor_core.c: none held; child resets */
	RC_FORK_PARTS
};

/* A part's handlers: prepare takes its lock, parent releases it, child
 * releases or resets it. Any may be NULL. */
struct rc_fork_handlers {
	void (*prepare)(void);
	void (*parent)(void);
	void (*child)(void);
};

/* From the next fork on, run @h (static, the same on every call) as
 * @part's handlers. Lock-free once registered: callable under any lock of
 * the library. */
rc_hidden void rc_fork_enable(enum rc_fork_part part,
			      const struct rc_fork_handlers *h);

#endif /* RC_FORK_H */
