/*
 * Description: regcached refuses the PID-reuse attack. An attacker (uid
 * 65534, no capabilities) connects, hands the socket to its child and
 * exits; its pid is then given to a victim (root, unmapping a known page
 * in a loop) through ns_last_pid. The child now asks to REGISTER on the
 * old connection: SO_PEERCRED still names the pid, which is the victim's.
 * The daemon checks SO_PEERCRED against SO_PEERPIDFD (the connector's
 * pidfd, dead) and must refuse; had it registered the pid, the attacker's
 * ring would carry the victim's unmap addresses, which the test counts.
 * Controls: the victim really got the attacker's pid, and a legitimate
 * registration of the attacker's child sees its own unmaps in its ring (so
 * the counting would catch a leak). Run by regcached-launch --root.
 */
#include "regcached-wire.h"

#define VICTIM_ADDR 0x50000000ul
#define OWN_ADDR 0x51000000ul

struct report {
	int connector_pid;
	int status;		/* of the REGISTER on the handed-over socket */
	long leaked;		/* victim unmaps seen through that ring */
	long own;		/* own unmaps seen through a legit ring */
};

static int gate[2], rep[2];

static int victim(void *arg)
{
	(void)arg;
	return w_unmap_loop(VICTIM_ADDR, 1500);
}

/* The attacker's child: waits for the victim, then registers "as" it. */
static void attacker_child(int sock)
{
	struct report r = { 0 };
	struct rcd_request q = w_request(RCD_REGISTER);
	struct w_ring wr;
	int ring = -1, legit;
	char go;

	T_REQUIRE(read(gate[0], &go, 1) == 1);
	T_REQUIRE(w_send(sock, &q, sizeof(q), -1) == 0);
	r.status = w_reply(sock, &ring);
	if (r.status == 0 && ring >= 0) {
		w_ring_map(&wr, ring);
		for (int i = 0; i < 100; i++) {
			usleep(10000);
			w_ring_drain(&wr, VICTIM_ADDR, VICTIM_ADDR + 4096,
				     &r.leaked);
		}
	}
	/* Control: our own registration sees our own unmaps. */
	legit = w_register(&ring);
	if (legit >= 0) {
		w_ring_map(&wr, ring);
		w_ring_drain(&wr, 0, 0, NULL);
		w_unmap_loop(OWN_ADDR, 50);
		w_ring_drain(&wr, OWN_ADDR, OWN_ADDR + 4096, &r.own);
	}
	T_REQUIRE(write(rep[1], &r, sizeof(r)) == sizeof(r));
	_exit(0);
}

int main(void)
{
	struct report r;
	pid_t attacker, v;
	int status;

	if (geteuid() != 0) {
		printf("SKIP: needs root (ns_last_pid); run by "
		       "regcached-launch --root\n");
		return T_EXIT_SKIP;
	}
	T_REQUIRE(pipe(gate) == 0 && pipe(rep) == 0);
	attacker = fork();
	T_REQUIRE(attacker >= 0);
	if (attacker == 0) {
		int sock;
		pid_t child;

		w_drop_privileges();
		sock = w_connect();
		T_REQUIRE(sock >= 0);
		child = fork();
		T_REQUIRE(child >= 0);
		if (child == 0)
			attacker_child(sock);
		r.connector_pid = getpid();
		T_REQUIRE(write(rep[1], &r, sizeof(r)) == sizeof(r));
		_exit(0);	/* the connector goes; its pid is free */
	}
	T_REQUIRE(read(rep[0], &r, sizeof(r)) == sizeof(r));
	T_REQUIRE(waitpid(attacker, &status, 0) == attacker);
	T_EXPECT_EQ(r.connector_pid, attacker);

	v = w_fork_at_pid(attacker, victim, NULL);
	if (v < 0) {
		printf("SKIP: could not hand pid %d to a victim\n", attacker);
		return T_EXIT_SKIP;
	}
	printf("connector pid %d now belongs to the victim\n", (int)v);
	usleep(100000);
	T_REQUIRE(write(gate[1], "g", 1) == 1);
	T_REQUIRE(read(rep[0], &r, sizeof(r)) == sizeof(r));
	waitpid(v, &status, 0);
	T_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	printf("REGISTER on the handed-over socket: %s; victim unmaps read by "
	       "the attacker: %ld; control, own unmaps through a legit ring: "
	       "%ld\n", r.status ? strerror(-r.status) : "ACCEPTED", r.leaked,
	       r.own);
	T_CHECK(r.status != 0);
	T_EXPECT_EQ(0, r.leaked);
	T_CHECK(r.own > 0);
	while (wait(NULL) > 0)
		;
	return t_exit_status();
}
