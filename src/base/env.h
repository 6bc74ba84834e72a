/* SPDX-License-Identifier: MIT */
/*
 * Every environment variable that regcache reads, in one table (env.c):
 * the library, the bridges and the tools read their REGCACHE_* settings
 * only through these accessors, never with getenv() of their own
 * (tests/env-table.c fails otherwise, and when README.md's table differs
 * from this one).
 *
 * A value that does not parse is logged, once per call site, with the
 * variable, the value and what was expected, and the default is used: a
 * bad setting never stops a program. The accessors neither allocate nor
 * lock (getenv(), a parse, at most one write(2)), so the monitor's thread
 * and a freshly forked child may call them.
 */
#ifndef RC_ENV_H
#define RC_ENV_H

#include <stdbool.h>
#include <stddef.h>

#include "compat.h"

/* One per variable, in the order of the table (sorted by name). */
enum rc_env_id {
	RC_ENV_BPF_ATTACH,
	RC_ENV_BPF_IGNORE_DROPS,
	RC_ENV_BPF_NO_PROCMAP_QUERY,
	RC_ENV_BRIDGE_DIR,
	RC_ENV_DEMO_BRIDGE_CHILD,
	RC_ENV_DEMO_BRIDGE_OPT,
	RC_ENV_FABRIC_IMPORT,
	RC_ENV_FABRIC_PIN_CHECK,
	RC_ENV_FABRIC_VERSIONS,
	RC_ENV_LOG,
	RC_ENV_MAX_BYTES,
	RC_ENV_MAX_REGIONS,
	RC_ENV_MONITOR,
	RC_ENV_REGCACHED_FALLBACK_MS,
	RC_ENV_REGCACHED_TIMEOUT_MS,
	RC_ENV_SOCKET,
	RC_ENV_UCX_LINGER_US,
	RC_ENV_UCX_POLL_US,
	RC_ENV_UCX_THREAD,
	RC_ENV_UFFD_ALWAYS_PROBE,
	RC_ENV_UFFD_NO_FOLLOW_CPU,
	RC_ENV_UFFD_NO_PROCMAP_QUERY,
	RC_ENV_UFFD_SENTINEL_PROBE,
	RC_ENV_UFFD_SHARED_FDS,
	RC_ENV_UFFD_WP_PROBE,
	RC_ENV_URING_NO_SPARSE,
	RC_ENV_VERBS_ODP,
	RC_ENV_COUNT
};

/* How a value is read. */
enum rc_env_type {
	/* On when set, whatever the value (even empty or "0"). */
	RC_ENV_FLAG,
	/* 1/0, yes/no, on/off, true/false. */
	RC_ENV_BOOL,
	/* A positive number (decimal, 0x hex or 0 octal) with an optional K,
	 * M or G suffix (times 2^10, 2^20, 2^30). */
	RC_ENV_SIZE,
	/* A decimal number >= 0 of milliseconds or microseconds. */
	RC_ENV_MS,
	RC_ENV_US,
	/* Any non-empty text. */
	RC_ENV_STRING,
	/* One of the words in .choices. */
	RC_ENV_CHOICE,
};

struct rc_env {
	const char *name;
	enum rc_env_type type;
	/* The default as README.md states it. */
	const char *def;
	/* RC_ENV_BOOL, _MS, _US: the default's value; RC_ENV_CHOICE: the
	 * index of the default in .choices, -1 when the caller decides. */
	long long def_value;
	/* RC_ENV_CHOICE: the accepted words, NULL-terminated. */
	const char *const *choices;
	/* Who reads it. */
	const char *component;
	/* One line: what it does. */
	const char *meaning;
};

rc_hidden extern const struct rc_env rc_env_table[RC_ENV_COUNT];

/* The raw value when set and non-empty, else NULL. Any type. */
rc_hidden const char *rc_env_str(enum rc_env_id id);

/* RC_ENV_FLAG: set at all. */
rc_hidden bool rc_env_flag(enum rc_env_id id);

/* RC_ENV_BOOL: the value, else the default. */
rc_hidden bool rc_env_bool(enum rc_env_id id);

/* RC_ENV_SIZE: the value, else 0 (unset or malformed: the caller's
 * default applies). */
rc_hidden size_t rc_env_size(enum rc_env_id id);

/* RC_ENV_MS, RC_ENV_US: the value, else the default. *@set (if not
 * NULL) says whether a valid value was given. */
rc_hidden long long rc_env_time(enum rc_env_id id, bool *set);

/* RC_ENV_CHOICE: the index of the value in .choices, else the default's
 * (-1 when the table leaves the default to the caller). */
rc_hidden int rc_env_choice(enum rc_env_id id);

/* RC_ENV_CHOICE where a bad value must refuse rather than fall back: the
 * index, the default's when unset, -1 for a value not in .choices (not
 * logged: the caller says what it refuses). */
rc_hidden int rc_env_choice_strict(enum rc_env_id id);

/* The @index'th word of .choices; "?" if out of range. */
rc_hidden const char *rc_env_choice_name(enum rc_env_id id, int index);

#endif /* RC_ENV_H */
