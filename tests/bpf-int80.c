/*
 * Description: eBPF monitor: a 64-bit process that changes a cached range
 * through the 32-bit int $0x80 entry is still invalidated (the programs
 * treat any such compat call as "everything"), for each i386 call that
 * reaches a different kernel entry point: munmap (91) with the address
 * mapped again, madvise(MADV_DONTNEED) (219), mremap (163) moving the
 * pages away, mmap2 (192) and the old mmap (90, arguments in memory) with
 * MAP_FIXED over the range. The programs decode each by its own i386
 * number, so a number missing from their list shows here as a stale hit.
 * Needs memory below 4 GiB (MAP_32BIT) and IA32 emulation; skips when the
 * kernel has none.
 */
#include <setjmp.h>
#include <signal.h>

#include "helpers.h"

#define LEN 65536

#define NR32_OLD_MMAP 90
#define NR32_MUNMAP 91
#define NR32_MREMAP 163
#define NR32_MMAP2 192
#define NR32_MADVISE 219

static sigjmp_buf jb;

static void on_segv(int sig)
{
	(void)sig;
	siglongjmp(jb, 1);
}

/* An i386 syscall with up to six arguments (the sixth in %ebp, which is
 * saved around the call; the red zone is stepped over first). */
static long int80(long nr, unsigned a0, unsigned a1, unsigned a2, unsigned a3,
		  unsigned a4, unsigned a5)
{
	long ret;

	__asm__ volatile("sub $128, %%rsp\n\t"
			 "push %%rbp\n\t"
			 "mov %k[a5], %%ebp\n\t"
			 "int $0x80\n\t"
			 "pop %%rbp\n\t"
			 "add $128, %%rsp"
			 : "=a"(ret)
			 : "a"(nr), "b"(a0), "c"(a1), "d"(a2), "S"(a3),
			   "D"(a4), [a5] "r"(a5)
			 : "memory", "r8", "r9", "r10", "r11", "cc");
	return ret;
}

static unsigned low(const void *p)
{
	T_REQUIRE((uintptr_t)p + LEN <= 0xffffffffu);
	return (unsigned)(uintptr_t)p;
}

static void *map_low(void)
{
	void *p = mmap(NULL, LEN, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);

	T_REQUIRE(p != MAP_FAILED);
	low(p);
	return p;
}

int main(void)
{
	struct t_case k;
	struct io_uring ring;
	struct regcache *c;
	unsigned *args;
	char *buf, *other;
	long ret;

	t_monitor_only("bpf");
	t_ring_init(&ring);
	c = t_uring_cache(&ring, 0, 0, 0);
	t_monitor_require();
	buf = map_low();
	other = map_low();
	args = map_low();

	/* Is int $0x80 available at all? munmap(0, 0) is EINVAL there. */
	signal(SIGSEGV, on_segv);
	if (sigsetjmp(jb, 1)) {
		printf("SKIP: int $0x80 faults: no IA32 emulation\n");
		return T_EXIT_SKIP;
	}
	ret = int80(NR32_MUNMAP, 0, 0, 0, 0, 0, 0);
	signal(SIGSEGV, SIG_DFL);
	if (ret == -ENOSYS) {
		printf("SKIP: int $0x80 returns ENOSYS: no IA32 emulation\n");
		return T_EXIT_SKIP;
	}
	T_EXPECT_EQ(-EINVAL, ret);

	t_case_begin(&k, &ring, c, buf, LEN);
	T_EXPECT_EQ(0, int80(NR32_MUNMAP, low(buf), LEN, 0, 0, 0, 0));
	T_REQUIRE(mmap(buf, LEN, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
		       -1, 0) == buf);
	t_case_end(&k, "munmap through int $0x80", true);

	t_case_begin(&k, &ring, c, buf, LEN);
	T_EXPECT_EQ(0, int80(NR32_MADVISE, low(buf), LEN, MADV_DONTNEED, 0, 0,
			     0));
	t_case_end(&k, "madvise(MADV_DONTNEED) through int $0x80", true);

	/* The pages move to `other`; fresh ones are mapped at buf. */
	t_case_begin(&k, &ring, c, buf, LEN);
	T_EXPECT_EQ(low(other), int80(NR32_MREMAP, low(buf), LEN, LEN,
				      MREMAP_MAYMOVE | MREMAP_FIXED,
				      low(other), 0));
	T_REQUIRE(mmap(buf, LEN, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
		       -1, 0) == buf);
	t_case_end(&k, "mremap through int $0x80", true);

	t_case_begin(&k, &ring, c, buf, LEN);
	T_EXPECT_EQ(low(buf), int80(NR32_MMAP2, low(buf), LEN,
				    PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
				    (unsigned)-1, 0));
	t_case_end(&k, "mmap2(MAP_FIXED) through int $0x80", true);

	/* struct mmap_arg_struct of the i386 ABI: six 32-bit words. */
	args[0] = low(buf);
	args[1] = LEN;
	args[2] = PROT_READ | PROT_WRITE;
	args[3] = MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED;
	args[4] = (unsigned)-1;
	args[5] = 0;
	t_case_begin(&k, &ring, c, buf, LEN);
	T_EXPECT_EQ(low(buf), int80(NR32_OLD_MMAP, low(args), 0, 0, 0, 0, 0));
	t_case_end(&k, "old mmap(MAP_FIXED) through int $0x80", true);

	regcache_destroy(c);
	io_uring_queue_exit(&ring);
	return t_exit_status();
}
