// SPDX-License-Identifier: MIT
// Description: include/regcache/verbs.h compiles on its own (C++).
#include <regcache/verbs.h>

int main()
{
	return regcache_region_rkey(nullptr) == 0 ? 0 : 1;
}
