/* SPDX-License-Identifier: MIT */
/*
 * Description: UCX's real registration cache (ucs_rcache from libucs, UCM
 * unmap events) never serves a stale registration once the UCX bridge feeds
 * it regcache's monitor. The device is io_uring's fixed-buffer table: a
 * registration pins pages, and READ_FIXED through it shows whether the
 * application's pages are the pinned ones.
 *
 * Each scenario caches a buffer, changes its pages behind UCX's back (raw
 * munmap, raw mremap, raw and io_uring MADV_DONTNEED, free of an
 * mmap-served malloc block; libc munmap, which UCX's hooks see), maps fresh
 * memory at the address, and looks it up again; a cross-thread race changes pages while another thread looks
 * up. Argument:
 *   stale  UCX's own hooks only (no bridge): stale registrations must be
 *          seen (the negative control: the oracle can fail)
 *   clean  the bridge is loaded (linked, or LD_PRELOADed by regcache-run):
 *          zero stale registrations
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <malloc.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <ucm/api/ucm.h>
#include <ucs/memory/rcache.h>

#include "helpers.h"

static struct t_registrar treg;
static ucs_rcache_t *rcache;
static size_t page;

struct region {
	ucs_rcache_region_t super;
	void *handle;
};

static ucs_status_t mem_reg(void *ctx, ucs_rcache_t *rc, void *arg,
			    ucs_rcache_region_t *r, uint16_t flags)
{
	(void)ctx, (void)rc, (void)arg, (void)flags;
	return t_registrar_ops.reg(&treg, (void *)r->super.start,
				   r->super.end - r->super.start, 0,
				   &((struct region *)r)->handle) ?
		       UCS_ERR_IO_ERROR : UCS_OK;
}

static void mem_dereg(void *ctx, ucs_rcache_t *rc, ucs_rcache_region_t *r)
{
	(void)ctx, (void)rc;
	t_registrar_ops.dereg(&treg, ((struct region *)r)->handle);
}

static void dump(void *ctx, ucs_rcache_t *rc, ucs_rcache_region_t *r,
		 char *buf, size_t max)
{
	(void)ctx, (void)rc, (void)r;
	if (max)
		buf[0] = 0;
}

static const ucs_rcache_ops_t ops = { mem_reg, mem_dereg, dump };

/* READ_FIXED @len bytes of a pattern through @handle's buffer into @buf;
 * true when the application sees them there. */
static bool dma_visible(void *handle, void *buf, size_t len, unsigned seed)
{
	static unsigned char src[65536];
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	unsigned char *dst = buf;
	int fds[2], ret;

	T_REQUIRE(len <= sizeof(src) && pipe(fds) == 0);
	fcntl(fds[0], F_SETPIPE_SZ, 1 << 17);
	for (size_t i = 0; i < len; i++)
		src[i] = (unsigned char)(seed * 131 + i * 7 + 1);
	T_REQUIRE(write(fds[1], src, len) == (ssize_t)len);
	memset(dst, 0, len);
	sqe = io_uring_get_sqe(&treg.ring);
	io_uring_prep_read_fixed(sqe, fds[0], dst, len, 0,
				 (int)((uintptr_t)handle - 1));
	T_REQUIRE(io_uring_submit(&treg.ring) == 1);
	T_REQUIRE(io_uring_wait_cqe(&treg.ring, &cqe) == 0);
	ret = cqe->res;
	io_uring_cqe_seen(&treg.ring, cqe);
	close(fds[0]);
	close(fds[1]);
	T_REQUIRE(ret == (int)len);
	return !memcmp(dst, src, len);
}

/* Look @buf up in UCX's cache, DMA into it, put it back. */
static bool lookup_visible(void *buf, size_t len, unsigned seed)
{
	ucs_rcache_region_t *r;
	bool ok;

	T_REQUIRE(ucs_rcache_get(rcache, buf, len, PROT_READ | PROT_WRITE,
				 NULL, &r) == UCS_OK);
	ok = dma_visible(((struct region *)r)->handle, buf, len, seed);
	ucs_rcache_region_put(rcache, r);
	return ok;
}

static char *map_at(void *hint, size_t len)
{
	char *p = mmap(hint, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS |
			       (hint ? MAP_FIXED_NOREPLACE : 0), -1, 0);

	T_REQUIRE(p != MAP_FAILED && (!hint || p == hint));
	memset(p, 0x5a, len);
	return p;
}

static int uring_dontneed(void *addr, size_t len)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&treg.ring);
	struct io_uring_cqe *cqe;
	int ret;

	io_uring_prep_madvise(sqe, addr, (off_t)len, MADV_DONTNEED);
	T_REQUIRE(io_uring_submit(&treg.ring) == 1);
	T_REQUIRE(io_uring_wait_cqe(&treg.ring, &cqe) == 0);
	ret = cqe->res;
	io_uring_cqe_seen(&treg.ring, cqe);
	return ret;
}

enum change { LIBC_MUNMAP, RAW_MUNMAP, RAW_MREMAP, RAW_DONTNEED, URING_DONTNEED, FREE_MMAPPED };
static const char *const change_name[] = {
	"libc munmap", "raw munmap", "raw mremap", "raw MADV_DONTNEED",
	"io_uring MADV_DONTNEED", "free of an mmap-served block",
};

/* One scenario; true if the lookup after the change was stale. */
static bool scenario(enum change what)
{
	size_t len = 16 * page;
	char *buf, *other = NULL;
	bool stale;

	if (what == FREE_MMAPPED) {
		buf = malloc(1 << 20);	/* above the mmap threshold */
		T_REQUIRE(buf);
		memset(buf, 1, len);
	} else {
		buf = map_at(NULL, len);
	}
	T_CHECK(lookup_visible(buf, len, 1));	/* miss: registers */
	T_CHECK(lookup_visible(buf, len, 2));	/* hit */
	switch (what) {
	case LIBC_MUNMAP:
		T_REQUIRE(munmap(buf, len) == 0);
		map_at(buf, len);
		break;
	case RAW_MUNMAP:
		T_REQUIRE(syscall(SYS_munmap, buf, len) == 0);
		map_at(buf, len);
		break;
	case RAW_MREMAP:
		other = map_at(NULL, len);
		T_REQUIRE(syscall(SYS_munmap, other, len) == 0);
		T_REQUIRE((char *)syscall(SYS_mremap, buf, len, len,
					  MREMAP_MAYMOVE | MREMAP_FIXED,
					  other) == other);
		map_at(buf, len);
		break;
	case RAW_DONTNEED:
		T_REQUIRE(syscall(SYS_madvise, buf, len, MADV_DONTNEED) == 0);
		break;
	case URING_DONTNEED:
		T_REQUIRE(uring_dontneed(buf, len) == 0);
		break;
	case FREE_MMAPPED: {
		char *again;

		free(buf);
		again = malloc(1 << 20);
		T_REQUIRE(again);
		if (again != buf) {
			fprintf(stderr, "  (malloc did not return the same "
				"address; the case proves nothing)\n");
			free(again);
			return false;
		}
		break;
	}
	}
	stale = !lookup_visible(buf, len, 3);
	fprintf(stderr, "  %-30s %s\n", change_name[what],
		stale ? "STALE registration" : "fresh registration");
	if (what == FREE_MMAPPED)
		free(buf);
	else
		munmap(buf, len);
	if (other)
		munmap(other, len);
	return stale;
}

/* ------------------------------------------------------------------------
 * The cross-thread race: one thread replaces the pages (a raw mmap with
 * MAP_FIXED over the buffer, so the address never stops being mapped) while
 * another looks up and DMAs. A lookup is stale only
 * if no change was in progress around it (seqlock), which is regcache's
 * guarantee: the application is not changing the buffer concurrently.
 * ---------------------------------------------------------------------- */

static _Atomic unsigned long change_seq;
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
		/* Leave the looker time for whole lookups in between. */
		for (volatile int spin = 0; spin < 20000; spin++)
			;
	}
	return NULL;
}

/* Until @lookups lookups were checked, or 20 s passed. */
static unsigned long race(unsigned long lookups, unsigned long *checked)
{
	unsigned long stale = 0, seed = 10;
	time_t until = time(NULL) + 20;
	pthread_t t;

	race_len = 4 * page;
	race_buf = map_at(NULL, race_len);
	T_CHECK(lookup_visible(race_buf, race_len, 4));
	T_REQUIRE(pthread_create(&t, NULL, changer, NULL) == 0);
	*checked = 0;
	while (*checked < lookups && time(NULL) < until) {
		unsigned long s1 = atomic_load(&change_seq);
		ucs_rcache_region_t *r;
		bool ok;

		if (s1 & 1)
			continue;
		if (ucs_rcache_get(rcache, race_buf, race_len,
				   PROT_READ | PROT_WRITE, NULL, &r) != UCS_OK)
			continue;	/* unmapped at that instant */
		/* io_uring faults pages in; a page unmapped meanwhile fails
		 * the read, which the seqlock then discards. */
		ok = dma_visible(((struct region *)r)->handle, race_buf,
				 race_len, (unsigned)seed++);
		ucs_rcache_region_put(rcache, r);
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

int main(int argc, char **argv)
{
	long (*forwarded)(void) =
		(long (*)(void))dlsym(RTLD_DEFAULT, "regcache_ucx_bridge_forwarded");
	bool expect_stale = argc > 1 && !strcmp(argv[1], "stale");
	ucs_rcache_params_t p = { 0 };
	struct regcache *c;
	unsigned long stale = 0, race_stale, checked;
	bool bridged;

	page = (size_t)sysconf(_SC_PAGESIZE);
	t_registrar_init(&treg, 4096);
	/* A regcache cache in the same process, so that the monitor the
	 * bridge uses is the one asked for (and skips say why). */
	c = t_registrar_cache(&treg, 0, 0, 0);
	if (!expect_stale)
		t_monitor_require();
	p.region_struct_size = sizeof(struct region);
	p.alignment = page;
	p.max_alignment = page;
	p.ucm_events = UCM_EVENT_VM_UNMAPPED;	/* as uct's IB md in 1.13 */
	p.ucm_event_priority = 1000;
	p.ops = &ops;
	p.context = NULL;
	p.max_regions = 1024;
	p.max_size = SIZE_MAX;
	p.max_unreleased = SIZE_MAX;
	if (ucs_rcache_create(&p, "bridge-ucx", NULL, &rcache) != UCS_OK) {
		fprintf(stderr, "ucs_rcache_create failed: UCX has neither its "
			"hooks nor an external event source\n");
		return T_EXIT_FAIL;
	}
	bridged = forwarded && forwarded() >= 0;
	fprintf(stderr, "UCX rcache; bridge %s; UCX_MEM_MMAP_HOOK_MODE=%s; "
		"regcache monitor %s\n", bridged ? "forwarding" : "absent",
		getenv("UCX_MEM_MMAP_HOOK_MODE") ? getenv("UCX_MEM_MMAP_HOOK_MODE") : "(default)",
		regcache_monitor_name());
	T_CHECK(bridged == !expect_stale);

	for (int k = LIBC_MUNMAP; k <= FREE_MMAPPED; k++)
		stale += scenario(k);
	race_stale = race(T_SCALE(5000), &checked);
	fprintf(stderr, "  cross-thread race: %lu stale of %lu checked "
		"lookups\n", race_stale, checked);
	T_CHECK(checked > 0);
	if (expect_stale) {
		/* UCX's hooks cannot see raw syscalls or io_uring. */
		T_CHECK(stale >= 4);
		T_CHECK(race_stale > 0);
	} else {
		T_EXPECT_EQ(0, stale);
		T_EXPECT_EQ(0, race_stale);
		T_CHECK(forwarded() > 0);
	}
	ucs_rcache_destroy(rcache);
	regcache_destroy(c);
	t_registrar_fini(&treg);
	return t_exit_status();
}
