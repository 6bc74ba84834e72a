/* SPDX-License-Identifier: MIT */
/*
 * Description: under the eBPF monitor, a burst of changes that the
 * programs can only describe as "everything" (here 50 shmdt() calls: the
 * segment's size is not an argument, so each is recorded as everything,
 * up to three times) costs a cache one invalidation of everything at its
 * next sync, not one per record: the overflows counter moves by exactly 1.
 * Every cached region is still invalidated (the next gets are misses), and
 * the new registration is proven current with DMA.
 */
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>

#include "helpers.h"

#define NBUF 8
#define LEN (64 * 1024)
#define BURST 50

int main(void)
{
	struct io_uring ring;
	struct regcache *c;
	struct regcache_region *r;
	struct regcache_stats before, after;
	char *buf[NBUF];
	int shmid;

	t_ring_init(&ring);
	c = t_uring_cache(&ring, 0, 0, 0);
	t_monitor_require();
	for (int i = 0; i < NBUF; i++) {
		buf[i] = t_map(LEN);
		memset(buf[i], i, LEN);
		T_REQUIRE(regcache_get(c, buf[i], LEN, 0, &r) == 0);
		regcache_put(c, r);
	}
	shmid = shmget(IPC_PRIVATE, 1 << 16, IPC_CREAT | 0600);
	T_REQUIRE(shmid >= 0);

	regcache_get_stats(c, &before);
	for (int i = 0; i < BURST; i++) {
		void *p = shmat(shmid, NULL, 0);

		T_REQUIRE(p != (void *)-1);
		shmdt(p);
	}
	shmctl(shmid, IPC_RMID, NULL);
	/* The first get syncs once and applies the whole burst. */
	for (int i = 0; i < NBUF; i++) {
		T_EXPECT_EQ(0, regcache_get(c, buf[i], LEN, 0, &r));
		if (i == 0)
			T_CHECK(t_dma_visible(&ring, r, buf[i], LEN, 7));
		regcache_put(c, r);
	}
	regcache_get_stats(c, &after);
	T_EXPECT_EQ(1, after.overflows - before.overflows);
	/* Still correct: every cached region was invalidated. */
	T_EXPECT_EQ(NBUF, after.misses - before.misses);
	T_EXPECT_EQ(NBUF, after.invalidations - before.invalidations);
	printf("%d shmdt: overflows +%llu, misses +%llu\n", BURST,
	       (unsigned long long)(after.overflows - before.overflows),
	       (unsigned long long)(after.misses - before.misses));
	regcache_destroy(c);
	io_uring_queue_exit(&ring);
	return t_exit_status();
}
