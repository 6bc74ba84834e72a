/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "daemon_log.h"

int rcd_log_level = RCD_WARN;

void rcd_log(enum rcd_log_level level, const char *fmt, ...)
{
	static const char *const names[] = { "error", "warning", "info",
					     "debug" };
	char line[512];
	struct timespec ts;
	va_list ap;

	if ((int)level > rcd_log_level)
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* One write per line: lines of a busy daemon do not interleave. */
	fprintf(stderr, "regcached[%ld.%03ld] %s: %s\n", (long)ts.tv_sec,
		ts.tv_nsec / 1000000, names[level], line);
}
