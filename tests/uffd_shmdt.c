/*
 * Description: userfaultfd monitor: SysV shared memory cannot be registered
 * with a userfaultfd in WP mode (and another process may change it), so it
 * is served pass-through: after shmdt and another segment attached at the
 * same address, a get sees the new segment. Negative control: DMA through
 * the registration held across the change is not visible.
 */
#include <sys/ipc.h>
#include <sys/shm.h>

#include "uffd_helpers.h"

#define LEN 65536

static int id2;

static void swap_segment(void *arg)
{
	char *buf = arg;

	T_REQUIRE(shmdt(buf) == 0);
	T_REQUIRE(shmat(id2, buf, 0) == buf);
	/* Marked for removal only once attached: it would go at once. */
	shmctl(id2, IPC_RMID, NULL);
}

int main(void)
{
	struct io_uring ring;
	struct regcache *c;
	int id1;
	char *buf;

	t_uffd_env();
	t_ring_init(&ring);
	c = t_uring_cache(&ring, 0, 0, 0);
	t_uffd_require();

	id1 = shmget(IPC_PRIVATE, LEN, IPC_CREAT | 0600);
	id2 = shmget(IPC_PRIVATE, LEN, IPC_CREAT | 0600);
	T_REQUIRE(id1 >= 0 && id2 >= 0);
	buf = shmat(id1, NULL, 0);
	T_REQUIRE(buf != (void *)-1);
	shmctl(id1, IPC_RMID, NULL);

	t_uffd_passthrough_case(&ring, c, buf, LEN, swap_segment, buf,
				"shmdt + shmat of another segment at the same "
				"address");

	T_REQUIRE(shmdt(buf) == 0);
	regcache_destroy(c);
	io_uring_queue_exit(&ring);
	return t_exit_status();
}
