/* SPDX-License-Identifier: MIT */
/*
 * A buffer whose pages keep changing under the cache, every get checked
 * by DMA: the workload the fault-injection tests (limits, seccomp) run
 * while the library is starved or denied, where the question is only
 * "still no stale byte, whatever the monitor fell back to?".
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "helpers.h"

bool t_get_dma_checked(struct io_uring *ring, struct regcache *c, char *buf,
		       size_t len, unsigned seed)
{
	struct regcache_region *r;
	bool ok;
	int ret = regcache_get(c, buf, len, 0, &r);

	if (ret) {
		fprintf(stderr, "regcache_get(%p, %zu): %s\n", buf, len,
			strerror(-ret));
		t_failures++;
		return false;
	}
	ok = t_dma_visible(ring, r, buf, len, seed);
	regcache_put(c, r);
	if (!ok) {
		fprintf(stderr, "stale: DMA through the region of %p+%zu did "
			"not reach the application's pages\n", buf, len);
		t_failures++;
	}
	return ok;
}

void t_churn_scenario(struct io_uring *ring, struct regcache *c, char *buf,
		      size_t len)
{
	for (unsigned i = 0; i < 12; i++) {
		char *to;

		t_get_dma_checked(ring, c, buf, len, i);
		/* A sub-range: a hit where the monitor allows caching. */
		t_get_dma_checked(ring, c, buf + 100, 3000, i + 100);
		switch (i % 4) {
		case 0:	/* raw munmap, then new pages at the same place */
			T_REQUIRE(syscall(SYS_munmap, buf, len) == 0);
			T_REQUIRE(mmap(buf, len, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS |
				       MAP_FIXED_NOREPLACE, -1, 0) == buf);
			break;
		case 1:
			T_REQUIRE(mmap(buf, len, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
				       -1, 0) == buf);
			break;
		case 2:	/* the pages move away; new ones take their place */
			to = t_map(len);
			T_REQUIRE(mremap(buf, len, len,
					 MREMAP_MAYMOVE | MREMAP_FIXED, to) == to);
			T_REQUIRE(mmap(buf, len, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS |
				       MAP_FIXED_NOREPLACE, -1, 0) == buf);
			munmap(to, len);
			break;
		default:
			T_REQUIRE(madvise(buf, len, MADV_DONTNEED) == 0);
			break;
		}
		memset(buf, 0x5a, len);
	}
}
