/*
 * Description: a forked child whose first regcache call is the put of a
 * region that was invalidated while held (dead, still registered, waiting
 * for its last put) must not deregister it: the registration is the
 * parent's (the registrar context, here an io_uring fd, is shared with the
 * parent). The put's claim path runs before anything in the child has
 * noticed the fork. Oracle: the parent DMAs through the region afterwards.
 */
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"

#define LEN 16384

static struct t_registrar t;
static struct regcache *c;

/* In the child: its copy of the holder puts the region. */
static int put_copy(void *r)
{
	regcache_put(c, r);
	return 0;
}

int main(void)
{
	struct regcache_region *r;
	char *buf = t_map(LEN);
	int status;

	memset(buf, 1, LEN);
	t_registrar_init(&t, 64);
	c = t_registrar_cache(&t, REGCACHE_FLAG_EXPLICIT_INVALIDATE, 0, 0);
	T_EXPECT_EQ(0, regcache_get(c, buf, LEN, 0, &r));
	/* Held and invalidated: dead, deregistered at its last put. */
	T_EXPECT_EQ(1, regcache_invalidate(c, buf, LEN));
	T_CHECK(t_dma_visible(&t.ring, r, buf, LEN, 1));

	status = t_fork_wait(put_copy, r, false);
	T_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	/* t_dma_visible exits FAIL if READ_FIXED errors (-EFAULT: the child
	 * emptied the parent's slot). */
	T_CHECK(t_dma_visible(&t.ring, r, buf, LEN, 2));
	regcache_put(c, r);
	T_EXPECT_EQ(0, atomic_load(&t.live));
	regcache_destroy(c);
	t_registrar_fini(&t);
	return t_exit_status();
}
