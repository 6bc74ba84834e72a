/*
 * Description: eBPF monitor: munmap and madvise(MADV_DONTNEED) issued through
 * the x32 syscall ABI (number | 0x40000000) from a 64-bit process: the
 * programs must decode them like the native calls. Skips when the kernel
 * has no x32 ABI (the call fails with ENOSYS and changes nothing).
 */
#include "helpers.h"

#define LEN 65536
#define X32 0x40000000L

int main(void)
{
	struct t_case k;
	struct io_uring ring;
	struct regcache *c;
	char *buf, *again;
	long ret;

	t_monitor_only("bpf");
	t_ring_init(&ring);
	c = t_uring_cache(&ring, 0, 0, 0);
	t_monitor_require();
	/* Probe with a call that changes nothing (len 0 is EINVAL). */
	ret = syscall(X32 | SYS_munmap, 0, 0);
	if (ret < 0 && errno == ENOSYS) {
		printf("SKIP: this kernel has no x32 syscall ABI\n");
		regcache_destroy(c);
		io_uring_queue_exit(&ring);
		return T_EXIT_SKIP;
	}
	buf = t_map(LEN);

	t_case_begin(&k, &ring, c, buf, LEN);
	T_REQUIRE(syscall(X32 | SYS_munmap, buf, LEN) == 0);
	again = mmap(buf, LEN, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	T_REQUIRE(again == buf);
	memset(buf, 0, LEN);
	t_case_end(&k, "x32 munmap + mmap", true);

	t_case_begin(&k, &ring, c, buf, LEN);
	T_REQUIRE(syscall(X32 | SYS_madvise, buf, LEN, MADV_DONTNEED) == 0);
	memset(buf, 0, LEN);
	t_case_end(&k, "x32 madvise(MADV_DONTNEED)", true);

	regcache_destroy(c);
	io_uring_queue_exit(&ring);
	return t_exit_status();
}
