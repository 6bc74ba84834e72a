/* SPDX-License-Identifier: MIT */
/*
 * The "none" backend: watches nothing, so every get is served pass-through.
 * Chosen when neither eBPF nor userfaultfd is available, or on request.
 */
#include <errno.h>

#include "backend.h"

static int none_start(struct rc_monitor *mon)
{
	mon->caps = (struct rc_monitor_caps){ .can_cache = false };
	return 0;
}

static int none_watch(struct rc_monitor *mon, uintptr_t start, uintptr_t end)
{
	(void)mon, (void)start, (void)end;
	return -EOPNOTSUPP;
}

static void none_stop(struct rc_monitor *mon)
{
	(void)mon;
}

const struct rc_monitor_ops rc_monitor_none_ops = {
	.name = "none",
	.start = none_start,
	.watch = none_watch,
	.stop = none_stop,
};
