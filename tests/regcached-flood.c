/*
 * Description: one user cannot exhaust the daemon. The daemon runs with
 * --max-per-user 16 --max-files-per-user 8 (regcached-launch --root). An
 * attacker (uid 65534) forks 40 processes that each try to register and
 * hold on: exactly 16 succeed (the limit is reachable, and nothing beyond
 * it). One process tries 6 registrations (library copies): at most 4
 * rings. One registered process asks to watch 20 files: exactly 8 are
 * granted, the rest get EDQUOT. Meanwhile another user (root) still
 * registers and its ring sees its unmaps: the daemon keeps serving.
 */
#include <fcntl.h>

#include "regcached-wire.h"

#define FORKS 40
#define LIMIT 16
#define FILE_LIMIT 8
#define ADDR 0x55000000ul

static int rep[2], hold[2], flood_rep[2];

static void flooder(void)
{
	int ring, sock;
	char ok, go;

	/* EOF on hold[0] releases us; rep is not ours. */
	close(hold[1]);
	close(rep[0]);
	close(rep[1]);
	close(flood_rep[0]);
	sock = w_register(&ring);
	ok = sock >= 0 ? 'y' : 'n';
	T_REQUIRE(write(flood_rep[1], &ok, 1) == 1);
	if (read(hold[0], &go, 1) < 0)
		_exit(1);
	_exit(0);
}

/* Six registrations from one process: slots are per library copy. */
static int copies(void)
{
	int n = 0, ring;

	for (int i = 0; i < 6; i++)
		if (w_register(&ring) >= 0)
			n++;
	return n;
}

/* Watch 20 distinct files from one registration; returns the grants. */
static int watches(int *quota_refusals)
{
	struct rcd_request q = w_request(RCD_WATCH);
	int ring, sock = w_register(&ring), granted = 0;

	T_REQUIRE(sock >= 0);
	*quota_refusals = 0;
	for (int i = 0; i < 20; i++) {
		int fd = memfd_create("flood", MFD_CLOEXEC), ret;
		char *p;

		T_REQUIRE(fd >= 0 && ftruncate(fd, 65536) == 0);
		p = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		T_REQUIRE(p != MAP_FAILED);
		q.start = (uintptr_t)p;
		q.end = q.start + 65536;
		q.pgoff_lo = 0;
		q.pgoff_hi = 16;
		T_REQUIRE(w_send(sock, &q, sizeof(q), fd) == 0);
		ret = w_reply(sock, NULL);
		if (!ret)
			granted++;
		else if (ret == -EDQUOT)
			(*quota_refusals)++;
	}
	return granted;
}

int main(void)
{
	int ok = 0, slots, granted = 0, refused = 0, ring, sock, status;
	struct w_ring wr;
	long own = 0;
	pid_t pid;
	char c;

	if (geteuid() != 0) {
		printf("SKIP: needs root (a second user); run by "
		       "regcached-launch --root\n");
		return T_EXIT_SKIP;
	}
	T_REQUIRE(pipe(rep) == 0 && pipe(hold) == 0 && pipe(flood_rep) == 0);
	pid = fork();
	T_REQUIRE(pid >= 0);
	if (pid == 0) {
		int res[3];

		close(rep[0]);
		w_drop_privileges();
		for (int i = 0; i < FORKS; i++) {
			pid_t f = fork();

			T_REQUIRE(f >= 0);
			if (f == 0)
				flooder();
		}
		for (int i = 0; i < FORKS; i++) {
			T_REQUIRE(read(flood_rep[0], &c, 1) == 1);
			ok += c == 'y';
		}
		/* The flooders still hold their 16: release them, then the
		 * per-process and per-file limits. */
		close(hold[1]);
		while (wait(NULL) > 0)
			;
		usleep(50000);
		res[0] = ok;
		res[1] = copies();
		/* Another process: this one holds 4 rings now. */
		{
			int wp[2], st;
			pid_t w;

			T_REQUIRE(pipe(wp) == 0);
			w = fork();
			T_REQUIRE(w >= 0);
			if (w == 0) {
				int g = watches(&refused);

				T_REQUIRE(write(wp[1], &g, sizeof(g)) == sizeof(g));
				T_REQUIRE(write(wp[1], &refused, sizeof(refused)) ==
					  sizeof(refused));
				_exit(0);
			}
			T_REQUIRE(read(wp[0], &res[2], sizeof(res[2])) ==
				  sizeof(res[2]));
			T_REQUIRE(read(wp[0], &refused, sizeof(refused)) ==
				  sizeof(refused));
			waitpid(w, &st, 0);
		}
		T_REQUIRE(write(rep[1], res, sizeof(res)) == sizeof(res));
		T_REQUIRE(write(rep[1], &refused, sizeof(refused)) ==
			  sizeof(refused));
		_exit(t_failures ? 1 : 0);
	}
	close(hold[0]);
	close(rep[1]);
	close(flood_rep[0]);
	close(flood_rep[1]);
	/* Root registers while uid 65534 is at its limit. */
	usleep(300000);
	sock = w_register(&ring);
	T_CHECK(sock >= 0);
	if (sock >= 0) {
		w_ring_map(&wr, ring);
		w_ring_drain(&wr, 0, 0, NULL);
		T_REQUIRE(w_unmap_loop(ADDR, 20) == 0);
		w_ring_drain(&wr, ADDR, ADDR + 4096, &own);
	}
	close(hold[1]);
	{
		int res[3];

		T_REQUIRE(read(rep[0], res, sizeof(res)) == sizeof(res));
		T_REQUIRE(read(rep[0], &refused, sizeof(refused)) ==
			  sizeof(refused));
		ok = res[0];
		slots = res[1];
		granted = res[2];
	}
	waitpid(pid, &status, 0);
	printf("uid 65534: %d of %d processes registered (limit %d); one "
	       "process got %d of 6 rings; %d of 20 file watches granted, %d "
	       "refused with EDQUOT (limit %d); root meanwhile: registered, "
	       "%ld of its unmaps in its ring\n", ok, FORKS, LIMIT, slots,
	       granted, refused, FILE_LIMIT, own);
	T_EXPECT_EQ(LIMIT, ok);
	T_EXPECT_EQ(4, slots);
	T_EXPECT_EQ(FILE_LIMIT, granted);
	T_EXPECT_EQ(20 - FILE_LIMIT, refused);
	T_CHECK(own > 0);
	T_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	return t_exit_status();
}
