/*
 * Description: mmap(MAP_FIXED) over a cached range replaces its pages
 * without any munmap call; the next get misses and DMA is visible. Both the
 * libc call and a raw syscall(SYS_mmap). Runs under each kernel monitor.
 */
#include "helpers.h"

#define LEN 65536

int main(void)
{
	struct t_case k;
	struct io_uring ring;
	struct regcache *c;
	char *buf;

	t_ring_init(&ring);
	c = t_uring_cache(&ring, 0, 0, 0);
	t_monitor_require();
	buf = t_map(LEN);

	t_case_begin(&k, &ring, c, buf, LEN);
	T_REQUIRE(mmap(buf, LEN, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == buf);
	t_case_end(&k, "mmap(MAP_FIXED) over", true);

	t_case_begin(&k, &ring, c, buf + 4096, 8192);
	T_REQUIRE((char *)syscall(SYS_mmap, buf + 4096, 4096,
				  PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
				  0) == buf + 4096);
	t_case_end(&k, "syscall(SYS_mmap, MAP_FIXED) over one page", true);

	regcache_destroy(c);
	io_uring_queue_exit(&ring);
	return t_exit_status();
}
