/* SPDX-License-Identifier: MIT */
/* regcached's log: one line per event on stderr, quiet by default (errors
 * and warnings); -v adds what each client does. */
#ifndef RCD_LOG_H
#define RCD_LOG_H

enum rcd_log_level { RCD_ERROR, RCD_WARN, RCD_INFO, RCD_DEBUG };

extern int rcd_log_level;

void rcd_log(enum rcd_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define rcd_error(...) rcd_log(RCD_ERROR, __VA_ARGS__)
#define rcd_warn(...) rcd_log(RCD_WARN, __VA_ARGS__)
#define rcd_info(...) rcd_log(RCD_INFO, __VA_ARGS__)
#define rcd_debug(...) rcd_log(RCD_DEBUG, __VA_ARGS__)

#endif /* RCD_LOG_H */
