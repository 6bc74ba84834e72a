/*
 * Description: userfaultfd monitor: a hole punched into a memfd through its
 * file descriptor (fallocate PUNCH_HOLE) sends no userfaultfd event, so
 * memfd mappings, shared or private, are served pass-through and a get
 * after the punch sees the new pages. Negative control: DMA through the
 * registration held across the punch is not visible. A private anonymous
 * buffer in the same cache is still cached (a hit).
 */
#include <fcntl.h>
#include <sys/mman.h>

#include "helpers.h"

#define LEN 65536

static int mfd;

static void punch(void *arg)
{
	(void)arg;
	T_REQUIRE(fallocate(mfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
			    LEN) == 0);
}

int main(void)
{
	struct regcache_stats st, st2;
	struct regcache_region *r;
	struct io_uring ring;
	struct regcache *c;
	char *buf, *anon;

	t_monitor_only("userfaultfd");
	t_ring_init(&ring);
	c = t_uring_cache(&ring, 0, 0, 0);
	t_monitor_require();

	mfd = memfd_create("uffd_memfd_punch", MFD_CLOEXEC);
	T_REQUIRE(mfd >= 0);
	T_REQUIRE(ftruncate(mfd, LEN) == 0);
	buf = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	T_REQUIRE(buf != MAP_FAILED);
	t_passthrough_case(&ring, c, buf, LEN, punch, NULL,
				"memfd MAP_SHARED + fallocate(PUNCH_HOLE)");

	anon = t_map(LEN);
	T_REQUIRE(regcache_get(c, anon, LEN, 0, &r) == 0);
	regcache_put(c, r);
	regcache_get_stats(c, &st);
	T_REQUIRE(regcache_get(c, anon, LEN, 0, &r) == 0);
	regcache_get_stats(c, &st2);
	T_EXPECT_EQ(st.hits + 1, st2.hits);
	T_CHECK(t_dma_visible(&ring, r, anon, LEN, 9));
	regcache_put(c, r);

	munmap(buf, LEN);
	close(mfd);
	regcache_destroy(c);
	io_uring_queue_exit(&ring);
	return t_exit_status();
}
