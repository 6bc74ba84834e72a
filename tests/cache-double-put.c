/* SPDX-License-Identifier: MIT */
/*
 * Description: a second put of a region, or a put to a cache it does not
 * belong to, is logged and ignored, and no count goes wrong: afterwards
 * the region is still cached and hit, a flush deregisters it when nobody
 * holds it and keeps it while somebody does, and nothing is deregistered
 * twice (the tracking registrar aborts on that). Covers a second put from
 * the getting thread and from another thread, of a region already
 * deregistered, of a pass-through region, and a put to the wrong cache.
 */
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"

static struct t_registrar t;
static size_t page;
static int log_fd[2], real_stderr;
static char log_buf[65536];
static size_t log_len;

/* Everything written to stderr (the library's log lines, and this test's
 * failures) goes to a pipe, so the test can count the lines; it is copied
 * to the real stderr at the end. */
static void capture_log(void)
{
	real_stderr = dup(STDERR_FILENO);
	T_REQUIRE(real_stderr >= 0 && pipe(log_fd) == 0);
	T_REQUIRE(fcntl(log_fd[0], F_SETFL, O_NONBLOCK) == 0);
	T_REQUIRE(dup2(log_fd[1], STDERR_FILENO) == STDERR_FILENO);
}

static int ignored_lines(void)
{
	ssize_t n;
	int count = 0;

	fflush(stderr);
	while ((n = read(log_fd[0], log_buf + log_len,
			 sizeof(log_buf) - 1 - log_len)) > 0)
		log_len += (size_t)n;
	log_buf[log_len] = 0;
	for (char *p = log_buf; (p = strstr(p, "; ignored")); p++)
		count++;
	return count;
}

static uint64_t registered(struct regcache *c)
{
	struct regcache_stats st;

	regcache_get_stats(c, &st);
	return st.regions;
}

static struct regcache *cache;
static struct regcache_region *other_region;
static void *buf_a;

static void *get_in_other_thread(void *arg)
{
	(void)arg;
	T_REQUIRE(regcache_get(cache, buf_a, 100, 0, &other_region) == 0);
	return NULL;
}

int main(void)
{
	struct regcache *c, *c2;
	struct regcache_region *r, *r2;
	pthread_t th;
	char *buf;
	int lines;

	page = (size_t)sysconf(_SC_PAGESIZE);
	buf = t_map(8 * page);
	memset(buf, 1, 8 * page);
	t_registrar_init(&t, 64);
	capture_log();
	c = t_registrar_cache(&t, REGCACHE_FLAG_EXPLICIT_INVALIDATE, 0, 0);

	/* 1. get, put, put by the getting thread. */
	T_REQUIRE(regcache_get(c, buf, 100, 0, &r) == 0);
	regcache_put(c, r);
	regcache_put(c, r);
	T_EXPECT_EQ(1, ignored_lines());
	T_REQUIRE(regcache_get(c, buf, 100, 0, &r2) == 0);
	T_CHECK(r2 == r);			/* still cached: a hit */
	regcache_flush(c);
	T_EXPECT_EQ(1, registered(c));		/* held: kept */
	regcache_put(c, r2);
	regcache_flush(c);
	T_EXPECT_EQ(0, registered(c));		/* idle: deregistered */

	/* 2. got by another thread, put twice here. */
	cache = c;
	buf_a = buf + 2 * page;
	pthread_create(&th, NULL, get_in_other_thread, NULL);
	pthread_join(th, NULL);
	T_REQUIRE(regcache_get(c, buf_a, 100, 0, &r) == 0);
	T_CHECK(r == other_region);
	regcache_put(c, other_region);
	regcache_put(c, r);
	regcache_put(c, r);
	T_EXPECT_EQ(2, ignored_lines());
	regcache_flush(c);
	T_EXPECT_EQ(0, registered(c));

	/* 3. put again after the last put deregistered it. */
	T_REQUIRE(regcache_get(c, buf + 4 * page, 100, 0, &r) == 0);
	T_EXPECT_EQ(1, regcache_invalidate(c, buf + 4 * page, 100));
	T_EXPECT_EQ(1, registered(c));		/* dead, held */
	regcache_put(c, r);			/* the last put: deregistered */
	T_EXPECT_EQ(0, registered(c));
	regcache_put(c, r);
	T_EXPECT_EQ(3, ignored_lines());
	T_EXPECT_EQ(atomic_load(&t.regs), atomic_load(&t.deregs));

	/* 4. put to the wrong cache. */
	c2 = t_registrar_cache(&t, REGCACHE_FLAG_EXPLICIT_INVALIDATE, 0, 0);
	T_REQUIRE(regcache_get(c, buf + 6 * page, 100, 0, &r) == 0);
	regcache_put(c2, r);
	T_EXPECT_EQ(4, ignored_lines());
	regcache_flush(c);
	T_EXPECT_EQ(1, registered(c));		/* still held in c */
	regcache_put(c, r);
	regcache_flush(c);
	T_EXPECT_EQ(0, registered(c));
	regcache_destroy(c2);

	/* 5. a pass-through region (the "none" monitor, no promise). */
	regcache_destroy(c);
	c = t_registrar_cache(&t, 0, 0, 0);
	T_REQUIRE(regcache_get(c, buf, 100, 0, &r) == 0);
	T_EXPECT_EQ(1, registered(c));
	regcache_put(c, r);
	T_EXPECT_EQ(0, registered(c));
	regcache_put(c, r);			/* would deregister twice */
	T_EXPECT_EQ(5, ignored_lines());
	regcache_destroy(c);

	T_EXPECT_EQ(atomic_load(&t.regs), atomic_load(&t.deregs));
	t_registrar_fini(&t);
	lines = ignored_lines();
	dup2(real_stderr, STDERR_FILENO);
	fwrite(log_buf, 1, log_len, stderr);
	T_EXPECT_EQ(5, lines);
	return t_exit_status();
}
