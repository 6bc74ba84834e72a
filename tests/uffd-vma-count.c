/*
 * Description: userfaultfd monitor: registering whole VMAs keeps the VMA
 * count flat. 10000 cached 16 KiB heap buffers (every other one of 20000
 * malloc'd, so no two regions merge) grow /proc/self/maps by at most a
 * handful of lines, while DMA through a sample of them is visible.
 * Destroying the cache unregisters everything without adding VMAs either.
 * Negative control for the counter: registering every other page with a
 * userfaultfd of our own does split the VMA.
 */
#include <sys/ioctl.h>

#include <linux/userfaultfd.h>

#include "helpers.h"

#define N 10000
#define SZ 16384
#define SLACK 8

static char *bufs[2 * N];
static char *arena;

int main(void)
{
	struct regcache_region *r;
	struct io_uring ring;
	struct regcache *c;
	long before, after, destroyed;

	t_monitor_only("userfaultfd");
	t_ring_init(&ring);
	c = t_uring_cache(&ring, 0, 2 * N, 0);
	t_monitor_require();

#ifdef REGCACHE_SANITIZE
	/* Sanitizer allocators map and unmap their own metadata as they go:
	 * carve the buffers from one mapping, a heap of our own, instead. */
	arena = t_map((size_t)2 * N * SZ);
#endif
	for (int i = 0; i < 2 * N; i++) {
		bufs[i] = arena ? arena + (size_t)i * SZ : malloc(SZ);
		T_REQUIRE(bufs[i]);
		memset(bufs[i], 1, SZ);
	}
	before = t_vma_count();

	for (int i = 0; i < 2 * N; i += 2) {
		T_REQUIRE(regcache_get(c, bufs[i], SZ, 0, &r) == 0);
		if (i % 500 == 0)
			T_CHECK(t_dma_visible(&ring, r, bufs[i], SZ, i));
		regcache_put(c, r);
	}
	after = t_vma_count();

	{
		struct regcache_stats st;

		regcache_get_stats(c, &st);
		printf("%llu cached regions (%llu uncached); /proc/self/maps: "
		       "%ld lines before, %ld after\n",
		       (unsigned long long)st.regions,
		       (unsigned long long)st.uncached, before, after);
		T_CHECK(st.regions >= N / 2);
		T_EXPECT_EQ(0, st.uncached);
	}
	regcache_destroy(c);
	destroyed = t_vma_count();
	printf("after destroy: %ld lines\n", destroyed);
#ifdef REGCACHE_SANITIZE
	/* The sanitizer allocators carve the library's own mallocs (region
	 * slabs, the watch table) out of reserved PROT_NONE space, one new
	 * VMA per size class (seen in the maps diff), and TSan maps shadow as
	 * the program runs: the count says nothing about us here. */
	printf("VMA count not checked under sanitizers\n");
#else
	T_CHECK(after - before <= SLACK);
	T_CHECK(destroyed - before <= SLACK);
#endif

	{
		/* Control: partial registrations split the VMA. */
		int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | 1);
		struct uffdio_api api = { .api = UFFD_API };
		char *m = t_map(64 * 4096);
		long v0 = t_vma_count();

		T_REQUIRE(fd >= 0 && ioctl(fd, UFFDIO_API, &api) == 0);
		for (int i = 0; i < 64; i += 2) {
			struct uffdio_register reg = {
				.range = { (uintptr_t)m + i * 4096, 4096 },
				.mode = UFFDIO_REGISTER_MODE_WP,
			};

			T_REQUIRE(ioctl(fd, UFFDIO_REGISTER, &reg) == 0);
		}
		printf("control: 32 single-page registrations: %ld -> %ld "
		       "lines\n", v0, t_vma_count());
		T_CHECK(t_vma_count() - v0 >= 32);
		close(fd);
	}
	for (int i = 0; i < 2 * N && !arena; i++)
		free(bufs[i]);
	io_uring_queue_exit(&ring);
	return t_exit_status();
}
