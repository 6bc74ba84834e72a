/* SPDX-License-Identifier: MIT */
/* regcache_version(): the version this library was built as. */
#include <regcache.h>

int regcache_version(void)
{
	return REGCACHE_VERSION;
}
