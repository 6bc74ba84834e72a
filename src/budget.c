/* SPDX-License-Identifier: MIT */
/* The process's pinned-memory budget (see budget.h). */
#include <linux/capability.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "budget.h"
#include "base/env.h"
#include "base/log.h"

static pthread_once_t budget_once = PTHREAD_ONCE_INIT;
static size_t budget_limit;
static char budget_source[96];
static _Atomic size_t budget_used;

/* CAP_IPC_LOCK in the effective set: the kernel does not check
 * RLIMIT_MEMLOCK for pinning (mm/mlock.c can_do_mlock, io_uring
 * __io_account_mem, ib_umem_get). */
static bool can_lock_unlimited(void)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[2] = { 0 };

	if (syscall(SYS_capget, &hdr, data))
		return false;
	return data[CAP_TO_INDEX(CAP_IPC_LOCK)].effective &
	       CAP_TO_MASK(CAP_IPC_LOCK);
}

static void budget_init(void)
{
	size_t env = rc_env_size(RC_ENV_MAX_BYTES);
	struct rlimit rl;

	if (env) {
		budget_limit = env;
		snprintf(budget_source, sizeof(budget_source),
			 "%zu bytes ($REGCACHE_MAX_BYTES)", env);
	} else if (can_lock_unlimited()) {
		budget_limit = SIZE_MAX;
		snprintf(budget_source, sizeof(budget_source),
			 "unlimited (CAP_IPC_LOCK)");
	} else if (getrlimit(RLIMIT_MEMLOCK, &rl) ||
		   rl.rlim_cur == RLIM_INFINITY) {
		budget_limit = SIZE_MAX;
		snprintf(budget_source, sizeof(budget_source),
			 "unlimited (RLIMIT_MEMLOCK is infinite)");
	} else {
		budget_limit = rl.rlim_cur / 4 * 3;
		snprintf(budget_source, sizeof(budget_source),
			 "%zu bytes (3/4 of RLIMIT_MEMLOCK, %llu bytes)",
			 budget_limit, (unsigned long long)rl.rlim_cur);
	}
}

size_t rc_budget_limit(void)
{
	pthread_once(&budget_once, budget_init);
	return budget_limit;
}

const char *rc_budget_source(void)
{
	pthread_once(&budget_once, budget_init);
	return budget_source;
}

size_t rc_budget_used(void)
{
	return rc_load_relaxed(&budget_used);
}

bool rc_budget_fits(size_t len)
{
	size_t limit = rc_budget_limit();

	return len <= limit && rc_budget_used() <= limit - len;
}

void rc_budget_charge(size_t len)
{
	rc_fetch_add_relaxed(&budget_used, len);
}

void rc_budget_release(size_t len)
{
	atomic_fetch_sub_explicit(&budget_used, len, memory_order_relaxed);
}
