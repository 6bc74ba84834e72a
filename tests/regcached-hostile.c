/*
 * Description: regcached under malformed, truncated and hostile messages
 * and wrong file descriptors, sent by hand as uid 65534 (run by
 * regcached-launch). Each must get its connection closed (with a log line
 * in the daemon's output), a registered connection first gets DEAD in its
 * ring (it must not trust a ring nobody feeds any more), and the daemon
 * keeps serving: after every attack a fresh client registers, and a library
 * client registered before the attacks still sees its munmaps (DMA oracle).
 * Negative control: a well-formed WATCH on the same kind of connection is
 * answered, not closed.
 */
#include <fcntl.h>
#include <sys/mman.h>

#include "regcached-wire.h"

#define LEN 65536

static int attacks;

/* Send @len bytes of @q (with @fd) on @sock; the daemon must hang up. */
static void expect_closed(const char *what, int sock, const void *q,
			  size_t len, int fd)
{
	int ring, s2;

	attacks++;
	if (w_send(sock, q, len, fd) == 0 && !w_closed(sock, 3000)) {
		fprintf(stderr, "FAIL: %s: the connection stays open\n", what);
		t_failures++;
	} else {
		printf("ok: %s: connection closed\n", what);
	}
	close(sock);
	/* The daemon still serves others. */
	s2 = w_register(&ring);
	T_CHECK(s2 >= 0);
	if (s2 >= 0) {
		close(ring);
		close(s2);
	}
}

static int fresh(void)
{
	int s = w_connect();

	T_REQUIRE(s >= 0);
	return s;
}

/* A registered connection (its ring in *@ring). */
static int registered(int *ring)
{
	int s = w_register(ring);

	T_REQUIRE(s >= 0);
	return s;
}

int main(void)
{
	struct rcd_request q = w_request(RCD_REGISTER), bad;
	char big[sizeof(q) + 16];
	struct io_uring uring;
	struct regcache *c;
	struct t_case k;
	struct w_ring wr;
	int pipefd[2], ring, s, opath, memfd;
	long dead = 0;
	char *buf, *shared;

	t_ring_init(&uring);
	c = t_uring_cache(&uring, 0, 0, 0);
	t_monitor_require();
	T_REQUIRE(pipe2(pipefd, O_CLOEXEC) == 0);
	memfd = memfd_create("hostile", MFD_CLOEXEC);
	T_REQUIRE(memfd >= 0 && ftruncate(memfd, LEN) == 0);
	opath = open("/proc/self/exe", O_PATH | O_CLOEXEC);
	T_REQUIRE(opath >= 0);
	shared = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	T_REQUIRE(shared != MAP_FAILED);

	expect_closed("4-byte message", fresh(), &q, 4, -1);
	memset(big, 0, sizeof(big));
	memcpy(big, &q, sizeof(q));
	expect_closed("message longer than a request", fresh(), big,
		      sizeof(big), -1);
	bad = q;
	bad.magic ^= 1;
	expect_closed("bad magic", fresh(), &bad, sizeof(bad), -1);
	bad = q;
	bad.version = 99;
	expect_closed("bad version", fresh(), &bad, sizeof(bad), -1);
	bad = q;
	bad.op = 99;
	expect_closed("unknown op", fresh(), &bad, sizeof(bad), -1);
	bad = q;
	bad.reserved = 1;
	expect_closed("reserved field set", fresh(), &bad, sizeof(bad), -1);
	bad = q;
	bad.flags = 0x80;
	expect_closed("unknown flag", fresh(), &bad, sizeof(bad), -1);
	bad = q;
	bad.flags = RCD_REGISTER_RESUME;
	expect_closed("RESUME without a ring fd", fresh(), &bad, sizeof(bad),
		      -1);
	expect_closed("RESUME with a pipe instead of a ring", fresh(), &bad,
		      sizeof(bad), pipefd[0]);
	expect_closed("REGISTER with an fd attached", fresh(), &q, sizeof(q),
		      memfd);
	bad = w_request(RCD_WATCH);
	bad.start = 0;
	bad.end = LEN;
	expect_closed("WATCH before REGISTER", fresh(), &bad, sizeof(bad), -1);

	/* Registered connections: DEAD first, then closed. */
	s = registered(&ring);
	w_ring_map(&wr, ring);
	w_ring_drain(&wr, 0, 0, NULL);
	expect_closed("second REGISTER on one connection", s, &q, sizeof(q), -1);
	w_ring_drain(&wr, 0, 0, &dead);
	if (dead != 1) {
		fprintf(stderr, "FAIL: a dropped client's ring got %ld DEAD "
			"records, expected 1\n", dead);
		t_failures++;
	}
	close(ring);

	bad = w_request(RCD_WATCH);
	bad.start = (uintptr_t)shared;
	bad.end = (uintptr_t)shared + LEN;
	bad.pgoff_lo = 0;
	bad.pgoff_hi = LEN / 4096;
	/* Negative control: well formed, it is answered. */
	s = registered(&ring);
	T_REQUIRE(w_send(s, &bad, sizeof(bad), memfd) == 0);
	T_EXPECT_EQ(0, w_reply(s, NULL));
	T_CHECK(!w_closed(s, 100));
	expect_closed("WATCH with a pipe fd", s, &bad, sizeof(bad), pipefd[1]);
	close(ring);
	s = registered(&ring);
	expect_closed("WATCH with an O_PATH fd", s, &bad, sizeof(bad), opath);
	close(ring);
	bad.start += 1;
	s = registered(&ring);
	expect_closed("WATCH with an unaligned range", s, &bad, sizeof(bad),
		      memfd);
	close(ring);

	/* Truncated conversation: REGISTER, then hang up before the reply. */
	s = fresh();
	T_REQUIRE(w_send(s, &q, sizeof(q), -1) == 0);
	close(s);

	/* The library client registered before all this still works. */
	buf = t_map(LEN);
	t_case_begin(&k, &uring, c, buf, LEN);
	T_REQUIRE(munmap(buf, LEN) == 0);
	T_REQUIRE(mmap(buf, LEN, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1,
		       0) == buf);
	t_case_end(&k, "munmap of a client registered before the attacks",
		   true);
	printf("%d attacks, each closed its own connection only\n", attacks);
	regcache_destroy(c);
	io_uring_queue_exit(&uring);
	return t_exit_status();
}
