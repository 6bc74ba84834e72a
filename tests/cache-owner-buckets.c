/*
 * Description: region memory stays bounded when more threads miss than
 * there are owner buckets. Free regions are kept per owner thread in a fixed
 * number of buckets; a region owned by a thread that found no bucket must
 * still be reused, or every miss by such a thread would take a new region
 * for good. Here 300 concurrent threads each run rounds of miss +
 * invalidate on their own buffer; the second half of the rounds must not
 * grow the heap (mallinfo2: index nodes) or the address space (VmSize:
 * region slabs, which are mapped), since the working set is the same.
 */
#include <malloc.h>
#include <string.h>

#include "helpers.h"

#define NTHREADS 300
#define ROUNDS 400

static struct regcache *c;
static char *bufs;
static pthread_barrier_t bar;

static int null_reg(void *ctx, void *addr, size_t len, unsigned access,
		    void **handle)
{
	(void)ctx, (void)addr, (void)len, (void)access;
	*handle = (void *)1;
	return 0;
}

static void null_dereg(void *ctx, void *handle)
{
	(void)ctx, (void)handle;
}

static const struct regcache_ops ops = { .reg = null_reg, .dereg = null_dereg };

static void rounds(char *b, int n)
{
	for (int i = 0; i < n; i++) {
		struct regcache_region *r;

		T_REQUIRE(regcache_get(c, b, 4096, 0, &r) == 0);
		regcache_put(c, r);
		regcache_invalidate(c, b, 4096);
	}
}

static void *worker(void *arg)
{
	char *b = bufs + (size_t)(uintptr_t)arg * 4096;

	rounds(b, ROUNDS / 2);
	pthread_barrier_wait(&bar);	/* main measures */
	pthread_barrier_wait(&bar);
	rounds(b, ROUNDS / 2);
	pthread_barrier_wait(&bar);	/* main measures */
	return NULL;
}

int main(void)
{
	struct regcache_params p = {
		.ops = &ops, .flags = REGCACHE_FLAG_EXPLICIT_INVALIDATE,
	};
	pthread_t th[NTHREADS];
	size_t mid, end, vm_mid, vm_end;

	/* One arena, so mallinfo2() sees every thread's allocations. */
	mallopt(M_ARENA_MAX, 1);
	{
		void *volatile x = malloc(64);	/* not elided by -O2 */

		free(x);
	}
	if (!mallinfo2().arena) {
		fprintf(stderr, "SKIP: mallinfo2() reports nothing (a sanitizer's "
			"allocator); the heap cannot be measured\n");
		return T_EXIT_SKIP;
	}
	T_REQUIRE(regcache_create(&p, &c) == 0);
	bufs = t_map((size_t)NTHREADS * 4096);
	pthread_barrier_init(&bar, NULL, NTHREADS + 1);
	for (int i = 0; i < NTHREADS; i++)
		T_REQUIRE(!pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)i));
	pthread_barrier_wait(&bar);
	mid = mallinfo2().uordblks;
	vm_mid = t_vm_size();
	pthread_barrier_wait(&bar);
	pthread_barrier_wait(&bar);
	end = mallinfo2().uordblks;
	vm_end = t_vm_size();
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	fprintf(stderr, "heap in use after half the rounds: %zu, after all: %zu "
		"(%+lld bytes)\n", mid, end, (long long)end - (long long)mid);
	fprintf(stderr, "address space after half the rounds: %zu, after all: "
		"%zu (%+lld bytes)\n", vm_mid, vm_end,
		(long long)vm_end - (long long)vm_mid);
	/* Index nodes: allow 200 KiB more heap. A slab maps 128 KiB (1364
	 * regions); allow one more slab. */
	T_CHECK(end <= mid + 200 * 1024);
	T_CHECK(vm_end <= vm_mid + 128 * 1024);
	regcache_destroy(c);
	return t_exit_status();
}
