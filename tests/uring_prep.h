/* SPDX-License-Identifier: MIT */
/* The DMA oracle of tests/helpers.c, driven through the pointer-only
 * helpers: the test never sees a fixed-buffer index. */
#ifndef T_URING_PREP_H
#define T_URING_PREP_H

#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"

static inline unsigned char t_prep_byte(unsigned seed, size_t i)
{
	return (unsigned char)((seed * 151u + i * 13u + (i >> 9)) | 1u);
}

/*
 * Write @len pattern bytes into a pipe, let regcache_uring_prep_read_fixed()
 * prepare the READ_FIXED into @buf, reap it, put the region (found again
 * through the CQE's user_data), and return whether the application sees
 * the bytes at @buf. Fails the test on an I/O or API error.
 */
static inline bool t_prep_read_visible(struct io_uring *ring,
				       struct regcache *c, void *buf,
				       size_t len, unsigned seed)
{
	static unsigned char src[65536];
	struct regcache_region *r = NULL;
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	unsigned char *dst = buf;
	int fds[2], ret;

	T_REQUIRE(len <= sizeof(src));
	T_REQUIRE(pipe(fds) == 0);
	fcntl(fds[0], F_SETPIPE_SZ, 1 << 17);
	for (size_t i = 0; i < len; i++)
		src[i] = t_prep_byte(seed, i);
	T_REQUIRE(write(fds[1], src, len) == (ssize_t)len);
	memset(dst, 0, len);

	sqe = io_uring_get_sqe(ring);
	T_REQUIRE(sqe);
	ret = regcache_uring_prep_read_fixed(c, sqe, fds[0], buf,
					     (unsigned)len, 0, &r);
	if (ret) {
		fprintf(stderr, "regcache_uring_prep_read_fixed: %s\n",
			strerror(-ret));
		exit(T_EXIT_FAIL);
	}
	io_uring_sqe_set_data(sqe, r);
	T_REQUIRE(io_uring_submit(ring) == 1);
	T_REQUIRE(io_uring_wait_cqe(ring, &cqe) == 0);
	ret = cqe->res;
	r = io_uring_cqe_get_data(cqe);
	io_uring_cqe_seen(ring, cqe);
	regcache_put(c, r);
	close(fds[0]);
	close(fds[1]);
	if (ret != (int)len) {
		fprintf(stderr, "READ_FIXED returned %d (%s), expected %zu\n",
			ret, ret < 0 ? strerror(-ret) : "short", len);
		exit(T_EXIT_FAIL);
	}
	for (size_t i = 0; i < len; i++)
		if (dst[i] != t_prep_byte(seed, i))
			return false;
	return true;
}

#endif
