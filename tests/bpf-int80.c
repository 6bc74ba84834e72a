/*
 * Description: eBPF monitor: a 64-bit process unmapping a cached range
 * through the 32-bit int $0x80 entry (i386 munmap = 91), with the same
 * address mapped again, is still invalidated (the programs treat any such
 * compat call as "everything"). Needs memory below 4 GiB (MAP_32BIT) and
 * IA32 emulation; skips when the kernel has none.
 */
#include <setjmp.h>
#include <signal.h>

#include "helpers.h"

#define LEN 65536

static sigjmp_buf jb;

static void on_segv(int sig)
{
	(void)sig;
	siglongjmp(jb, 1);
}

static long int80_munmap(void *addr, unsigned long len)
{
	long ret;

	__asm__ volatile("int $0x80"
			 : "=a"(ret)
			 : "a"(91L), "b"(addr), "c"(len)
			 : "memory", "r8", "r9", "r10", "r11");
	return ret;
}

int main(void)
{
	struct t_case k;
	struct io_uring ring;
	struct regcache *c;
	char *buf;
	long ret;

	t_monitor_only("bpf");
	t_ring_init(&ring);
	c = t_uring_cache(&ring, 0, 0, 0);
	t_monitor_require();
	buf = mmap(NULL, LEN, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
	T_REQUIRE(buf != MAP_FAILED);
	T_REQUIRE((uintptr_t)buf + LEN <= 0xffffffffu);

	/* Is int $0x80 available at all? munmap(0, 0) is EINVAL there. */
	signal(SIGSEGV, on_segv);
	if (sigsetjmp(jb, 1)) {
		printf("SKIP: int $0x80 faults: no IA32 emulation\n");
		return T_EXIT_SKIP;
	}
	ret = int80_munmap(NULL, 0);
	signal(SIGSEGV, SIG_DFL);
	if (ret == -ENOSYS) {
		printf("SKIP: int $0x80 returns ENOSYS: no IA32 emulation\n");
		return T_EXIT_SKIP;
	}
	T_EXPECT_EQ(-EINVAL, ret);

	t_case_begin(&k, &ring, c, buf, LEN);
	T_EXPECT_EQ(0, int80_munmap(buf, LEN));
	T_REQUIRE(mmap(buf, LEN, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
		       -1, 0) == buf);
	t_case_end(&k, "munmap through int $0x80", true);

	regcache_destroy(c);
	io_uring_queue_exit(&ring);
	return t_exit_status();
}
