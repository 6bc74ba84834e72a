/*
 * Description: eBPF monitor: a SysV shared memory segment detached with
 * shmdt and another segment attached at the same address is never served
 * from the old registration.
 */
#include <sys/ipc.h>
#include <sys/shm.h>

#include "bpf_helpers.h"

#define LEN 65536

int main(void)
{
	struct t_case k;
	struct io_uring ring;
	struct regcache *c;
	int id1, id2;
	char *buf;

	t_bpf_env();
	t_ring_init(&ring);
	c = t_uring_cache(&ring, 0, 0, 0);
	t_bpf_require();

	id1 = shmget(IPC_PRIVATE, LEN, IPC_CREAT | 0600);
	id2 = shmget(IPC_PRIVATE, LEN, IPC_CREAT | 0600);
	T_REQUIRE(id1 >= 0 && id2 >= 0);
	buf = shmat(id1, NULL, 0);
	T_REQUIRE(buf != (void *)-1);
	shmctl(id1, IPC_RMID, NULL);

	t_case_begin(&k, &ring, c, buf, LEN);
	T_REQUIRE(shmdt(buf) == 0);
	if (shmat(id2, buf, 0) != buf) {
		fprintf(stderr, "shmat at %p: %s\n", (void *)buf,
			strerror(errno));
		return T_EXIT_FAIL;
	}
	/* Marked for removal only once attached: it would go at once. */
	shmctl(id2, IPC_RMID, NULL);
	t_case_end(&k, "shmdt + shmat of another segment at the same "
		       "address", true);

	T_REQUIRE(shmdt(buf) == 0);
	regcache_destroy(c);
	io_uring_queue_exit(&ring);
	return t_exit_status();
}
