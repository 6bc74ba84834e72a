/* SPDX-License-Identifier: MIT */
/* What the bridge libraries (ucx.c, fabric.c) share: visibility and the
 * one-line messages they print. They use only regcache's public API. */
#ifndef RC_BRIDGE_H
#define RC_BRIDGE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define rc_bridge_hidden __attribute__((visibility("hidden")))
#define rc_bridge_export __attribute__((visibility("default")))
#define rc_bridge_unlikely(x) __builtin_expect(!!(x), 0)

/* Always printed: the bridge changed nothing, or could not. */
#define rc_bridge_log(...)                                                   \
	do {                                                                 \
		fprintf(stderr, __VA_ARGS__);                                \
		fputc('\n', stderr);                                         \
	} while (0)

/* Printed with REGCACHE_LOG=info or debug: what the bridge set up. */
#define rc_bridge_info(...)                                                  \
	do {                                                                 \
		const char *l_ = getenv("REGCACHE_LOG");                     \
		if (l_ && (!strcmp(l_, "info") || !strcmp(l_, "debug")))     \
			rc_bridge_log(__VA_ARGS__);                          \
	} while (0)

void rc_ucx_resolve(void) rc_bridge_hidden;

#endif
