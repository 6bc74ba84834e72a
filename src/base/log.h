/* SPDX-License-Identifier: MIT */
/*
 * Logging: one line to stderr, formatted on the stack (the monitor thread may
 * not allocate), level from $REGCACHE_LOG, repeats from one call site
 * rate-limited. Never used on the hit path.
 */
#ifndef RC_LOG_H
#define RC_LOG_H

#include <stdatomic.h>

#include "compat.h"

enum rc_log_level {
	RC_LOG_ERROR,
	RC_LOG_WARN,
	RC_LOG_INFO,
	RC_LOG_DEBUG,
};

/* How many lines one call site may print before it goes quiet. */
#define RC_LOG_REPEATS 5

rc_hidden void rc_log_at(enum rc_log_level level, const char *func, int line,
			 const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
rc_hidden int rc_log_level(void);

/* Each call site has its own budget of RC_LOG_REPEATS lines. */
#define rc_log(level, ...)                                                   \
	do {                                                                 \
		static atomic_uint rc_log_count_;                            \
		if ((int)(level) <= rc_log_level() &&                        \
		    atomic_fetch_add_explicit(&rc_log_count_, 1,             \
					      memory_order_relaxed) <        \
			    RC_LOG_REPEATS)                                  \
			rc_log_at((level), __func__, __LINE__, __VA_ARGS__); \
	} while (0)

#define rc_error(...) rc_log(RC_LOG_ERROR, __VA_ARGS__)
#define rc_warn(...)  rc_log(RC_LOG_WARN, __VA_ARGS__)
#define rc_info(...)  rc_log(RC_LOG_INFO, __VA_ARGS__)
#define rc_debug(...) rc_log(RC_LOG_DEBUG, __VA_ARGS__)

#endif /* RC_LOG_H */
