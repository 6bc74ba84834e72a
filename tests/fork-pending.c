/*
 * Description: a fork while another thread is inside ops->reg (a pending
 * registration, cache lock not held) leaves no trace of that thread's
 * on-stack pending record on the child's cache. In the child the thread
 * does not exist; glibc hands its stack to the next thread the child
 * creates, and a cache that still listed the record would walk and write
 * through whatever that new thread keeps there. The child's new thread
 * fills its stack with pointers to a decoy record; the library must never
 * write the decoy's "tainted" byte.
 */
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"

#define LEN 16384

/* Same layout as struct rc_pending; only used as a tripwire. */
struct decoy {
	uintptr_t start, end;
	_Bool tainted;
	void *next, **prev;
};
static struct decoy decoy __attribute__((aligned(64)));

static struct t_registrar t;
static struct regcache *c;
static char *buf;

static pthread_barrier_t filled, checked;

static void *stack_filler(void *arg)
{
	volatile uintptr_t fill[16384];

	(void)arg;
	for (size_t i = 0; i < sizeof(fill) / sizeof(fill[0]); i++)
		fill[i] = (uintptr_t)&decoy;
	pthread_barrier_wait(&filled);
	pthread_barrier_wait(&checked);
	return NULL;
}

static int child(void)
{
	pthread_t th;
	struct regcache_region *r;

	pthread_barrier_init(&filled, NULL, 2);
	pthread_barrier_init(&checked, NULL, 2);
	if (pthread_create(&th, NULL, stack_filler, NULL))
		return 2;
	pthread_barrier_wait(&filled);
	/* Any call that syncs the cache walks its pending list. */
	if (regcache_get(c, buf, LEN, 0, &r) == 0)
		(void)r; /* never put in the child: the slot is the parent's */
	regcache_invalidate(c, (void *)4096, UINTPTR_MAX - 8192);
	pthread_barrier_wait(&checked);
	pthread_join(th, NULL);
	if (decoy.tainted) {
		fprintf(stderr, "child: the cache wrote through a pending record "
			"left by a thread that does not exist in the child\n");
		return 3;
	}
	return 0;
}

int main(void)
{
	int status;
	pid_t pid;

#if defined(REGCACHE_SANITIZE) || defined(__SANITIZE_THREAD__)
	fprintf(stderr, "SKIP: sanitizers cannot start threads in a child "
		"forked from a multi-threaded parent\n");
	return T_EXIT_SKIP;
#endif
	buf = t_map(LEN);
	memset(buf, 1, LEN);
	c = t_pending_get_start(&t, buf, LEN);

	pid = fork();	/* W is inside ops->reg: no cache lock is held */
	T_REQUIRE(pid >= 0);
	if (pid == 0)
		_exit(child());

	t_pending_release();
	t_pending_get_join();
	T_REQUIRE(waitpid(pid, &status, 0) == pid);
	if (WIFSIGNALED(status))
		fprintf(stderr, "child killed by signal %d\n", WTERMSIG(status));
	T_CHECK(WIFEXITED(status));
	T_EXPECT_EQ(0, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	regcache_destroy(c);
	t_registrar_fini(&t);
	return t_exit_status();
}
