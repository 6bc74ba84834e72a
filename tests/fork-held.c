/*
 * Description: in a forked child, a region that another parent thread held
 * at fork does not poison the region's reuse. The child forgets the
 * parent's regions; the holder does not exist in the child and never puts,
 * so if the forgotten region kept its reference count, its next incarnation
 * in the child would start with a phantom reference: never idle, and never
 * deregistered when invalidated. Null registrar with per-handle state;
 * single-threaded child.
 */
#include <errno.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"

static struct regcache *c;
static char *buf;
static pthread_barrier_t held, release;

static void *holder(void *arg)
{
	struct regcache_region *r;

	(void)arg;
	T_REQUIRE(regcache_get(c, buf, 4096, 0, &r) == 0);	/* shared ref */
#ifdef NEGATIVE_CONTROL
	regcache_put(c, r);	/* idle at fork: the child must pass */
	r = NULL;
#endif
	pthread_barrier_wait(&held);
	pthread_barrier_wait(&release);
	if (r)
		regcache_put(c, r);
	return NULL;
}

static int child(void *arg)
{
	struct regcache_region *r;
	struct t_null_handle *h;
	char *buf2 = buf + 8192;

	(void)arg;
	/* Notices the fork, forgets, and reuses a free region. */
	if (regcache_get(c, buf2, 4096, 0, &r))
		return 2;
	h = regcache_region_handle(r);
	regcache_put(c, r);
	regcache_invalidate(c, buf2, 4096);
	if (atomic_load(&h->live)) {
		fprintf(stderr, "child: an idle region was invalidated but never "
			"deregistered (phantom reference from the parent)\n");
		return 3;
	}
	return 0;
}

int main(void)
{
	struct regcache_region *r;
	pthread_t th;
	int status;

	c = t_null_cache(0);
	buf = t_map(4 * 4096);
	pthread_barrier_init(&held, NULL, 2);
	pthread_barrier_init(&release, NULL, 2);
	/* The main thread owns the region; the holder counts in shared_refs. */
	T_REQUIRE(regcache_get(c, buf, 4096, 0, &r) == 0);
	regcache_put(c, r);
	T_REQUIRE(pthread_create(&th, NULL, holder, NULL) == 0);
	pthread_barrier_wait(&held);

	status = t_fork_wait(child, NULL, false);
	T_CHECK(WIFEXITED(status));
	T_EXPECT_EQ(0, WIFEXITED(status) ? WEXITSTATUS(status) : -1);

	pthread_barrier_wait(&release);
	pthread_join(th, NULL);
	regcache_destroy(c);
	return t_exit_status();
}
