/*
 * Description: eBPF monitor: a clone(CLONE_VM) child that is not a thread
 * (its own tgid, our address space) munmaps a cached range and maps fresh
 * memory there. The programs find our process through the mm, not only
 * the tgid, so the parent's next get misses and DMA is visible.
 */
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>

#include "helpers.h"

#define LEN 65536
#define STACK (256 * 1024)

static char *target;

static int child(void *arg)
{
	(void)arg;
	if (syscall(SYS_munmap, target, LEN))
		return 1;
	if ((char *)syscall(SYS_mmap, target, LEN, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
			    -1, 0) != target)
		return 2;
	return 0;
}

int main(void)
{
	struct t_case k;
	struct io_uring ring;
	struct regcache *c;
	char *stack;
	int status;
	pid_t pid;

#if defined(__SANITIZE_THREAD__)
	printf("SKIP: TSan cannot run a clone(CLONE_VM) child that shares "
	       "the parent's thread state\n");
	return T_EXIT_SKIP;
#endif
	t_monitor_only("bpf");
	t_ring_init(&ring);
	c = t_uring_cache(&ring, 0, 0, 0);
	t_monitor_require();
	target = t_map(LEN);
	stack = t_map(STACK);

	t_case_begin(&k, &ring, c, target, LEN);
	pid = clone(child, stack + STACK, CLONE_VM | SIGCHLD, NULL);
	T_REQUIRE(pid > 0);
	T_REQUIRE(waitpid(pid, &status, 0) == pid);
	T_REQUIRE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	t_case_end(&k, "munmap by a clone(CLONE_VM) child process", true);

	regcache_destroy(c);
	io_uring_queue_exit(&ring);
	return t_exit_status();
}
