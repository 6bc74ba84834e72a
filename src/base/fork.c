/* SPDX-License-Identifier: MIT */
/* The one pthread_atfork() of the library (see fork.h). */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "fork.h"

static pthread_once_t registered = PTHREAD_ONCE_INIT;
/* In lock order (enum rc_fork_part): prepare walks it down, parent and
 * child walk it up. Set before the part's bit in @enabled. */
static const struct rc_fork_handlers *_Atomic parts[RC_FORK_PARTS];
/* Bit i: parts[i] is in use. Only ever grows. */
static atomic_uint enabled;
/*
 * Taken first and released last: two threads that fork at once go through
 * the handlers one after the other, so @held, the parts this fork's
 * prepare took, is the set its parent or child handler releases, even if
 * a part was enabled in between.
 */
static pthread_mutex_t fork_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned held;

static const struct rc_fork_handlers *part(int i)
{
	return atomic_load_explicit(&parts[i], memory_order_relaxed);
}

static void fork_prepare(void)
{
	pthread_mutex_lock(&fork_lock);
	held = atomic_load_explicit(&enabled, memory_order_acquire);
	for (int i = 0; i < RC_FORK_PARTS; i++)
		if ((held & 1u << i) && part(i)->prepare)
			part(i)->prepare();
}

static void fork_parent(void)
{
	for (int i = RC_FORK_PARTS - 1; i >= 0; i--)
		if ((held & 1u << i) && part(i)->parent)
			part(i)->parent();
	pthread_mutex_unlock(&fork_lock);
}

static void fork_child(void)
{
	for (int i = RC_FORK_PARTS - 1; i >= 0; i--)
		if ((held & 1u << i) && part(i)->child)
			part(i)->child();
	pthread_mutex_unlock(&fork_lock);
}

static void fork_register(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

void rc_fork_enable(enum rc_fork_part p, const struct rc_fork_handlers *h)
{
	pthread_once(&registered, fork_register);
	atomic_store_explicit(&parts[p], h, memory_order_relaxed);
	atomic_fetch_or_explicit(&enabled, 1u << p, memory_order_release);
}
