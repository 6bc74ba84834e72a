/*
 * Description: after fork, every cache in the child forgets the parent's
 * regions, not only the first one that notices the fork. Two caches share
 * the process-wide monitor; in the child, cache A's slow path repairs the
 * fork guard and restarts the monitor (queue head back to 0). Cache B's
 * cursor still holds the parent's generation, which can equal the child's
 * (always with the "none" monitor: both are 0); B must still not serve the
 * parent's registration.
 * Oracle: the child's copy of the pinned page has a different frame than
 * the one the registration pinned (/proc/self/pagemap, needs root), and
 * the miss counter.
 */
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"

#define LEN 16384

static struct t_registrar t;

static int child_body(struct regcache *a, struct regcache *b, char *bufa,
		      char *bufb)
{
	struct regcache_region *r;
	struct regcache_stats before, after;
	int ret = 0;

	/* Cache A notices the fork first. */
	if (regcache_get(a, bufa, LEN, 0, &r))
		return 2;
	regcache_put(a, r);

	regcache_get_stats(b, &before);
	if (regcache_get(b, bufb, LEN, 0, &r))
		return 2;
	regcache_get_stats(b, &after);
	if (after.misses != before.misses + 1) {
		fprintf(stderr, "child: cache B served a hit (misses %llu->%llu, "
			"hits %llu->%llu): the parent's registration\n",
			(unsigned long long)before.misses,
			(unsigned long long)after.misses,
			(unsigned long long)before.hits,
			(unsigned long long)after.hits);
		ret = 3;
	}
	if (!t_registrar_same_pages(&t, r, bufb)) {
		fprintf(stderr, "child: cache B's region pins the parent's "
			"page, not the child's\n");
		ret = 4;
	}
	/* Never put a parent's region in the child: it would deregister
	 * the parent's slot if it were claimed. */
	return ret;
}

int main(void)
{
	struct regcache *a, *b;
	struct regcache_region *r;
	char *bufa = t_map(LEN), *bufb = t_map(LEN);
	int status;
	pid_t pid;

	memset(bufa, 1, LEN);
	memset(bufb, 1, LEN);
	if (!t_pfn(bufa)) {
		fprintf(stderr, "SKIP: /proc/self/pagemap shows no frame "
			"numbers (needs root)\n");
		return T_EXIT_SKIP;
	}
	t_registrar_init(&t, 64);
	a = t_registrar_cache(&t, REGCACHE_FLAG_EXPLICIT_INVALIDATE, 0, 0);
	b = t_registrar_cache(&t, REGCACHE_FLAG_EXPLICIT_INVALIDATE, 0, 0);
	T_EXPECT_EQ(0, regcache_get(a, bufa, LEN, 0, &r));
	regcache_put(a, r);
	T_EXPECT_EQ(0, regcache_get(b, bufb, LEN, 0, &r));
	T_CHECK(t_dma_visible(&t.ring, r, bufb, LEN, 1));
	regcache_put(b, r);

	pid = fork();
	T_REQUIRE(pid >= 0);
	if (pid == 0)
		_exit(child_body(a, b, bufa, bufb));
	T_REQUIRE(waitpid(pid, &status, 0) == pid);
	T_CHECK(WIFEXITED(status));
	T_EXPECT_EQ(0, WEXITSTATUS(status));

	regcache_destroy(b);
	regcache_destroy(a);
	t_registrar_fini(&t);
	return t_exit_status();
}
