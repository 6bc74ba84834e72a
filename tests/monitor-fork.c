/*
 * Description: a forked child that uses the cache never serves the parent's
 * entry (a miss that pins the child's own page, by /proc/self/pagemap), and
 * its own fresh monitor, of the same kind as the parent's, catches a munmap
 * + mmap in the child. The parent keeps hitting, and its monitor still
 * catches munmap + mmap afterwards: the child's exit took only its own copy
 * of the monitor. Runs under each kernel monitor.
 */
#include <sys/wait.h>

#include "helpers.h"

#define LEN 16384

static struct t_registrar t;
static char monitor[32];
static char *buf;

/* New pages at @buf, filled with 2s. */
static void replace(char *buf)
{
	t_remap(buf, LEN);
	memset(buf, 2, LEN);
}

/* A get that must miss and pin the frame the caller sees now. */
static int fresh_get(struct regcache *c, char *buf, const char *who)
{
	struct regcache_stats before, after;
	struct regcache_region *r;

	regcache_get_stats(c, &before);
	if (regcache_get(c, buf, LEN, 0, &r))
		return 2;
	regcache_get_stats(c, &after);
	if (after.hits != before.hits) {
		fprintf(stderr, "%s: a hit, expected a miss\n", who);
		return 3;
	}
	if (!t_registrar_same_pages(&t, r, buf)) {
		fprintf(stderr, "%s: the region pins another page\n", who);
		return 4;
	}
	regcache_put(c, r);
	return 0;
}

/* In the child, @arg the cache. */
static int child_body(void *arg)
{
	struct regcache *c = arg;
	struct regcache_region *r;
	int ret = fresh_get(c, buf, "child after fork");

	if (ret)
		return ret;
	/* Cached in the child now; the child's own monitor must see this. */
	if (regcache_get(c, buf, LEN, 0, &r))
		return 5;
	regcache_put(c, r);
	if (!t_monitor_is(monitor)) {
		fprintf(stderr, "child's monitor is \"%s\", the parent's "
			"\"%s\"\n", regcache_monitor_name(), monitor);
		return 6;
	}
	replace(buf);
	ret = fresh_get(c, buf, "child after munmap + mmap");
	return ret ? 10 + ret : 0;
}

static void parent_still_works(struct regcache *c, char *buf)
{
	struct regcache_stats st, st2;
	struct regcache_region *r;

	regcache_get_stats(c, &st);
	T_EXPECT_EQ(0, regcache_get(c, buf, LEN, 0, &r));
	regcache_get_stats(c, &st2);
	T_EXPECT_EQ(st.hits + 1, st2.hits);
	T_CHECK(t_dma_visible(&t.ring, r, buf, LEN, 7));
	regcache_put(c, r);
	replace(buf);
	T_EXPECT_EQ(0, fresh_get(c, buf, "parent after munmap + mmap"));
}

int main(void)
{
	struct regcache_region *r;
	struct regcache *c;
	int status;

#if defined(__SANITIZE_THREAD__)
	/* The child would start a monitor thread, which TSan refuses after
	 * a multi-threaded fork. */
	printf("SKIP: under TSan a forked child may not start the monitor's "
	       "thread\n");
	return T_EXIT_SKIP;
#endif
	buf = t_map(LEN);
	memset(buf, 1, LEN);
	if (!t_pfn(buf)) {
		printf("SKIP: /proc/self/pagemap shows no frame numbers "
		       "(needs root)\n");
		return T_EXIT_SKIP;
	}
	t_registrar_init(&t, 64);
	c = t_registrar_cache(&t, 0, 0, 0);
	t_monitor_require();
	snprintf(monitor, sizeof(monitor), "%s", regcache_monitor_name());
	/* A hang is a failure, not a CTest timeout. */
	alarm(120);

	T_EXPECT_EQ(0, regcache_get(c, buf, LEN, 0, &r));
	regcache_put(c, r);
	status = t_fork_wait(child_body, c, false);
	T_CHECK(WIFEXITED(status));
	T_EXPECT_EQ(0, WEXITSTATUS(status));
	parent_still_works(c, buf);
	if (!t_failures)
		printf("ok: child never served the parent's entry; parent "
		       "still monitored\n");
	regcache_destroy(c);
	t_registrar_fini(&t);
	return t_exit_status();
}
