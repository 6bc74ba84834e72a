/* SPDX-License-Identifier: MIT */
/* The bridge tests' shared scenarios; see bridge_oracle.h. */
#include <stdatomic.h>
#include <time.h>

#include "bridge_oracle.h"
#include "uring_madvise.h"

struct t_registrar b_reg;

const char *const b_change_name[B_NCHANGES] = {
	"libc munmap", "raw munmap", "raw mremap", "raw MADV_DONTNEED",
	"io_uring MADV_DONTNEED", "free of an mmap-served block",
};

bool b_dma_visible(void *handle, void *buf, size_t len, unsigned seed)
{
	static unsigned char src[65536];
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	int fds[2], ret;

	T_REQUIRE(len <= sizeof(src) && pipe(fds) == 0);
	fcntl(fds[0], F_SETPIPE_SZ, 1 << 17);
	for (size_t i = 0; i < len; i++)
		src[i] = (unsigned char)(seed * 131 + i * 7 + 1);
	T_REQUIRE(write(fds[1], src, len) == (ssize_t)len);
	memset(buf, 0, len);
	sqe = io_uring_get_sqe(&b_reg.ring);
	T_REQUIRE(sqe);
	io_uring_prep_read_fixed(sqe, fds[0], buf, len, 0,
				 (int)((uintptr_t)handle - 1));
	T_REQUIRE(io_uring_submit(&b_reg.ring) == 1);
	T_REQUIRE(io_uring_wait_cqe(&b_reg.ring, &cqe) == 0);
	ret = cqe->res;
	io_uring_cqe_seen(&b_reg.ring, cqe);
	close(fds[0]);
	close(fds[1]);
	T_REQUIRE(ret == (int)len);
	return !memcmp(buf, src, len);
}

bool b_lookup_visible(const struct b_cache *c, void *buf, size_t len,
		      unsigned seed)
{
	void *entry, *handle;
	int ret = c->get(buf, len, &entry, &handle);
	bool ok;

	if (ret) {
		fprintf(stderr, "lookup of %p+%zu: %s\n", buf, len, strerror(-ret));
		exit(T_EXIT_FAIL);
	}
	ok = b_dma_visible(handle, buf, len, seed);
	c->put(entry);
	return ok;
}

char *b_map_at(void *hint, size_t len)
{
	char *p = mmap(hint, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS |
			       (hint ? MAP_FIXED_NOREPLACE : 0), -1, 0);

	if (hint && (p == MAP_FAILED || p != hint)) {
		/* Taken (EEXIST), or a kernel without NOREPLACE. */
		T_REQUIRE(p == MAP_FAILED ? errno == EEXIST : munmap(p, len) == 0);
		return NULL;
	}
	T_REQUIRE(p != MAP_FAILED);
	memset(p, 0x5a, len);
	return p;
}

/* One attempt: 1 stale, 0 fresh, -1 not set up (*retry: worth another). */
static int attempt(const struct b_cache *c, enum b_change what, bool *retry)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), len = 16 * page;
	char *buf, *other = NULL;
	bool remapped = true, stale;

	*retry = false;
	buf = what == B_FREE_MMAPPED ? malloc(1 << 20) : b_map_at(NULL, len);
	T_REQUIRE(buf);
	memset(buf, 1, len);
	T_CHECK(b_lookup_visible(c, buf, len, 1));	/* miss: registers */
	T_CHECK(b_lookup_visible(c, buf, len, 2));	/* hit */
	switch (what) {
	case B_LIBC_MUNMAP:
		T_REQUIRE(munmap(buf, len) == 0);
		remapped = b_map_at(buf, len);
		break;
	case B_RAW_MUNMAP:
		T_REQUIRE(syscall(SYS_munmap, buf, len) == 0);
		remapped = b_map_at(buf, len);
		break;
	case B_RAW_MREMAP:
		/* MREMAP_FIXED replaces other's pages in one step: no hole
		 * for another thread's mmap to land in. */
		other = b_map_at(NULL, len);
		T_REQUIRE((char *)syscall(SYS_mremap, buf, len, len,
					  MREMAP_MAYMOVE | MREMAP_FIXED,
					  other) == other);
		remapped = b_map_at(buf, len);
		break;
	case B_RAW_DONTNEED:
		T_REQUIRE(syscall(SYS_madvise, buf, len, MADV_DONTNEED) == 0);
		break;
	case B_URING_DONTNEED:
		T_REQUIRE(t_uring_madvise(&b_reg.ring, buf, len, MADV_DONTNEED) == 0);
		break;
	case B_FREE_MMAPPED: {
		uintptr_t was = (uintptr_t)buf;
		char *again;

		free(buf);
		again = malloc(1 << 20);
		T_REQUIRE(again);
		if ((uintptr_t)again != was) {
			fprintf(stderr, "  %-30s (malloc moved the block: proves "
				"nothing)\n", b_change_name[what]);
			free(again);
			return -1;
		}
		buf = again;
		break;
	}
	default:
		T_REQUIRE(!"a change");
	}
	if (!remapped) {
		/* Another thread mapped into the hole first: the address is
		 * not ours any more. Try again with a new buffer. */
		if (other)
			munmap(other, len);
		*retry = true;
		return -1;
	}
	stale = !b_lookup_visible(c, buf, len, 3);
	fprintf(stderr, "  %-30s %s\n", b_change_name[what],
		stale ? "STALE registration" : "fresh registration");
	if (what == B_FREE_MMAPPED)
		free(buf);
	else
		munmap(buf, len);
	if (other)
		munmap(other, len);
	return stale;
}

int b_scenario(const struct b_cache *c, enum b_change what)
{
	for (int tries = 0; tries < 20; tries++) {
		bool retry;
		int ret = attempt(c, what, &retry);

		if (!retry)
			return ret;
	}
	fprintf(stderr, "  %-30s (the address was taken by another thread "
		"20 times: proves nothing)\n", b_change_name[what]);
	return -1;
}

/* ------------------------------------------------------------------------
 * The cross-thread race
 * ---------------------------------------------------------------------- */

static _Atomic unsigned long change_seq, lookups_done;
static _Atomic bool race_done;
static char *race_buf;
static size_t race_len;

static void *changer(void *arg)
{
	(void)arg;
	while (!atomic_load(&race_done)) {
		atomic_fetch_add(&change_seq, 1);	/* odd: changing */
		T_REQUIRE((char *)syscall(SYS_mmap, race_buf, race_len,
					  PROT_READ | PROT_WRITE,
					  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
					  -1, 0) == race_buf);
		atomic_fetch_add(&change_seq, 1);
		/* Leave the looker time for a whole lookup in between (2 ms at
		 * most, times the emulation's slowdown), however slow a lookup
		 * is (a sanitizer build, a guest on a loaded host: with 2 ms
		 * there, every lookup of 3 s overlapped a change). */
		unsigned long done = atomic_load(&lookups_done);
		struct timespec t0, t;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		do {
			for (volatile int spin = 0; spin < 2000; spin++)
				;
			clock_gettime(CLOCK_MONOTONIC, &t);
		} while (atomic_load(&lookups_done) - done < 2 &&
			 (t.tv_sec - t0.tv_sec) * 1000000000L +
				 (t.tv_nsec - t0.tv_nsec) < 2000000L * t_slowdown() &&
			 !atomic_load(&race_done));
	}
	return NULL;
}

unsigned long b_race(const struct b_cache *c, unsigned long lookups,
		     unsigned long *checked)
{
	unsigned long stale = 0, seed = 10;
	time_t until = time(NULL) + 3 * t_slowdown();
	pthread_t t;

	race_len = 4 * (size_t)sysconf(_SC_PAGESIZE);
	race_buf = b_map_at(NULL, race_len);
	atomic_store(&race_done, false);
	T_CHECK(b_lookup_visible(c, race_buf, race_len, 4));
	T_REQUIRE(pthread_create(&t, NULL, changer, NULL) == 0);
	*checked = 0;
	while (*checked < lookups && time(NULL) < until) {
		unsigned long s1 = atomic_load(&change_seq);
		void *entry, *handle;
		bool ok;

		if (s1 & 1)
			continue;
		if (c->get(race_buf, race_len, &entry, &handle))
			continue;	/* unmapped at that instant */
		/* io_uring faults pages in; a page unmapped meanwhile fails
		 * the read, which the seqlock then discards. */
		ok = b_dma_visible(handle, race_buf, race_len, (unsigned)seed++);
		c->put(entry);
		atomic_fetch_add(&lookups_done, 1);
		if (atomic_load(&change_seq) != s1)
			continue;
		(*checked)++;
		stale += !ok;
	}
	atomic_store(&race_done, true);
	pthread_join(t, NULL);
	munmap(race_buf, race_len);
	return stale;
}
