/*
 * Description: a forked child that puts a pass-through region it inherited
 * from the parent must not deregister the parent's registration (the
 * registrar's context, e.g. an io_uring fd or an ibv_pd, is shared with the
 * parent). Cached regions are already "forgotten without deregistering" in
 * the child; pass-through regions held at fork are not. Oracle: the parent
 * DMAs through its still-held region after the child exits.
 */
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"

#define LEN 16384

static struct t_registrar t;

int main(void)
{
	struct regcache *c;
	struct regcache_region *r, *r2;
	char *buf = t_map(LEN);
	int status;
	pid_t pid;

	memset(buf, 1, LEN);
	t_registrar_init(&t, 64);
	c = t_registrar_cache(&t, 0, 0, 0);	/* monitor none: pass-through */
	T_EXPECT_EQ(0, regcache_get(c, buf, LEN, 0, &r));
	T_CHECK(t_dma_visible(&t.ring, r, buf, LEN, 1));

	pid = fork();
	T_REQUIRE(pid >= 0);
	if (pid == 0) {
		/* The child gets its own region, then releases both. */
		if (regcache_get(c, buf, LEN, 0, &r2) == 0)
			regcache_put(c, r2);
		regcache_put(c, r);
		_exit(0);
	}
	T_REQUIRE(waitpid(pid, &status, 0) == pid);
	T_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	/* t_dma_visible exits FAIL if READ_FIXED errors (slot emptied). */
	T_CHECK(t_dma_visible(&t.ring, r, buf, LEN, 2));
	regcache_put(c, r);
	regcache_destroy(c);
	t_registrar_fini(&t);
	return t_exit_status();
}
