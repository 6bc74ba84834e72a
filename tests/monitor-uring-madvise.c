/*
 * Description: IORING_OP_MADVISE(MADV_DONTNEED), which the kernel runs in
 * an io-wq worker with no madvise syscall at all (invisible to every libc
 * hook), invalidates the cached region. Runs under each kernel monitor: the
 * eBPF programs see the zap in the mm, userfaultfd gets a REMOVE event.
 */
#include "helpers.h"

#define LEN 65536

int main(void)
{
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	struct t_case k;
	struct io_uring ring;
	struct regcache *c;
	char *buf;
	int res;

	t_ring_init(&ring);
	c = t_uring_cache(&ring, 0, 0, 0);
	t_monitor_require();
	buf = t_map(LEN);

	t_case_begin(&k, &ring, c, buf, LEN);
	sqe = io_uring_get_sqe(&ring);
	T_REQUIRE(sqe);
	io_uring_prep_madvise(sqe, buf, LEN, MADV_DONTNEED);
	T_REQUIRE(io_uring_submit(&ring) == 1);
	T_REQUIRE(io_uring_wait_cqe(&ring, &cqe) == 0);
	res = cqe->res;
	io_uring_cqe_seen(&ring, cqe);
	if (res == -EINVAL || res == -EOPNOTSUPP) {
		printf("SKIP: IORING_OP_MADVISE unsupported (%s)\n",
		       strerror(-res));
		return T_EXIT_SKIP;
	}
	T_EXPECT_EQ(0, res);
	t_case_end(&k, "io_uring IORING_OP_MADVISE(MADV_DONTNEED)", true);

	regcache_destroy(c);
	io_uring_queue_exit(&ring);
	return t_exit_status();
}
