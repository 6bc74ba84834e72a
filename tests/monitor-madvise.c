/*
 * Description: madvise advice that gives a range new pages invalidates
 * cached regions: MADV_DONTNEED through libc and through a raw syscall,
 * MADV_DONTNEED_LOCKED, and process_madvise(MADV_DONTNEED) on ourselves.
 * MADV_WILLNEED must not invalidate. Runs under each kernel monitor, which
 * differ where the kernel gives them different news:
 *  - MADV_FREE: the kernel keeps pinned pages coherent until reclaim, so
 *    there is no negative control. The eBPF monitor invalidates the range;
 *    under userfaultfd it may stay cached. Either way DMA after it is
 *    visible.
 *  - MADV_REMOVE on shared anonymous memory, by us and by a forked child
 *    (another process, no syscall of ours): the eBPF monitor caches the
 *    mapping and sees the pages leave the shared file's page cache; the
 *    userfaultfd monitor would get no event for the child's call, so it
 *    serves the mapping uncached.
 */
#include <sys/uio.h>
#include <sys/wait.h>

#include "helpers.h"

#ifndef MADV_DONTNEED_LOCKED
#define MADV_DONTNEED_LOCKED 24
#endif

#define LEN 65536

/* Another process takes the pages away: no syscall of ours, and no
 * userfaultfd event for our mapping. */
static void remove_by_child(void *arg)
{
	int status;
	pid_t pid = fork();

	T_REQUIRE(pid >= 0);
	if (pid == 0)
		_exit(madvise(arg, LEN, MADV_REMOVE) ? 1 : 0);
	T_REQUIRE(waitpid(pid, &status, 0) == pid);
	T_REQUIRE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(void)
{
	struct regcache_stats st, st2;
	struct regcache_region *r;
	struct t_case k;
	struct io_uring ring;
	struct regcache *c;
	char *buf, *shared;

	t_ring_init(&ring);
	c = t_uring_cache(&ring, 0, 0, 0);
	t_monitor_require();
	/* A fresh buffer for each case: the userfaultfd monitor publishes
	 * a REMOVE again a few milliseconds later (madvise sends it before
	 * it zaps the pages), which may still invalidate the region of the
	 * next case on the same buffer and turn its expected hit into a
	 * miss. */
	buf = t_map(LEN);

	t_case_begin(&k, &ring, c, buf, LEN);
	T_REQUIRE(madvise(buf, LEN, MADV_DONTNEED) == 0);
	t_case_end(&k, "madvise(MADV_DONTNEED)", true);

	buf = t_map(LEN);
	t_case_begin(&k, &ring, c, buf, LEN);
	T_REQUIRE(syscall(SYS_madvise, buf, LEN, MADV_DONTNEED) == 0);
	t_case_end(&k, "syscall(SYS_madvise, MADV_DONTNEED)", true);

	buf = t_map(LEN);
	t_case_begin(&k, &ring, c, buf, LEN);
	T_REQUIRE(madvise(buf, LEN, MADV_DONTNEED_LOCKED) == 0);
	t_case_end(&k, "madvise(MADV_DONTNEED_LOCKED)", true);

	buf = t_map(LEN);
	if (t_monitor_is("userfaultfd")) {
		/* Whether a REMOVE event invalidates the region or not, the
		 * DMA must be visible. */
		T_EXPECT_EQ(0, regcache_get(c, buf, LEN, 0, &r));
		regcache_put(c, r);
		regcache_get_stats(c, &st);
		T_REQUIRE(madvise(buf, LEN, MADV_FREE) == 0);
		memset(buf, 7, LEN);
		T_EXPECT_EQ(0, regcache_get(c, buf, LEN, 0, &r));
		regcache_get_stats(c, &st2);
		T_CHECK(t_dma_visible(&ring, r, buf, LEN, 5));
		regcache_put(c, r);
		printf("ok: madvise(MADV_FREE): DMA visible (%s)\n",
		       st2.hits == st.hits + 1 ? "still cached" :
						 "invalidated");
	} else {
		t_case_begin(&k, &ring, c, buf, LEN);
		T_REQUIRE(madvise(buf, LEN, MADV_FREE) == 0);
		t_case_end(&k, "madvise(MADV_FREE)", false);
	}

	{
		/* process_madvise on ourselves (Linux 6.13+ accepts
		 * DONTNEED there): no madvise call at all. */
		struct iovec iov;
		int pidfd = syscall(SYS_pidfd_open, getpid(), 0);
		long ret;

		T_REQUIRE(pidfd >= 0);
		buf = t_map(LEN);
		iov = (struct iovec){ .iov_base = buf, .iov_len = LEN };
		t_case_begin(&k, &ring, c, buf, LEN);
		ret = syscall(SYS_process_madvise, pidfd, &iov, 1,
			      MADV_DONTNEED, 0);
		if (ret < 0 && errno == EINVAL) {
			printf("process_madvise(MADV_DONTNEED) on self is not "
			       "supported here (EINVAL)\n");
			regcache_put(c, k.held);
		} else {
			T_EXPECT_EQ(LEN, ret);
			t_case_end(&k, "process_madvise(self, "
				       "MADV_DONTNEED)", true);
		}
		close(pidfd);
	}

	shared = mmap(NULL, LEN, PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	T_REQUIRE(shared != MAP_FAILED);
	if (t_monitor_is("userfaultfd")) {
		t_passthrough_case(&ring, c, shared, LEN, remove_by_child,
				   shared, "madvise(MADV_REMOVE) by a forked "
				   "child on a shared anonymous mapping");
	} else {
		t_case_begin(&k, &ring, c, shared, LEN);
		T_REQUIRE(madvise(shared, LEN, MADV_REMOVE) == 0);
		t_case_end(&k, "madvise(MADV_REMOVE) on "
			       "MAP_SHARED|MAP_ANONYMOUS", true);

		t_case_begin(&k, &ring, c, shared, LEN);
		remove_by_child(shared);
		t_case_end(&k, "madvise(MADV_REMOVE) by a forked child on a "
			       "shared anonymous mapping", true);
	}

	/* Harmless advice keeps the region. */
	buf = t_map(LEN);
	T_EXPECT_EQ(0, regcache_get(c, buf, LEN, 0, &r));
	regcache_put(c, r);
	regcache_get_stats(c, &st);
	T_REQUIRE(madvise(buf, LEN, MADV_WILLNEED) == 0);
	T_EXPECT_EQ(0, regcache_get(c, buf, LEN, 0, &r));
	regcache_get_stats(c, &st2);
	T_EXPECT_EQ(st.hits + 1, st2.hits);
	regcache_put(c, r);

	regcache_destroy(c);
	io_uring_queue_exit(&ring);
	return t_exit_status();
}
