/* SPDX-License-Identifier: MIT */
/*
 * Description: regcache_uring_prep_read_fixed()/write_fixed() prepare
 * fixed-buffer I/O for any buffer (unaligned, spanning pages) through the
 * real io_uring registrar: READ_FIXED data lands exactly at the buffer and
 * nowhere around it, WRITE_FIXED sends exactly the buffer's bytes, reuse
 * hits the cache, and bad input or unmapped memory is an error that leaves
 * the SQE untouched. Runs with the machine's monitor and with "none".
 */
#include <errno.h>
#include <sys/mman.h>

#include "helpers.h"


static size_t pg;

static void read_lands_exactly(struct io_uring *ring, struct regcache *c)
{
	unsigned char *buf = t_map(4 * pg);
	unsigned char *target = buf + 777;
	size_t len = 5000;	/* spans two pages */

	memset(buf, 0xee, 4 * pg);
	T_CHECK(t_prep_read_visible(ring, c, target, len, 1));
	/* Nothing outside [target, target + len) was written. */
	T_EXPECT_EQ(0xee, buf[776]);
	T_EXPECT_EQ(0xee, target[len]);
	munmap(buf, 4 * pg);
}

static void write_sends_exactly(struct io_uring *ring, struct regcache *c)
{
	unsigned char *buf = t_map(4 * pg), got[6000];
	unsigned char *src = buf + pg - 100;	/* crosses a page boundary */
	struct regcache_region *r = NULL;
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	size_t len = 3000;
	int fds[2];

	for (size_t i = 0; i < len; i++)
		src[i] = t_prep_byte(7, i);
	T_REQUIRE(pipe(fds) == 0);
	sqe = io_uring_get_sqe(ring);
	T_REQUIRE(sqe);
	T_REQUIRE(regcache_uring_prep_write_fixed(c, sqe, fds[1], src,
						  (unsigned)len, 0, &r) == 0);
	T_CHECK(r != NULL);
	io_uring_sqe_set_data(sqe, r);
	T_REQUIRE(io_uring_submit(ring) == 1);
	T_REQUIRE(io_uring_wait_cqe(ring, &cqe) == 0);
	T_EXPECT_EQ(len, cqe->res);
	T_CHECK(io_uring_cqe_get_data(cqe) == r);
	io_uring_cqe_seen(ring, cqe);
	regcache_put(c, r);
	T_REQUIRE(read(fds[0], got, sizeof(got)) == (ssize_t)len);
	T_CHECK(memcmp(got, src, len) == 0);
	close(fds[0]);
	close(fds[1]);
	munmap(buf, 4 * pg);
}

static void errors(struct io_uring *ring, struct regcache *c)
{
	struct regcache_region *r = NULL;
	struct io_uring_sqe *sqe, before;
	struct io_uring_cqe *cqe;
	char *gone = t_map(pg), *buf = t_map(pg);

	munmap(gone, pg);
	sqe = io_uring_get_sqe(ring);
	T_REQUIRE(sqe);
	memset(sqe, 0x5a, sizeof(*sqe));
	before = *sqe;
	T_EXPECT_EQ(-EINVAL, regcache_uring_prep_read_fixed(NULL, sqe, 0, buf,
							    8, 0, &r));
	T_EXPECT_EQ(-EINVAL, regcache_uring_prep_read_fixed(c, NULL, 0, buf, 8,
							    0, &r));
	T_EXPECT_EQ(-EINVAL, regcache_uring_prep_read_fixed(c, sqe, 0, NULL, 8,
							    0, &r));
	T_EXPECT_EQ(-EINVAL, regcache_uring_prep_read_fixed(c, sqe, 0, buf, 0,
							    0, &r));
	T_EXPECT_EQ(-EINVAL, regcache_uring_prep_write_fixed(c, sqe, 0, buf, 8,
							     0, NULL));
	T_EXPECT_EQ(-EFAULT, regcache_uring_prep_read_fixed(c, sqe, 0, gone,
							    64, 0, &r));
	T_EXPECT_EQ(-EFAULT, regcache_uring_prep_write_fixed(c, sqe, 1, gone,
							     64, 0, &r));
	T_CHECK(memcmp(&before, sqe, sizeof(before)) == 0);
	T_CHECK(r == NULL);
	/* The SQE is still the caller's to fill. Its poison goes first:
	 * newer liburing (Debian 13's 2.9, not Debian 12's 2.3) clears in
	 * io_uring_get_sqe() the fields its prep helpers do not set (flags,
	 * ioprio, personality, ...), and with flags of 0x5a the kernel
	 * refuses the NOP. */
	memset(sqe, 0, sizeof(*sqe));
	io_uring_prep_nop(sqe);
	T_REQUIRE(io_uring_submit(ring) == 1);
	T_REQUIRE(io_uring_wait_cqe(ring, &cqe) == 0);
	T_EXPECT_EQ(0, cqe->res);
	io_uring_cqe_seen(ring, cqe);
	munmap(buf, pg);
}

/* With explicit invalidation the helpers cache: the second use hits. */
static void reuse_hits(void)
{
	struct regcache_stats st;
	struct io_uring ring;
	struct regcache *c;
	char *buf = t_map(2 * pg);

	t_ring_init(&ring);
	c = t_uring_cache(&ring, REGCACHE_FLAG_EXPLICIT_INVALIDATE, 0, 0);
	for (unsigned i = 0; i < 4; i++)
		T_CHECK(t_prep_read_visible(&ring, c, buf + 64 * i, 1000, i));
	regcache_get_stats(c, &st);
	T_EXPECT_EQ(1, st.registrations);
	T_EXPECT_EQ(3, st.hits);
	T_EXPECT_EQ(0, st.uncached);
	regcache_destroy(c);
	io_uring_queue_exit(&ring);
	munmap(buf, 2 * pg);
}

int main(void)
{
	struct io_uring ring;
	struct regcache *c;

	pg = (size_t)sysconf(_SC_PAGESIZE);
	t_ring_init(&ring);
	c = t_uring_cache(&ring, 0, 0, 0);
	read_lands_exactly(&ring, c);
	write_sends_exactly(&ring, c);
	errors(&ring, c);
	regcache_destroy(c);
	io_uring_queue_exit(&ring);
	reuse_hits();
	printf("monitor: %s\n", regcache_monitor_name());
	return t_exit_status();
}
