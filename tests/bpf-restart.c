/*
 * Description: eBPF monitor: starting and stopping the monitor again and
 * again (first regcache_create / last regcache_destroy, and
 * regcache_monitor_name() with no cache) leaks neither fds nor mappings
 * (the ring's three mappings, libbpf's .bss map), and every restarted
 * monitor still catches a munmap + mmap at the same address (DMA-checked).
 */
#include <dirent.h>

#include "helpers.h"

#define LEN 16384

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	T_REQUIRE(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

int main(void)
{
	struct io_uring ring;
	int fds0 = -1;
	long vmas0 = -1;
	int rounds = T_SCALE(16);

	t_monitor_only("bpf");
	t_ring_init(&ring);
	for (int i = 0; i < rounds; i++) {
		struct regcache *c = t_uring_cache(&ring, 0, 0, 0);
		struct t_case k;
		char *buf = t_map(LEN), *again;

		t_monitor_require();
		t_case_begin(&k, &ring, c, buf, LEN);
		T_REQUIRE(munmap(buf, LEN) == 0);
		again = mmap(buf, LEN, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
			     -1, 0);
		T_REQUIRE(again == buf);
		if (!t_case_end(&k, "munmap after a restart", true))
			break;
		regcache_destroy(c);
		T_REQUIRE(munmap(buf, LEN) == 0);
		/* No cache: probe and undo. */
		T_REQUIRE(!strcmp(regcache_monitor_name(), "bpf"));
		if (i == 1) {
			/* The first round leaves one-time state (log, libbpf,
			 * the fork guard page): measure from the second. */
			fds0 = count_fds();
			vmas0 = t_vma_count();
		}
	}
	if (fds0 >= 0) {
		T_EXPECT_EQ(fds0, count_fds());
		T_EXPECT_EQ(vmas0, t_vma_count());
	}
	if (!t_failures)
		printf("ok: %d monitor restarts, no fd or mapping leaked\n",
		       rounds);
	io_uring_queue_exit(&ring);
	return t_exit_status();
}
