/*
 * Description: a cache used in a forked child never serves the parent's
 * registrations, and the parent keeps hitting afterwards. The parent's
 * buffer is pinned, so at fork the kernel gives the child its own copy of
 * the page; a registration inherited from the parent pins the parent's
 * frame, which the child sees through /proc/self/pagemap as a different
 * frame (an io_uring ring cannot be used by a child, whose copy of the ring
 * mappings is dropped at fork, so the PFN is the data here). libc fork()
 * and a raw clone syscall, which bypasses pthread_atfork, are both covered.
 * The cache runs with REGCACHE_FLAG_EXPLICIT_INVALIDATE so it caches
 * whatever the monitor.
 */
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"

#define LEN 16384

static struct t_registrar t;

static int child_body(struct regcache *c, char *buf)
{
	struct regcache_region *r;
	struct regcache_stats before, after;

	regcache_get_stats(c, &before);
	if (regcache_get(c, buf, LEN, 0, &r))
		return 2;
	regcache_get_stats(c, &after);
	if (after.misses != before.misses + 1) {
		fprintf(stderr, "child: expected a miss, got misses %llu->%llu\n",
			(unsigned long long)before.misses,
			(unsigned long long)after.misses);
		return 3;
	}
	if (!t_registrar_same_pages(&t, r, buf)) {
		fprintf(stderr, "child: the region pins the parent's page\n");
		return 4;
	}
	regcache_put(c, r);
	return 0;
}

static void run(struct regcache *c, char *buf, bool raw)
{
	struct regcache_region *r;
	struct regcache_stats st, st2;
	int status;
	pid_t pid;

	T_EXPECT_EQ(0, regcache_get(c, buf, LEN, 0, &r));
	T_CHECK(t_dma_visible(&t.ring, r, buf, LEN, 1));
	T_CHECK(t_registrar_same_pages(&t, r, buf));
	regcache_put(c, r);
	regcache_get_stats(c, &st);

	pid = raw ? (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0) : fork();
	T_REQUIRE(pid >= 0);
	if (pid == 0)
		_exit(child_body(c, buf));
	T_REQUIRE(waitpid(pid, &status, 0) == pid);
	T_CHECK(WIFEXITED(status));
	T_EXPECT_EQ(0, WEXITSTATUS(status));

	/* The parent still hits, and its registration still works. */
	T_EXPECT_EQ(0, regcache_get(c, buf, LEN, 0, &r));
	T_CHECK(t_dma_visible(&t.ring, r, buf, LEN, 2));
	regcache_put(c, r);
	regcache_get_stats(c, &st2);
	T_EXPECT_EQ(st.misses, st2.misses);
	T_EXPECT_EQ(st.hits + 1, st2.hits);
}

int main(void)
{
	struct regcache *c;
	char *buf = t_map(LEN);

	memset(buf, 1, LEN);
	if (!t_pfn(buf)) {
		fprintf(stderr, "SKIP: /proc/self/pagemap shows no frame "
			"numbers (needs root)\n");
		return T_EXIT_SKIP;
	}
	t_registrar_init(&t, 64);
	c = t_registrar_cache(&t, REGCACHE_FLAG_EXPLICIT_INVALIDATE, 0, 0);
	run(c, buf, false);
	run(c, buf, true);
	regcache_destroy(c);
	t_registrar_fini(&t);
	return t_exit_status();
}
