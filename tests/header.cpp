// Description: the public headers compile on their own, as C++.
#include <regcache.h>
#include <regcache/uring.h>
int main() { regcache_stats st = {};
	return (int)st.hits; }
