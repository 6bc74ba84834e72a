/*
 * Description: in a forked child, a thread whose get starts while another
 * thread is recovering the cache from the fork never hits a parent's
 * region: the hit path must not see the monitor's cursor as current before
 * the parent's regions are forgotten. The window is widened by giving the
 * cache many regions (forgetting them takes a while) and asking for the one
 * forgotten last. Null registrar whose handles record the registering
 * process.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"

#define NREG T_SCALE(40000)

static struct regcache *c;
static char *area;
static _Atomic int go;
static long delay_ns;
static int stale;

static void spin_ns(long ns)
{
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < ns);
}

static void *hitter(void *arg)
{
	struct regcache_region *r;
	char *last = area + (size_t)(NREG - 1) * 4096;

	(void)arg;
	while (!atomic_load(&go))
		;
	spin_ns(delay_ns);
	if (regcache_get(c, last, 4096, 0, &r) == 0) {
		struct t_null_handle *h = regcache_region_handle(r);

		if (h->pid != getpid())
			stale = 1;
		else
			regcache_put(c, r);
	}
	return NULL;
}

static int child(void *arg)
{
	struct regcache_region *r;
	pthread_t th;

	(void)arg;
	if (pthread_create(&th, NULL, hitter, NULL))
		return 2;
	atomic_store(&go, 1);
	/* This get notices the fork and recovers the cache. */
	if (regcache_get(c, area + (size_t)NREG * 4096, 4096, 0, &r) == 0)
		regcache_put(c, r);
	pthread_join(th, NULL);
	return stale ? 3 : 0;
}

int main(void)
{
#if defined(REGCACHE_SANITIZE) || defined(__SANITIZE_THREAD__)
	fprintf(stderr, "SKIP: sanitizers cannot start threads in a child "
		"forked from a multi-threaded parent\n");
	return T_EXIT_SKIP;
#endif
	c = t_null_cache(NREG + 16);
	area = mmap(NULL, (size_t)(NREG + 1) * 4096, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	T_REQUIRE(area != MAP_FAILED);
	for (long i = 0; i < NREG; i++) {
		struct regcache_region *r;

		T_REQUIRE(regcache_get(c, area + i * 4096, 4096, 0, &r) == 0);
		regcache_put(c, r);
	}
	for (delay_ns = 0; delay_ns <= 4000000 && !t_failures;
	     delay_ns = delay_ns ? delay_ns * 2 : 1000) {
		int status = t_fork_wait(child, NULL, false);

		T_CHECK(WIFEXITED(status));
		if (WIFEXITED(status) && WEXITSTATUS(status) == 3) {
			fprintf(stderr, "child (hit %ld ns after the recovery "
				"began): served a region the parent registered\n",
				delay_ns);
			t_failures++;
		}
	}
	regcache_destroy(c);
	return t_exit_status();
}
