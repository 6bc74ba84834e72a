/*
 * Description: fork() while another thread evicts across caches does not
 * deadlock. That thread holds the list of caches (caches_lock) while it
 * deregisters another cache's idle region, and then unwatches the region,
 * which takes the monitor backend's lock; fork's prepare handler must take
 * caches_lock before the backend's lock (src/base/fork.h), whichever of the
 * cache or the monitor came first. The cache here is created before the
 * monitor starts, the order in which handlers registered one per part
 * would take the backend's lock first and deadlock.
 * Oracle: the fork completes and the child exits 0 within 10 s (a
 * deadlock trips the alarm), and the evicting thread's get succeeds.
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"

#define LEN 16384

/* A registrar that says "out of resources" once, on request, and whose
 * deregistration, once armed, says it has started and then lingers so
 * that the fork below begins while it runs. */
static atomic_bool refuse_next, linger_next;
static sem_t in_dereg;
static int handles;

static int fake_reg(void *ctx, void *addr, size_t len, unsigned access,
		    void **handle)
{
	(void)ctx;
	(void)addr;
	(void)len;
	(void)access;
	if (atomic_exchange(&refuse_next, false))
		return -ENOMEM;
	*handle = &handles;
	return 0;
}

static void fake_dereg(void *ctx, void *handle)
{
	struct timespec linger = { 0, 300 * 1000000L };

	(void)ctx;
	(void)handle;
	if (atomic_exchange(&linger_next, false)) {
		sem_post(&in_dereg);
		nanosleep(&linger, NULL);
	}
}

static const struct regcache_ops fake_ops = {
	.reg = fake_reg,
	.dereg = fake_dereg,
};

static struct regcache *a, *b;
static char *bufa, *bufb;

/* A get on cache b that the registrar refuses: b has nothing idle, so the
 * cache evicts a's idle region under caches_lock, and retries. */
static void *evict_across(void *arg)
{
	struct regcache_region *r;
	int ret;

	(void)arg;
	atomic_store(&refuse_next, true);
	atomic_store(&linger_next, true);
	ret = regcache_get(b, bufb, LEN, 0, &r);
	if (!ret)
		regcache_put(b, r);
	return (void *)(intptr_t)ret;
}

static void deadlocked(int sig)
{
	static const char msg[] = "FAIL: fork() deadlocked against a thread "
				  "that evicts across caches\n";

	(void)sig;
	if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0)
		(void)0;
	_exit(T_EXIT_FAIL);
}

int main(void)
{
	struct regcache_params p = { .ops = &fake_ops };
	struct regcache_region *r;
	struct regcache_stats st;
	pthread_t thread;
	void *thread_ret;
	int status;
	pid_t pid;

	bufa = t_map(LEN);
	bufb = t_map(LEN);
	memset(bufa, 1, LEN);
	memset(bufb, 1, LEN);
	sem_init(&in_dereg, 0, 0);
	T_REQUIRE(regcache_create(&p, &a) == 0);
	t_monitor_require();
	T_REQUIRE(regcache_create(&p, &b) == 0);
	/* An idle region of a, watched by the monitor. */
	T_EXPECT_EQ(0, regcache_get(a, bufa, LEN, 0, &r));
	regcache_put(a, r);

	signal(SIGALRM, deadlocked);
	alarm(10);
	T_REQUIRE(pthread_create(&thread, NULL, evict_across, NULL) == 0);
	sem_wait(&in_dereg);
	pid = fork();
	T_REQUIRE(pid >= 0);
	if (pid == 0)
		_exit(0);
	T_REQUIRE(waitpid(pid, &status, 0) == pid);
	T_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	pthread_join(thread, &thread_ret);
	alarm(0);
	T_EXPECT_EQ(0, (int)(intptr_t)thread_ret);
	regcache_get_stats(a, &st);
	T_EXPECT_EQ(1, (int)st.evictions);
	regcache_destroy(b);
	regcache_destroy(a);
	return t_exit_status();
}
