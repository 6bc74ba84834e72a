/* Description: the public headers compile on their own, as C. */
#include <regcache.h>
#include <regcache/uring.h>
int main(void) { struct regcache_stats st = { 0 };
	return (int)st.hits; }
