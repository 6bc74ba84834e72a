/*
 * Description: a forked child that destroys its copy of an io_uring cache
 * (e.g. from an atexit handler when the child calls exit()) must not touch
 * the parent's registrations. The child's io_uring fd refers to the
 * parent's ring, so io_uring_unregister_buffers() in the child's
 * uring_destroy (and ops->dereg of anything the child deregisters) empties
 * the parent's fixed-buffer table. Oracle: the parent DMAs through a region
 * it holds (and one it has cached) after the child exits.
 */
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"

#define LEN 16384

/* In the child: what an atexit cleanup would do. */
static int destroy_copy(void *c)
{
	regcache_destroy(c);
	return 0;
}

int main(void)
{
	struct io_uring ring;
	struct regcache *c;
	struct regcache_region *r;
	char *buf = t_map(LEN);
	int status;

	memset(buf, 1, LEN);
	t_ring_init(&ring);
	c = t_uring_cache(&ring, REGCACHE_FLAG_EXPLICIT_INVALIDATE, 0, 0);
	T_EXPECT_EQ(0, regcache_get(c, buf, LEN, 0, &r));
	T_CHECK(t_dma_visible(&ring, r, buf, LEN, 1));

	status = t_fork_wait(destroy_copy, c, false);
	T_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	/* t_dma_visible exits FAIL if READ_FIXED errors (-EFAULT: the slot
	 * was emptied by the child). */
	T_CHECK(t_dma_visible(&ring, r, buf, LEN, 2));
	regcache_put(c, r);
	regcache_destroy(c);
	io_uring_queue_exit(&ring);
	return t_exit_status();
}
