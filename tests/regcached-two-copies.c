/*
 * Description: two copies of the library in one process (the shared
 * libregcache, and a static one inside a middleware's shared object, with
 * its symbols kept local) each register with regcached on their own and
 * each get correct invalidation: both cache the same buffer, it is
 * unmapped and mapped again, and both copies' next get misses with DMA
 * visible (t_case_end; its negative control shows the held registrations
 * went stale). Run by regcached-launch as uid 65534.
 */
#include <string.h>
#include <sys/mman.h>

#include "helpers.h"

const char *copy_start(void);
void copy_begin(char *buf, size_t len);
int copy_end(const char *what);
void copy_stop(void);

#define LEN 65536

int main(void)
{
	struct io_uring ring;
	struct regcache *c;
	struct t_case k;
	const char *other;
	char *buf;

	t_ring_init(&ring);
	c = t_uring_cache(&ring, 0, 0, 0);
	t_monitor_require();
	other = copy_start();
	printf("shared copy: monitor %s; static copy: monitor %s\n",
	       regcache_monitor_name(), other);
	T_CHECK(!strcmp(other, "regcached"));
	buf = t_map(LEN);
	for (int round = 0; round < 3; round++) {
		t_case_begin(&k, &ring, c, buf, LEN);
		copy_begin(buf, LEN);
		T_REQUIRE(munmap(buf, LEN) == 0);
		T_REQUIRE(mmap(buf, LEN, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
			       -1, 0) == buf);
		t_case_end(&k, "shared copy: munmap + mmap", true);
		t_failures += copy_end("static copy: munmap + mmap");
	}
	copy_stop();
	regcache_destroy(c);
	io_uring_queue_exit(&ring);
	return t_exit_status();
}
