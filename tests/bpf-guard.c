/*
 * Description: eBPF monitor: MADV_GUARD_INSTALL zaps the pages of a cached
 * range (userfaultfd sees no event for it); after MADV_GUARD_REMOVE the
 * range faults in fresh pages, and the next get must not serve the old
 * registration.
 */
#include "helpers.h"

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#define MADV_GUARD_REMOVE 103
#endif

#define LEN 65536

int main(void)
{
	struct t_case k;
	struct io_uring ring;
	struct regcache *c;
	char *buf;

	t_monitor_only("bpf");
	t_ring_init(&ring);
	c = t_uring_cache(&ring, 0, 0, 0);
	t_monitor_require();
	buf = t_map(LEN);

	t_case_begin(&k, &ring, c, buf, LEN);
	if (madvise(buf, LEN, MADV_GUARD_INSTALL)) {
		if (errno == EINVAL) {
			printf("SKIP: MADV_GUARD_INSTALL needs Linux 6.13\n");
			return T_EXIT_SKIP;
		}
		T_REQUIRE(0);
	}
	T_REQUIRE(madvise(buf, LEN, MADV_GUARD_REMOVE) == 0);
	t_case_end(&k, "MADV_GUARD_INSTALL + MADV_GUARD_REMOVE", true);

	regcache_destroy(c);
	io_uring_queue_exit(&ring);
	return t_exit_status();
}
