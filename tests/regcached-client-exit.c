/*
 * Description: a client killed by SIGKILL loses its registration at once
 * and a process that reuses its pid never inherits it. The client (uid
 * 65534) registers and forks an accomplice that keeps both the ring fd and
 * the socket (so the daemon sees no hang-up: only the exit itself can end
 * the routing). The daemon is frozen (SIGSTOP), the client killed and
 * reaped, and its pid handed at once (ns_last_pid) to a new process that
 * unmaps a known page in a loop: the accomplice's ring must receive none
 * of those unmaps, although the daemon could not react (the kernel's exit
 * hook ended the routing). Then the new
 * process registers itself: it gets a fresh ring that does see its
 * unmaps (control), and the old ring still sees nothing. The daemon's own
 * cleanup (pidfd) is checked by its log: "pid N exited". Run by
 * regcached-launch --root.
 */
#include "regcached-wire.h"

#define ADDR 0x52000000ul

static int rep[2], gate[2], looped[2], resumed[2];

struct report {
	long old_ring;		/* reused pid's unmaps in the dead client's ring */
	long own_ring;		/* ... in its own fresh ring */
	int status;
};

/* The process that gets the dead client's pid. */
static int reuser(void *arg)
{
	struct report r = { 0 };
	struct w_ring wr;
	int sock, ring;
	char go;

	(void)arg;
	/* Unmaps before it registers, while the daemon is stopped: only the
	 * in-kernel exit hook can have ended the dead client's routing. */
	if (w_unmap_loop(ADDR, 300) || write(looped[1], "l", 1) != 1 ||
	    read(resumed[0], &go, 1) != 1)
		return 1;
	sock = w_register(&ring);
	r.status = sock < 0 ? sock : 0;
	if (sock >= 0) {
		w_ring_map(&wr, ring);
		w_ring_drain(&wr, 0, 0, NULL);
		w_unmap_loop(ADDR, 100);
		w_ring_drain(&wr, ADDR, ADDR + 4096, &r.own_ring);
	}
	if (write(rep[1], &r, sizeof(r)) != sizeof(r))
		return 1;
	/* Stay registered until the accomplice has looked again. */
	return read(gate[0], &go, 1) == 1 ? 0 : 1;
}

/* The daemon is the peer of any connection. */
static pid_t daemon_pid(void)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	int sock = w_connect();

	T_REQUIRE(sock >= 0);
	T_REQUIRE(getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0);
	close(sock);
	return cred.pid;
}

int main(void)
{
	int acc_go[2], acc_rep[2], status, ready_pipe[2];
	struct report r;
	long old_hits = 0;
	pid_t client, v, daemon;
	char c;

	if (geteuid() != 0) {
		printf("SKIP: needs root (ns_last_pid); run by "
		       "regcached-launch --root\n");
		return T_EXIT_SKIP;
	}
	T_REQUIRE(pipe(rep) == 0 && pipe(gate) == 0 && pipe(acc_go) == 0 && pipe(acc_rep) == 0 &&
		  pipe(ready_pipe) == 0);
	client = fork();
	T_REQUIRE(client >= 0);
	if (client == 0) {
		int ring, sock;

		w_drop_privileges();
		sock = w_register(&ring);
		T_REQUIRE(sock >= 0);
		/* The accomplice inherits sock: the daemon sees no hang-up. */
		if (fork() == 0) {
			/* The accomplice: same uid, holds ring and socket. */
			struct w_ring wr;
			long hits = 0;

			w_ring_map(&wr, ring);
			w_ring_drain(&wr, 0, 0, NULL);
			T_REQUIRE(write(ready_pipe[1], "r", 1) == 1);
			/* Wait for the reuser, then read what came. */
			T_REQUIRE(read(acc_go[0], &c, 1) == 1);
			w_ring_drain(&wr, ADDR, ADDR + 4096, &hits);
			T_REQUIRE(write(acc_rep[1], &hits, sizeof(hits)) ==
				  sizeof(hits));
			_exit(0);
		}
		for (;;)
			pause();
	}
	T_REQUIRE(pipe(looped) == 0 && pipe(resumed) == 0);
	T_REQUIRE(read(ready_pipe[0], &c, 1) == 1);
	daemon = daemon_pid();
	/* Frozen, the daemon cannot clean up: the kernel must. */
	T_REQUIRE(kill(daemon, SIGSTOP) == 0);
	kill(client, SIGKILL);
	T_REQUIRE(waitpid(client, &status, 0) == client);
	v = w_fork_at_pid(client, reuser, NULL);
	if (v < 0) {
		kill(daemon, SIGCONT);
		printf("SKIP: could not hand pid %d to a new process\n",
		       (int)client);
		return T_EXIT_SKIP;
	}
	T_REQUIRE(read(looped[0], &c, 1) == 1);
	T_REQUIRE(kill(daemon, SIGCONT) == 0);
	T_REQUIRE(write(resumed[1], "c", 1) == 1);
	T_REQUIRE(read(rep[0], &r, sizeof(r)) == sizeof(r));
	T_REQUIRE(write(acc_go[1], "g", 1) == 1);
	T_REQUIRE(read(acc_rep[0], &old_hits, sizeof(old_hits)) ==
		  sizeof(old_hits));
	T_REQUIRE(write(gate[1], "g", 1) == 1);
	waitpid(v, &status, 0);
	T_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	printf("pid %d: killed client's ring got %ld of the new holder's "
	       "unmaps; its own fresh ring got %ld (registration %s)\n",
	       (int)client, old_hits, r.own_ring,
	       r.status ? strerror(-r.status) : "ok");
	T_EXPECT_EQ(0, old_hits);
	T_EXPECT_EQ(0, r.status);
	T_CHECK(r.own_ring > 0);
	while (wait(NULL) > 0)
		;
	return t_exit_status();
}
