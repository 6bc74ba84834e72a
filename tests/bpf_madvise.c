/*
 * Description: eBPF monitor: madvise advice that gives a range new pages
 * invalidates cached regions: MADV_DONTNEED through libc and through a raw
 * syscall, MADV_DONTNEED_LOCKED, process_madvise(MADV_DONTNEED) on
 * ourselves, MADV_REMOVE on shared memory (by us and by a forked child
 * process), and MADV_FREE (which the kernel keeps coherent until reclaim,
 * so there is no negative control, but the range is still invalidated).
 * MADV_WILLNEED must not invalidate.
 */
#include <sys/uio.h>
#include <sys/wait.h>

#include "bpf_helpers.h"

#ifndef MADV_DONTNEED_LOCKED
#define MADV_DONTNEED_LOCKED 24
#endif

#define LEN 65536

int main(void)
{
	struct regcache_stats st, st2;
	struct regcache_region *r;
	struct t_case k;
	struct io_uring ring;
	struct regcache *c;
	char *buf, *shared;

	t_bpf_env();
	t_ring_init(&ring);
	c = t_uring_cache(&ring, 0, 0, 0);
	t_bpf_require();
	buf = t_map(LEN);

	t_case_begin(&k, &ring, c, buf, LEN);
	T_REQUIRE(madvise(buf, LEN, MADV_DONTNEED) == 0);
	t_case_end(&k, "madvise(MADV_DONTNEED)", true);

	t_case_begin(&k, &ring, c, buf, LEN);
	T_REQUIRE(syscall(SYS_madvise, buf, LEN, MADV_DONTNEED) == 0);
	t_case_end(&k, "syscall(SYS_madvise, MADV_DONTNEED)", true);

	t_case_begin(&k, &ring, c, buf, LEN);
	T_REQUIRE(madvise(buf, LEN, MADV_DONTNEED_LOCKED) == 0);
	t_case_end(&k, "madvise(MADV_DONTNEED_LOCKED)", true);

	t_case_begin(&k, &ring, c, buf, LEN);
	T_REQUIRE(madvise(buf, LEN, MADV_FREE) == 0);
	t_case_end(&k, "madvise(MADV_FREE)", false);

	{
		/* process_madvise on ourselves (Linux 6.13+ accepts
		 * DONTNEED there): no madvise call at all. */
		struct iovec iov = { .iov_base = buf, .iov_len = LEN };
		int pidfd = syscall(SYS_pidfd_open, getpid(), 0);
		long ret;

		T_REQUIRE(pidfd >= 0);
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
	t_case_begin(&k, &ring, c, shared, LEN);
	T_REQUIRE(madvise(shared, LEN, MADV_REMOVE) == 0);
	t_case_end(&k, "madvise(MADV_REMOVE) on MAP_SHARED|MAP_ANONYMOUS",
		       true);

	/* The same by a forked child: another process, no syscall of ours;
	 * seen because the pages leave the shared file's page cache. */
	t_case_begin(&k, &ring, c, shared, LEN);
	{
		int status;
		pid_t pid = fork();

		T_REQUIRE(pid >= 0);
		if (pid == 0)
			_exit(madvise(shared, LEN, MADV_REMOVE) ? 1 : 0);
		T_REQUIRE(waitpid(pid, &status, 0) == pid);
		T_REQUIRE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	t_case_end(&k, "madvise(MADV_REMOVE) by a forked child on a "
		       "shared anonymous mapping", true);

	/* Harmless advice keeps the region. */
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
