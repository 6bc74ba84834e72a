/*
 * Description: libFuzzer target for the cache as a whole: each input is a
 * sequence of get, put, regcache_invalidate, regcache_flush and changes of
 * the memory under the regions (munmap, munmap + mmap, MAP_FIXED over,
 * MADV_DONTNEED, mremap away + mmap, by libc or raw syscall) in a 32-page
 * arena, run against the process's real monitor (bpf or userfaultfd; with
 * "none", the cache runs with REGCACHE_FLAG_EXPLICIT_INVALIDATE and the
 * target keeps that promise). A model knows each page's generation (bumped
 * by every change that gives it new pages) and whether it is mapped. The
 * registrar records the generations it registered, so a get that returns a
 * registration of older pages, succeeds on an unmapped page, or fails on a
 * mapped one aborts; so does a registration leaked past regcache_destroy()
 * or deregistered twice.
 * Negative control: with REGCACHE_FUZZ_BLIND=1 in the environment the cache
 * runs with REGCACHE_FLAG_EXPLICIT_INVALIDATE and the target breaks that
 * promise (no regcache_invalidate() before a change, and no monitor): it
 * must report STALE.
 *
 * Run: fuzz-cache [-max_total_time=S] NEW_CORPUS_DIR tests/fuzz/corpus-cache
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <regcache.h>

#define FUZZ_NAME "fuzz-cache"
#include "lib/fuzz.h"

#define NPAGES 32
#define NHELD 8

struct record {
	uintptr_t start, end;
	bool dead;
	uint32_t gen[NPAGES];	/* of the arena pages it covers */
};

static size_t page;
static char *arena;
static uint32_t gen[NPAGES];
static bool mapped[NPAGES];
static long live_records;
static bool explicit_mode;
static bool blind;		/* negative control: promise broken */
static struct regcache *anchor;	/* keeps the monitor running */

static size_t page_of(uintptr_t a)
{
	return (a - (uintptr_t)arena) / page;
}

static bool in_arena(uintptr_t start, uintptr_t end)
{
	return start >= (uintptr_t)arena &&
	       end <= (uintptr_t)arena + NPAGES * page;
}

static int fake_reg(void *ctx, void *addr, size_t len, unsigned access,
		    void **handle)
{
	uintptr_t start = (uintptr_t)addr, end = start + len;
	struct record *rec;

	(void)ctx;
	(void)access;
	if (start % page || len % page || !len)
		FAIL("registration of %p+%zu is not page-aligned", addr, len);
	if (!in_arena(start, end))
		FAIL("registration of %p+%zu outside the arena %p+%zu", addr,
		     len, (void *)arena, NPAGES * page);
	for (size_t p = page_of(start); p < page_of(end); p++)
		if (!mapped[p])
			return -EFAULT;	/* as a device would say */
	rec = calloc(1, sizeof(*rec));
	if (!rec)
		return -ENOMEM;
	rec->start = start;
	rec->end = end;
	memcpy(rec->gen, gen, sizeof(gen));
	live_records++;
	*handle = rec;
	return 0;
}

static void fake_dereg(void *ctx, void *handle)
{
	struct record *rec = handle;

	(void)ctx;
	if (rec->dead)
		FAIL("registration %p deregistered twice", handle);
	rec->dead = true;
	live_records--;
	free(rec);
}

static const struct regcache_ops fake_ops = { fake_reg, fake_dereg };

static struct regcache *new_cache(void)
{
	struct regcache_params p = {
		.ops = &fake_ops,
		.flags = explicit_mode ? REGCACHE_FLAG_EXPLICIT_INVALIDATE : 0,
		.max_regions = 16,
	};
	struct regcache *c;

	if (regcache_create(&p, &c))
		FAIL("regcache_create failed");
	return c;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	page = (size_t)sysconf(_SC_PAGESIZE);
	arena = mmap(NULL, NPAGES * page, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (arena == MAP_FAILED)
		FAIL("mmap of the arena failed");
	for (size_t p = 0; p < NPAGES; p++)
		mapped[p] = true;
	anchor = new_cache();
	blind = getenv("REGCACHE_FUZZ_BLIND") != NULL;
	explicit_mode = !strcmp(regcache_monitor_name(), "none");
	if (blind && !explicit_mode)
		FAIL("REGCACHE_FUZZ_BLIND needs REGCACHE_MONITOR=none");
	regcache_destroy(anchor);
	anchor = new_cache();	/* now with the right flags */
	fprintf(stderr, "fuzz-cache: monitor %s%s\n", regcache_monitor_name(),
		blind ? " (blind: nothing invalidates)"
		      : explicit_mode ? " (explicit invalidation)" : "");
	return 0;
}

/* ---- memory changes ---- */

static void fixed_map(char *a, size_t len, bool raw)
{
	void *r;

	if (raw)
		r = (void *)syscall(SYS_mmap, a, len, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
				    0);
	else
		r = mmap(a, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	if (r != a)
		FAIL("mmap(MAP_FIXED) at %p: %s", (void *)a, strerror(errno));
}

static void change(struct regcache *c, unsigned kind, size_t first, size_t n,
		   bool raw)
{
	char *a = arena + first * page, *to;
	size_t len = n * page;
	bool all_mapped = true;

	for (size_t p = first; p < first + n; p++)
		all_mapped &= mapped[p];
	if (explicit_mode && !blind) {	/* the promise that flag makes */
		int ret = regcache_invalidate(c, a, len);

		if (ret < 0)
			FAIL("regcache_invalidate: %d", ret);
	}
	switch (kind % 5) {
	case 0:	/* munmap: a hole, filled at once with PROT_NONE so that no
		 * other mmap (the sanitizer's, the monitor's) can land in the
		 * arena; a device cannot register PROT_NONE pages either. */
		if ((raw ? syscall(SYS_munmap, a, len) : munmap(a, len)))
			FAIL("munmap: %s", strerror(errno));
		if (mmap(a, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS |
			 MAP_FIXED, -1, 0) != a)
			FAIL("mmap(PROT_NONE): %s", strerror(errno));
		for (size_t p = first; p < first + n; p++)
			mapped[p] = false;
		break;
	case 1:	/* munmap + mmap at the same address */
		if ((raw ? syscall(SYS_munmap, a, len) : munmap(a, len)))
			FAIL("munmap: %s", strerror(errno));
		fixed_map(a, len, raw);
		break;
	case 2:	/* MAP_FIXED over */
		fixed_map(a, len, raw);
		break;
	case 3:	/* MADV_DONTNEED (mapped ranges only) */
		if (!all_mapped)
			return;
		if ((raw ? syscall(SYS_madvise, a, len, MADV_DONTNEED)
			 : madvise(a, len, MADV_DONTNEED)))
			FAIL("madvise: %s", strerror(errno));
		break;
	default: /* mremap away (one VMA only), then fresh memory here */
		to = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
			  -1, 0);
		if (to == MAP_FAILED)
			FAIL("mmap: %s", strerror(errno));
		if (!all_mapped ||
		    mremap(a, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, to) != to) {
			/* several VMAs or a hole: the kernel refuses, fine */
			munmap(to, len);
			fixed_map(a, len, raw);
		} else {
			munmap(to, len);
			fixed_map(a, len, raw);
		}
		break;
	}
	for (size_t p = first; p < first + n; p++) {
		gen[p]++;
		if (kind % 5)
			mapped[p] = true;
	}
	/* Touch what is mapped, as an application would. */
	for (size_t p = first; p < first + n; p++)
		if (mapped[p])
			arena[p * page] = (char)gen[p];
}

/* ---- the check ---- */

static void check_get(struct regcache *c, struct regcache_region *r,
		      uintptr_t start, uintptr_t end)
{
	struct record *rec = regcache_region_handle(r);
	uintptr_t ra = (uintptr_t)regcache_region_addr(r);

	if (ra > start || ra + regcache_region_len(r) < end)
		FAIL("region %#lx+%zu does not cover %#lx-%#lx",
		     (unsigned long)ra, regcache_region_len(r),
		     (unsigned long)start, (unsigned long)end);
	if (!rec || rec->dead)
		FAIL("region with a dead registration");
	if (rec->start > start || rec->end < end)
		FAIL("registration %#lx-%#lx does not cover %#lx-%#lx",
		     (unsigned long)rec->start, (unsigned long)rec->end,
		     (unsigned long)start, (unsigned long)end);
	for (size_t p = page_of(start); p <= page_of(end - 1); p++)
		if (rec->gen[p] != gen[p])
			FAIL("STALE: get of %#lx-%#lx returned a registration "
			     "of page %zu at generation %u, the page is at %u "
			     "(monitor %s)", (unsigned long)start,
			     (unsigned long)end, p, rec->gen[p], gen[p],
			     regcache_monitor_name());
	(void)c;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = { data, size };
	struct regcache_region *held[NHELD] = { 0 };
	struct regcache *c = new_cache();

	while (in.n) {
		unsigned op = next(&in) % 8;

		switch (op) {
		case 0:
		case 1:
		case 2: {	/* get */
			size_t first = next(&in) % NPAGES;
			size_t off = (next(&in) | next(&in) << 8) % page;
			size_t max = (NPAGES - first) * page - off;
			size_t len = 1 + (next(&in) | next(&in) << 8) * 64 % max;
			uintptr_t start = (uintptr_t)arena + first * page + off;
			unsigned slot = next(&in) % NHELD;
			bool expect_ok = true;
			int ret;

			for (size_t p = page_of(start);
			     p <= page_of(start + len - 1); p++)
				expect_ok &= mapped[p];
			if (held[slot]) {
				regcache_put(c, held[slot]);
				held[slot] = NULL;
			}
			ret = regcache_get(c, (void *)start, len, 0, &held[slot]);
			if (ret == 0 && !expect_ok)
				FAIL("STALE: get of %#lx+%zu succeeded over an "
				     "unmapped page (monitor %s)",
				     (unsigned long)start, len,
				     regcache_monitor_name());
			if (ret && expect_ok)
				FAIL("get of mapped %#lx+%zu failed: %d",
				     (unsigned long)start, len, ret);
			if (ret) {
				held[slot] = NULL;
				break;
			}
			check_get(c, held[slot], start, start + len);
			if (op == 2) {	/* put at once: an idle cached region */
				regcache_put(c, held[slot]);
				held[slot] = NULL;
			}
			break;
		}
		case 3: {	/* put */
			unsigned slot = next(&in) % NHELD;

			regcache_put(c, held[slot]);
			held[slot] = NULL;
			break;
		}
		case 4:
		case 5: {	/* change the memory */
			unsigned kind = next(&in);
			size_t first = next(&in) % NPAGES;
			size_t n = 1 + next(&in) % (NPAGES - first);

			change(c, kind, first, n, kind & 0x80);
			break;
		}
		case 6: {	/* regcache_invalidate */
			size_t first = next(&in) % NPAGES;
			size_t len = 1 + (next(&in) | next(&in) << 8) * 16 %
					     ((NPAGES - first) * page);
			int ret = regcache_invalidate(c, arena + first * page,
						      len);

			if (ret < 0)
				FAIL("regcache_invalidate: %d", ret);
			break;
		}
		default:
			regcache_flush(c);
			break;
		}
	}
	for (unsigned i = 0; i < NHELD; i++)
		regcache_put(c, held[i]);
	regcache_destroy(c);
	if (live_records)
		FAIL("%ld registrations left after regcache_destroy",
		     live_records);
	/* Map every hole again for the next input. */
	for (size_t p = 0; p < NPAGES; p++)
		if (!mapped[p]) {
			fixed_map(arena + p * page, page, false);
			mapped[p] = true;
			gen[p]++;
		}
	return 0;
}
