/*
 * Description: a forked child that uses its copy of an io_uring cache must
 * not redirect the parent's registrations. The child inherits a copy of the
 * registrar's free-slot list but shares the parent's ring (the fd refers to
 * the same io_uring instance), so a slot the parent fills after the fork
 * can be refilled by the child with the child's buffer. Oracle: the
 * parent's READ_FIXED through its region still lands in its buffer
 * (t_dma_visible exits FAIL on -EFAULT, which is what happens when the
 * child's buffer, at another address, took over the slot).
 */
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"

#define LEN 16384

int main(void)
{
	struct io_uring ring;
	struct regcache *c;
	struct regcache_region *r;
	char *buf = t_map(LEN), *bufc = t_map(LEN);
	int go[2], status;
	pid_t pid;
	char x;

	memset(buf, 1, LEN);
	memset(bufc, 1, LEN);
	t_ring_init(&ring);
	c = t_uring_cache(&ring, REGCACHE_FLAG_EXPLICIT_INVALIDATE, 0, 0);
	T_REQUIRE(pipe(go) == 0);

	pid = fork();
	T_REQUIRE(pid >= 0);
	if (pid == 0) {
		struct regcache_region *rc;

		T_REQUIRE(read(go[0], &x, 1) == 1);
		/* The child caches its own buffer: a miss, a new slot. The
		 * registrar may refuse (-ECHILD): either way the parent's
		 * slots must stay the parent's. */
		if (regcache_get(c, bufc, LEN, 0, &rc) == 0)
			(void)rc;
		_exit(0);
	}
	/* After the fork the parent registers its buffer... */
	T_EXPECT_EQ(0, regcache_get(c, buf, LEN, 0, &r));
	T_CHECK(t_dma_visible(&ring, r, buf, LEN, 1));
	/* ...then the child registers one. */
	T_REQUIRE(write(go[1], "x", 1) == 1);
	T_REQUIRE(waitpid(pid, &status, 0) == pid);
	T_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	if (!t_dma_visible(&ring, r, buf, LEN, 2)) {
		fprintf(stderr, "parent: the DMA through its region went to the "
			"child's pages (slot %u reused by the child)\n",
			regcache_region_buf_index(r));
		t_failures++;
	}
	regcache_put(c, r);
	regcache_destroy(c);
	io_uring_queue_exit(&ring);
	return t_exit_status();
}
