/* SPDX-License-Identifier: MIT */
/*
 * The process's pinned-memory budget, shared by every cache: the kernel
 * counts pinned pages per process (verbs: mm->pinned_vm) or per user
 * (io_uring: user->locked_vm) against one RLIMIT_MEMLOCK, never per cache.
 *
 * The budget is $REGCACHE_MAX_BYTES if set; else unlimited where the
 * process has CAP_IPC_LOCK or the limit is infinite (the kernel then checks
 * nothing); else 3/4 of RLIMIT_MEMLOCK, leaving the rest to the
 * application's own pinning. Caches whose registrations follow the page
 * tables (implicit ODP) pin nothing and are not charged.
 */
#ifndef RC_BUDGET_H
#define RC_BUDGET_H

#include <stdbool.h>
#include <stddef.h>

#include "base/compat.h"

/* The budget in bytes; SIZE_MAX when unlimited. Computed once. */
rc_hidden size_t rc_budget_limit(void);
/* Why the budget is what it is, for log lines. */
rc_hidden const char *rc_budget_source(void);
/* Pinned bytes registered now, by every cache of the process. */
rc_hidden size_t rc_budget_used(void);
/* @len more bytes would stay within the budget. */
rc_hidden bool rc_budget_fits(size_t len);
rc_hidden void rc_budget_charge(size_t len);
rc_hidden void rc_budget_release(size_t len);

#endif /* RC_BUDGET_H */
