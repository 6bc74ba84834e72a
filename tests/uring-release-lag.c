/*
 * Description: the io_uring registrar under a kernel that gives a released
 * fixed buffer back to RLIMIT_MEMLOCK late. As uid 65532 (no capabilities)
 * with 256 KiB of RLIMIT_MEMLOCK, pass-through (every get registers, every
 * put releases): 12 DMA-checked gets of 64 KiB in a row all succeed, where
 * the kernel's late release makes the fifth one wait for it rather than
 * fail. Then, on a new cache, with 144 KiB of the limit held by another
 * process of the uid, twice: a get and put of 64 KiB, then a get of 128 KiB, which must
 * fail with -ENOMEM within a few seconds (it may wait for the 64 KiB on its
 * way back; that does not make room). After the holder has released its
 * 144 KiB, 12 gets of 64 KiB in a row must succeed again: waits that did
 * not help must not stop later ones (they once did, after two).
 *
 * Control, first and without regcache: five registrations and releases of
 * 64 KiB in one slot show whether this kernel lags (the fifth fails with
 * ENOMEM; 6.1) or not (6.18). Without the lag, the wait is not exercised
 * and that part is reported as skipped, not as passed.
 */
#include <errno.h>
#include <grp.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"

/* An unprivileged uid no other test uses: the kernel counts pinned memory
 * per user, and in the 6.1 guest uid 65534 could not pin 192 KiB for 40 s
 * after other tests, with no process of that uid left (their rings were
 * still being torn down). */
#define T_OWN_UID 65532

#define LEN 65536
/* Held by another process: 64 KiB more fit, 128 KiB do not (the ring's
 * own pages count too on some kernels). */
#define HELD (9 * LEN / 4)

static void become_unprivileged(void)
{
	struct rlimit rl = { 256 << 10, 256 << 10 };

	T_REQUIRE(setrlimit(RLIMIT_MEMLOCK, &rl) == 0);
	T_REQUIRE(setgroups(0, NULL) == 0);
	T_REQUIRE(setresgid(T_OWN_UID, T_OWN_UID, T_OWN_UID) == 0);
	T_REQUIRE(setresuid(T_OWN_UID, T_OWN_UID, T_OWN_UID) == 0);
}

/* Without regcache: does the fifth of five register-release cycles of
 * 64 KiB fail under 256 KiB? */
static bool kernel_lags(char *buf)
{
	struct iovec iov = { buf, LEN }, empty = { 0 };
	struct io_uring ring;
	bool lag = false;

	t_ring_init(&ring);
	T_REQUIRE(io_uring_register_buffers_sparse(&ring, 4) == 0);
	for (int i = 0; i < 5; i++) {
		int ret = io_uring_register_buffers_update_tag(&ring, 0, &iov,
							       NULL, 1);

		if (ret == -ENOMEM) {
			lag = true;
			break;
		}
		T_REQUIRE(ret == 1);
		T_REQUIRE(io_uring_register_buffers_update_tag(&ring, 0, &empty,
							       NULL, 1) == 1);
	}
	io_uring_queue_exit(&ring);
	return lag;
}

/* Register @iov in slot 0 of @ring, waiting while -ENOMEM (releases of
 * this uid on their way back) for up to 40 s: 1 or -errno. */
static int register_waiting(struct io_uring *ring, struct iovec *iov)
{
	double t0 = t_now();
	int ret;

	while ((ret = io_uring_register_buffers_update_tag(ring, 0, iov, NULL,
							   1)) == -ENOMEM &&
	       t_now() - t0 < 40)
		usleep(10000);
	return ret;
}

/* Another process of this uid: registers @len bytes of @buf on a ring of
 * its own, tells the parent through @ready, holds them until the parent
 * writes to @go, unregisters the table (which gives the pages back at
 * once) and exits. */
static pid_t holder(char *buf, size_t len, int *ready, int *go)
{
	int to_parent[2], to_child[2];
	pid_t pid;

	T_REQUIRE(pipe(to_parent) == 0 && pipe(to_child) == 0);
	pid = fork();
	T_REQUIRE(pid >= 0);
	if (pid == 0) {
		struct iovec iov = { buf, len };
		struct io_uring ring;
		char c = 0;

		/* Only the parent's ends: its death then ends the read. */
		close(to_parent[0]);
		close(to_child[1]);

		t_ring_init(&ring);
		/* The parent's releases may still be on their way back. */
		if (io_uring_register_buffers_sparse(&ring, 1) ||
		    register_waiting(&ring, &iov) != 1)
			_exit(1);
		if (write(to_parent[1], &c, 1) != 1 ||
		    read(to_child[0], &c, 1) != 1)
			_exit(1);
		io_uring_unregister_buffers(&ring);
		_exit(0);
	}
	close(to_parent[1]);
	close(to_child[0]);
	*ready = to_parent[0];
	*go = to_child[1];
	return pid;
}

/* @n DMA-checked gets of 64 KiB, each put at once (pass-through: every
 * one registers and releases); false if one fails. */
static bool gets_in_a_row(struct io_uring *ring, struct regcache *c,
			  char *buf, int n, const char *what)
{
	double slowest = 0;

	for (int i = 0; i < n; i++) {
		struct regcache_region *r;
		double t0 = t_now();
		int ret = regcache_get(c, buf, LEN, 0, &r);

		if (ret) {
			fprintf(stderr, "%s: get %d of 64 KiB failed after "
				"%.1f s: %s\n", what, i, t_now() - t0,
				strerror(-ret));
			return false;
		}
		if (t_now() - t0 > slowest)
			slowest = t_now() - t0;
		T_CHECK(t_dma_visible(ring, r, buf, LEN, i));
		regcache_put(c, r);
	}
	printf("%s: %d gets of 64 KiB, each put at once, all succeeded, the "
	       "slowest in %.3f s\n", what, n, slowest);
	return slowest > 0.3;
}

/*
 * A new cache, whose first waits do not help: 144 KiB held by another
 * process of this uid, and 128 KiB more cannot fit. Twice, a 64 KiB get and
 * put, so that this process's own release is on its way back when the
 * 128 KiB get fails (the get may wait for it; it does not make room). Then,
 * the 144 KiB released, 12 gets in a row must wait as before.
 */
static void failed_waits_do_not_stop_later_ones(char *buf, char *other)
{
	struct regcache_region *r;
	struct io_uring ring;
	struct regcache *c;
	int ready, go, status, ret;
	char byte;
	pid_t pid;

	sleep(3);	/* this process's earlier releases come back */
	t_ring_init(&ring);
	c = t_uring_cache(&ring, 0, 0, 0);
	pid = holder(other, HELD, &ready, &go);
	T_REQUIRE(read(ready, &byte, 1) == 1);
	for (int i = 0; i < 2; i++) {
		double t0;

		T_REQUIRE(regcache_get(c, buf, LEN, 0, &r) == 0);
		regcache_put(c, r);
		t0 = t_now();
		ret = regcache_get(c, buf, 2 * LEN, 0, &r);
		printf("128 KiB get with 144 KiB of the limit held by a "
		       "sibling: %s after %.3f s\n",
		       ret ? strerror(-ret) : "succeeded", t_now() - t0);
		T_EXPECT_EQ(-ENOMEM, ret);
		T_CHECK(t_now() - t0 < 10);
		if (!ret)
			regcache_put(c, r);
	}
	T_REQUIRE(write(go, &byte, 1) == 1);
	T_REQUIRE(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
		  WEXITSTATUS(status) == 0);
	close(ready);
	close(go);
	T_CHECK(gets_in_a_row(&ring, c, buf, 12, "after two failed waits"));
	regcache_destroy(c);
	io_uring_queue_exit(&ring);
}

static int child(void)
{
	char *buf = t_map_small_pages(2 * LEN),
	     *other = t_map_small_pages(3 * LEN);
	struct io_uring ring;
	struct regcache_region *r;
	struct regcache *c;
	bool lag;
	int ret;

	become_unprivileged();
	if (!t_user_memlock_free(256 << 10))
		return T_EXIT_FAIL;
	lag = kernel_lags(buf);
	printf("control: this kernel gives a released buffer back to "
	       "RLIMIT_MEMLOCK %s\n", lag ? "late (the fifth of five 64 KiB "
	       "registrations failed)" : "at once");
	/* Let the control's releases pass before the cache starts. */
	sleep(lag ? 3 : 0);

	setenv("REGCACHE_MONITOR", "none", 1);
	t_ring_init(&ring);
	c = t_uring_cache(&ring, 0, 0, 0);
	if (lag)
		T_CHECK(gets_in_a_row(&ring, c, buf, 12, "idle"));
	else if (!gets_in_a_row(&ring, c, buf, 12, "idle"))
		printf("SKIP (part): no late release here, so no get "
		       "waited\n");

	/* On a kernel that lags only: there, the room left depends on
	 * nothing but what is held; elsewhere closed rings stay counted
	 * while they are torn down (on 6.18, 24 KiB of an expected 112 KiB
	 * were free at times). */
	if (lag)
		failed_waits_do_not_stop_later_ones(buf, other);
	else
		printf("SKIP (part): no late release here, so no wait to "
		       "fail\n");
	ret = regcache_get(c, buf, LEN, 0, &r);
	T_EXPECT_EQ(0, ret);
	if (!ret) {
		T_CHECK(t_dma_visible(&ring, r, buf, LEN, 99));
		regcache_put(c, r);
	}
	regcache_destroy(c);
	return t_exit_status();
}

static int run_child(const void *arg)
{
	(void)arg;
	return child();
}

int main(void)
{
	struct t_child_cases cases = { 0 };


	if (getuid() != 0) {
		printf("SKIP: drops to uid 65532 with a 256 KiB memlock limit, "
		       "which needs root\n");
		return T_EXIT_SKIP;
	}
	t_child_case(&cases, "uid 65532, 256 KiB of RLIMIT_MEMLOCK", run_child,
		     NULL);
	return t_child_cases_status(&cases);
}
