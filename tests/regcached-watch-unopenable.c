/*
 * Description: an unprivileged client cannot watch a file it cannot open.
 * Root makes a 0600 file in /dev/shm; the attacker (uid 65534, no
 * capabilities, registered) cannot open it but can get an O_PATH fd of it
 * (only search permission on the directory is needed). WATCH with that fd
 * must close the connection; a WATCH without fd naming memory that is not
 * a shared mapping of its own must be refused. Root then punches a hole in
 * the secret file: the attacker's ring must get nothing (a watch would
 * have put an "everything" record there, telling it the file changed).
 * Control: the same attacker watching a file of its own, opened, gets a
 * record when root punches that one. Run by regcached-launch --root.
 */
#include <fcntl.h>

#include "regcached-wire.h"

#define LEN 65536

static int gate[2], rep[2];

struct report {
	int open_errno;		/* open(O_RDONLY) of the secret */
	int opath_closed;	/* WATCH(O_PATH fd) closed the connection */
	int anon_status;	/* WATCH without fd on private memory */
	long secret_records;	/* records after root punched the secret */
	long own_records;	/* ... after root punched the attacker's file */
};

static void punch(const char *path)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);

	T_REQUIRE(fd >= 0);
	T_REQUIRE(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
			    LEN) == 0);
	close(fd);
}

static void attacker(const char *secret, const char *own)
{
	struct report r = { 0 };
	struct rcd_request q = w_request(RCD_WATCH);
	struct w_ring wr, wa;
	int ring, sock, fd, ownfd;
	char go, *mine, *anon;

	w_drop_privileges();
	fd = open(secret, O_RDONLY | O_CLOEXEC);
	r.open_errno = fd < 0 ? errno : 0;
	fd = open(secret, O_PATH | O_CLOEXEC);
	T_REQUIRE(fd >= 0);

	sock = w_register(&ring);
	T_REQUIRE(sock >= 0);
	w_ring_map(&wa, ring);
	q.start = 0x54000000ul;
	q.end = q.start + LEN;
	q.pgoff_lo = 0;
	q.pgoff_hi = LEN / 4096;
	T_REQUIRE(w_send(sock, &q, sizeof(q), fd) == 0);
	r.opath_closed = w_closed(sock, 3000);
	/* Its DEAD record, if it was dropped; later records would be the
	 * watch's. */
	w_ring_drain(&wa, 0, 0, NULL);

	/* A new registration: the hostile one is gone. */
	sock = w_register(&ring);
	T_REQUIRE(sock >= 0);
	w_ring_map(&wr, ring);
	anon = mmap(NULL, LEN, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_REQUIRE(anon != MAP_FAILED);
	q.start = (uintptr_t)anon;
	q.end = q.start + LEN;
	T_REQUIRE(w_send(sock, &q, sizeof(q), -1) == 0);
	r.anon_status = w_reply(sock, NULL);

	/* Control: our own file, opened, is watched. */
	ownfd = open(own, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	T_REQUIRE(ownfd >= 0 && ftruncate(ownfd, LEN) == 0);
	mine = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, ownfd, 0);
	T_REQUIRE(mine != MAP_FAILED);
	memset(mine, 1, LEN);
	q.start = (uintptr_t)mine;
	q.end = q.start + LEN;
	T_REQUIRE(w_send(sock, &q, sizeof(q), ownfd) == 0);
	T_EXPECT_EQ(0, w_reply(sock, NULL));
	T_REQUIRE(fchmod(ownfd, 0666) == 0);

	w_ring_drain(&wr, 0, 0, NULL);
	T_REQUIRE(write(rep[1], "w", 1) == 1);
	T_REQUIRE(read(gate[0], &go, 1) == 1);	/* root punched the secret */
	r.secret_records = w_ring_drain(&wr, 0, ~0ul, NULL) +
			   w_ring_drain(&wa, 0, ~0ul, NULL);
	T_REQUIRE(write(rep[1], "w", 1) == 1);
	T_REQUIRE(read(gate[0], &go, 1) == 1);	/* root punched ours */
	r.own_records = w_ring_drain(&wr, 0, ~0ul, NULL);
	T_REQUIRE(write(rep[1], &r, sizeof(r)) == sizeof(r));
	_exit(0);
}

int main(void)
{
	char secret[64] = "/dev/shm/regcached-secret-XXXXXX";
	char own[sizeof(secret) + sizeof("-own")];
	struct report r;
	int fd, status;
	char *map;
	pid_t pid;
	char c;

	if (geteuid() != 0) {
		printf("SKIP: needs root for the secret file; run by "
		       "regcached-launch --root\n");
		return T_EXIT_SKIP;
	}
	fd = mkstemp(secret);
	if (fd < 0) {
		printf("SKIP: no /dev/shm here (%s)\n", strerror(errno));
		return T_EXIT_SKIP;
	}
	snprintf(own, sizeof(own), "%s-own", secret);
	T_REQUIRE(fchmod(fd, 0600) == 0 && ftruncate(fd, LEN) == 0);
	/* Pages in the page cache, so a punch removes some. */
	map = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	T_REQUIRE(map != MAP_FAILED);
	memset(map, 7, LEN);
	T_REQUIRE(pipe(gate) == 0 && pipe(rep) == 0);
	pid = fork();
	T_REQUIRE(pid >= 0);
	if (pid == 0)
		attacker(secret, own);
	T_REQUIRE(read(rep[0], &c, 1) == 1);
	punch(secret);
	usleep(20000);
	T_REQUIRE(write(gate[1], "g", 1) == 1);
	T_REQUIRE(read(rep[0], &c, 1) == 1);
	punch(own);
	usleep(20000);
	T_REQUIRE(write(gate[1], "g", 1) == 1);
	T_REQUIRE(read(rep[0], &r, sizeof(r)) == sizeof(r));
	waitpid(pid, &status, 0);
	unlink(secret);
	unlink(own);
	printf("attacker: open(secret) %s; WATCH(O_PATH fd) %s; WATCH of its "
	       "private memory without fd: %s; records after the secret was "
	       "punched: %ld; after its own file was punched: %ld\n",
	       r.open_errno ? strerror(r.open_errno) : "OPENED",
	       r.opath_closed ? "closed the connection" : "ACCEPTED",
	       r.anon_status ? strerror(-r.anon_status) : "ACCEPTED",
	       r.secret_records, r.own_records);
	T_EXPECT_EQ(EACCES, r.open_errno);
	T_CHECK(r.opath_closed);
	T_CHECK(r.anon_status < 0);
	T_EXPECT_EQ(0, r.secret_records);
	T_CHECK(r.own_records > 0);
	T_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	return t_exit_status();
}
