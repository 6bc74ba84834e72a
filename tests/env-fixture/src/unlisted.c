/* tests/env-table.c's negative control, never compiled: each read below is
 * one problem its scan must report, at this line; the two at the end are
 * not problems. */
#include <stdlib.h>

const char *a(void) { return getenv("REGCACHE_NOT_IN_TABLE"); }

/* The name cannot be checked. */
const char *b(const char *name)
{
	return secure_getenv(name);
}

/* In the table, but read past its accessors. */
const char *c(void)
{
	return getenv("REGCACHE_LOG");
}

static const char *const prefix = "REGCACHE_READ_BY_PREFIX_";

extern char **environ;

const char *foreign(void) { return getenv("LD_PRELOAD"); }
/* A comment may name REGCACHE_IN_A_COMMENT. */
