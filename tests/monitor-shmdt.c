/*
 * Description: a SysV shared memory segment detached with shmdt and another
 * segment attached at the same address is never served from the old
 * registration: a get after the swap sees the new segment. Negative
 * control: DMA through the registration held across the swap is not
 * visible. Runs under each kernel monitor. The eBPF monitor caches the
 * segment and invalidates it on shmdt; the userfaultfd monitor serves it
 * pass-through (uncached), since shared memory cannot be registered with a
 * userfaultfd in write-protect mode and another process may change it.
 */
#include <sys/ipc.h>
#include <sys/shm.h>

#include "helpers.h"

#define LEN 65536

static int id2;

static void swap_segment(void *arg)
{
	char *buf = arg;

	T_REQUIRE(shmdt(buf) == 0);
	if (shmat(id2, buf, 0) != buf) {
		fprintf(stderr, "shmat at %p: %s\n", (void *)buf,
			strerror(errno));
		exit(T_EXIT_FAIL);
	}
	/* Marked for removal only once attached: it would go at once. */
	shmctl(id2, IPC_RMID, NULL);
}

int main(void)
{
	const char *what = "shmdt + shmat of another segment at the same "
			   "address";
	struct io_uring ring;
	struct regcache *c;
	struct t_case k;
	int id1;
	char *buf;

	t_ring_init(&ring);
	c = t_uring_cache(&ring, 0, 0, 0);
	t_monitor_require();

	id1 = shmget(IPC_PRIVATE, LEN, IPC_CREAT | 0600);
	id2 = shmget(IPC_PRIVATE, LEN, IPC_CREAT | 0600);
	T_REQUIRE(id1 >= 0 && id2 >= 0);
	buf = shmat(id1, NULL, 0);
	T_REQUIRE(buf != (void *)-1);
	shmctl(id1, IPC_RMID, NULL);
	t_uring_require_registrable(buf, LEN, "SysV shared memory");

	if (t_monitor_is("userfaultfd")) {
		t_passthrough_case(&ring, c, buf, LEN, swap_segment, buf, what);
	} else {
		t_case_begin(&k, &ring, c, buf, LEN);
		swap_segment(buf);
		t_case_end(&k, what, true);
	}

	T_REQUIRE(shmdt(buf) == 0);
	regcache_destroy(c);
	io_uring_queue_exit(&ring);
	return t_exit_status();
}
