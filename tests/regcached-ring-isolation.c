/*
 * Description: an unprivileged client cannot read another client's ring.
 * A victim (root) registers and unmaps a known page in a loop; an attacker
 * (uid 65534, no capabilities, registered itself) tries every way to its
 * records: its own ring (must carry none of the victim's unmaps), BPF map
 * ids near its own ring's (BPF_MAP_GET_FD_BY_ID), the BPF id iterator,
 * the daemon's fds (/proc/PID/fd, pidfd_getfd), and making its own
 * generation page writable (mmap, mprotect). Controls: root can open the
 * victim's ring by id (so the ids scanned are the right ones), and the
 * victim's own ring carries its unmaps. Run by regcached-launch --root.
 */
#include <dirent.h>
#include <fcntl.h>
#include <sys/syscall.h>

#include "regcached-wire.h"

#define VICTIM_ADDR 0x53000000ul

static long sys_bpf(int cmd, union bpf_attr *a)
{
	return syscall(SYS_bpf, cmd, a, sizeof(*a));
}

static __u32 map_id(int fd)
{
	struct bpf_map_info info;
	union bpf_attr a;

	memset(&info, 0, sizeof(info));
	memset(&a, 0, sizeof(a));
	a.info.bpf_fd = fd;
	a.info.info_len = sizeof(info);
	a.info.info = (uintptr_t)&info;
	T_REQUIRE(sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &a) == 0);
	return info.id;
}

static int fd_by_id(__u32 id)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.map_id = id;
	return (int)sys_bpf(BPF_MAP_GET_FD_BY_ID, &a);
}

struct report {
	long leaked;		/* victim unmaps in the attacker's own ring */
	long ids_opened;	/* map ids near ours that opened */
	long next_id_ok;	/* BPF_MAP_GET_NEXT_ID answers */
	long daemon_fds;	/* daemon fds reachable */
	long writable;		/* ways to make our generation writable */
};

static int gate[2], rep[2];

static void attacker(__u32 victim_id, pid_t daemon)
{
	struct report r = { 0 };
	struct w_ring wr;
	union bpf_attr a;
	int ring, sock;
	__u32 own;
	char go, path[64];
	void *p;
	DIR *d;

	w_drop_privileges();
	sock = w_register(&ring);
	T_REQUIRE(sock >= 0);
	w_ring_map(&wr, ring);
	own = map_id(ring);
	T_REQUIRE(read(gate[0], &go, 1) == 1);
	for (int i = 0; i < 50; i++) {
		usleep(10000);
		w_ring_drain(&wr, VICTIM_ADDR, VICTIM_ADDR + 4096, &r.leaked);
	}
	for (__u32 id = own > 256 ? own - 256 : 1; id < own + 256; id++) {
		int fd = id == own ? -1 : fd_by_id(id);

		if (fd >= 0) {
			r.ids_opened++;
			close(fd);
		}
	}
	if (fd_by_id(victim_id) >= 0)
		r.ids_opened++;
	memset(&a, 0, sizeof(a));
	if (sys_bpf(BPF_MAP_GET_NEXT_ID, &a) == 0)
		r.next_id_ok++;
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)daemon);
	d = opendir(path);
	if (d) {
		r.daemon_fds++;
		closedir(d);
	}
	for (int fd = 3; fd < 64; fd++) {
		int pidfd = (int)syscall(SYS_pidfd_open, daemon, 0);
		int got = pidfd < 0 ? -1 :
			  (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);

		if (got >= 0) {
			r.daemon_fds++;
			close(got);
		}
		if (pidfd >= 0)
			close(pidfd);
	}
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, ring, 4096);
	if (p != MAP_FAILED)
		r.writable++;
	if (mprotect((void *)wr.prod, 4096, PROT_READ | PROT_WRITE) == 0)
		r.writable++;
	T_REQUIRE(write(rep[1], &r, sizeof(r)) == sizeof(r));
	_exit(0);
}

int main(void)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct report r;
	struct w_ring wr;
	long victim_hits = 0;
	int ring, sock, status, byid;
	pid_t pid;

	if (geteuid() != 0) {
		printf("SKIP: needs root for the victim; run by "
		       "regcached-launch --root\n");
		return T_EXIT_SKIP;
	}
	T_REQUIRE(pipe(gate) == 0 && pipe(rep) == 0);
	sock = w_register(&ring);
	T_REQUIRE(sock >= 0);
	T_REQUIRE(getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0);
	w_ring_map(&wr, ring);
	/* Control: root can open the victim's ring by its id. */
	byid = fd_by_id(map_id(ring));
	T_CHECK(byid >= 0);
	if (byid >= 0)
		close(byid);
	pid = fork();
	T_REQUIRE(pid >= 0);
	if (pid == 0)
		attacker(map_id(ring), cred.pid);
	w_ring_drain(&wr, 0, 0, NULL);
	T_REQUIRE(write(gate[1], "g", 1) == 1);
	T_REQUIRE(w_unmap_loop(VICTIM_ADDR, 700) == 0);
	w_ring_drain(&wr, VICTIM_ADDR, VICTIM_ADDR + 4096, &victim_hits);
	T_REQUIRE(read(rep[0], &r, sizeof(r)) == sizeof(r));
	waitpid(pid, &status, 0);
	printf("victim's own ring: %ld of its unmaps; attacker: %ld of them in "
	       "its ring, %ld map ids opened, GET_NEXT_ID %s, %ld daemon fds, "
	       "%ld ways to write its generation\n", victim_hits, r.leaked,
	       r.ids_opened, r.next_id_ok ? "allowed" : "refused",
	       r.daemon_fds, r.writable);
	T_CHECK(victim_hits > 0);
	T_EXPECT_EQ(0, r.leaked);
	T_EXPECT_EQ(0, r.ids_opened);
	T_EXPECT_EQ(0, r.daemon_fds);
	T_EXPECT_EQ(0, r.writable);
	T_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	return t_exit_status();
}
