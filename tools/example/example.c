/* SPDX-License-Identifier: MIT */
/*
 * regcache-example: the smallest complete use of regcache.
 *
 * A buffer is DMAed into through a cached io_uring fixed-buffer
 * registration, then unmapped and mapped again at the same address, which
 * is what an allocator does behind a middleware's back. A cache keyed by
 * address would now point the device at the old pages; regcache must not.
 *
 * Built against an installed regcache, as README.md shows:
 *   cc example.c $(pkg-config --cflags --libs regcache liburing)
 * or with CMake: find_package(regcache) and regcache::regcache, plus liburing.
 */
#include <errno.h>
#include <liburing.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <regcache.h>
#include <regcache/uring.h>

#define LEN 65536

/* Fill @buf through the device: READ_FIXED from a pipe. */
static int dma_into(struct io_uring *ring, struct regcache_region *region,
		    char *buf, const char *msg)
{
	struct io_uring_cqe *cqe;
	int fds[2], ret;

	if (pipe(fds))
		return -errno;
	if (write(fds[1], msg, strlen(msg) + 1) < 0)
		return -errno;
	io_uring_prep_read_fixed(io_uring_get_sqe(ring), fds[0], buf,
				 strlen(msg) + 1, 0,
				 regcache_region_buf_index(region));
	io_uring_submit(ring);
	ret = io_uring_wait_cqe(ring, &cqe);
	if (!ret)
		ret = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	close(fds[0]);
	close(fds[1]);
	return ret;
}

int main(void)
{
	struct regcache_stats st;
	struct regcache_region *region;
	struct regcache *cache;
	struct io_uring ring;
	char *buf;
	int ret, bad = 0;

	if ((ret = io_uring_queue_init(8, &ring, 0)) ||
	    (ret = regcache_uring_create(&ring, NULL, &cache))) {
		fprintf(stderr, "setup failed: %s\n", strerror(-ret));
		return 1;
	}
	/* The header this was compiled against, the library it runs with. */
	printf("regcache-example: header %d.%d.%d, library %d.%d.%d, "
	       "monitor \"%s\"\n", REGCACHE_VERSION_MAJOR,
	       REGCACHE_VERSION_MINOR, REGCACHE_VERSION_PATCH,
	       regcache_version() / 10000, regcache_version() / 100 % 100,
	       regcache_version() % 100, regcache_monitor_name());

	buf = mmap(NULL, LEN, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	for (int round = 0; round < 3; round++) {
		char msg[64], seen[64] = "";

		snprintf(msg, sizeof(msg), "message %d via the device", round);
		ret = regcache_get(cache, buf, LEN, 0, &region);
		if (ret) {
			fprintf(stderr, "regcache_get: %s\n", strerror(-ret));
			return 1;
		}
		memset(buf, 0, sizeof(msg));
		dma_into(&ring, region, buf, msg);
		memcpy(seen, buf, sizeof(seen) - 1);
		printf("  round %d: the application sees \"%s\" -> %s\n",
		       round, seen, strcmp(seen, msg) ? "STALE" : "ok");
		bad += strcmp(seen, msg) != 0;
		regcache_put(cache, region);

		/* Reuse the address with fresh pages, as allocators do. */
		munmap(buf, LEN);
		buf = mmap(buf, LEN, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
			   -1, 0);
		if (buf == MAP_FAILED) {
			perror("mmap at the same address");
			return 1;
		}
	}
	regcache_get_stats(cache, &st);
	printf("  hits %llu, misses %llu, uncached %llu, invalidations %llu\n",
	       (unsigned long long)st.hits, (unsigned long long)st.misses,
	       (unsigned long long)st.uncached,
	       (unsigned long long)st.invalidations);
	regcache_destroy(cache);
	io_uring_queue_exit(&ring);
	printf("%s\n", bad ? "FAILED: stale data" : "all DMA landed where the "
						   "application looks");
	return bad ? 1 : 0;
}
