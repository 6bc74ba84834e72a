/* SPDX-License-Identifier: MIT */
/* Logging (see log.h) and the failure of an rc_assert(). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "env.h"
#include "log.h"

static const char *const level_names[] = {
	[RC_LOG_ERROR] = "error",
	[RC_LOG_WARN] = "warn",
	[RC_LOG_INFO] = "info",
	[RC_LOG_DEBUG] = "debug",
};

/* -1 until $REGCACHE_LOG was read; a benign race reads it twice. The
 * order of level_names is the order of its choices in env.c. */
static atomic_int log_level = -1;

int rc_log_level(void)
{
	int level = atomic_load_explicit(&log_level, memory_order_relaxed);

	if (rc_likely(level >= 0))
		return level;
	/* The default first: a bad value is logged from inside
	 * rc_env_choice(), which calls back here. */
	atomic_store_explicit(&log_level, RC_LOG_WARN, memory_order_relaxed);
	level = rc_env_choice(RC_ENV_LOG);
	atomic_store_explicit(&log_level, level, memory_order_relaxed);
	return level;
}

void rc_log_at(enum rc_log_level level, const char *func, int line,
	       const char *fmt, ...)
{
	char buf[512];
	int saved_errno = errno;
	int n;
	va_list ap;

	n = snprintf(buf, sizeof(buf), "regcache %s: %s:%d: ", level_names[level],
		     func, line);
	va_start(ap, fmt);
	if (n > 0 && (size_t)n < sizeof(buf))
		n += vsnprintf(buf + n, sizeof(buf) - n, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof(buf) - 1)
		n = sizeof(buf) - 2;
	buf[n++] = '\n';
	/* One write(2): lines from threads do not interleave; no stdio lock. */
	if (write(STDERR_FILENO, buf, n) < 0)
		(void)0;
	errno = saved_errno;
}

void rc_assert_fail(const char *expr, const char *file, int line,
		    const char *func)
{
	/* Printed whatever the log level: the next thing is abort(). */
	rc_log_at(RC_LOG_ERROR, func, line, "assertion failed at %s: %s", file,
		  expr);
	abort();
}
