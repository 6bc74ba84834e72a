/* SPDX-License-Identifier: MIT */
/* Description: include/regcache/verbs.h compiles on its own (C). */
#include <regcache/verbs.h>

int main(void)
{
	return regcache_region_lkey(NULL) == 0 ? 0 : 1;
}
