/* SPDX-License-Identifier: MIT */
/*
 * Description: latency and bandwidth of MPI point-to-point messages
 * between two ranks, in the manner of the usual MPI micro-benchmarks
 * (written for regcache; no code taken from any of them), to compare
 * regcache-run against the middleware's own hooks and against its caches
 * off (tests/vm/nodes-bench.sh runs the three, interleaved, across two
 * guests; docs/benchmarks.md).
 *
 *   mpi-bench [-m lat,bw] [-b reuse,churn] [-M MAX] [-n ITERS]
 *             [-w WARMUP] [-W WINDOW] [-B BYTES] [-s SECONDS] [-t LIMIT]
 *
 * lat: ping-pong, one message each way, half the round trip. bw: rank 0
 * posts a window of WINDOW (64) non-blocking sends from one buffer, rank 1
 * answers with a 4-byte reply once all arrived; bytes of the window over
 * its time. Sizes from 8 B to MAX (16M) by powers of 2, the whole window
 * at every size.
 *
 * reuse: the same buffers for every message (a middleware's cache hits).
 * churn: every iteration takes fresh buffers from malloc and frees them
 * after, with glibc's mmap threshold pinned at 128 KiB so that larger
 * sizes come from mmap and go back with munmap: each message may meet a
 * changed mapping, which the cache must learn of and register again. The
 * application's own work there (writing the message, checking it) is
 * left out of the time; malloc, free and the first touch by the device
 * are in.
 *
 * ITERS (lat 200, bw 20) timed iterations up to 64 KiB, fewer above (the
 * same bytes, at least 1), after WARMUP (10, scaled alike) untimed ones;
 * a size stops early at SECONDS (10) per test, judged from the warm-up.
 * Rank 1 receives the window into buffers of its own while they fit in
 * RBUF_BYTES (64 MiB: 64 up to 1 MiB, 4 at 16 MiB); beyond, the window's
 * receives take them in turn, as the usual benchmarks receive a whole
 * window into one buffer. Every message of an iteration carries the same
 * pattern, so a shared buffer still holds exactly it; rank 1 holds at most
 * 64 MiB of them (one buffer above 64 MiB), rank 0 one buffer. BYTES (-B,
 * none by default) cuts the window to what fits in it (at least 1), for
 * emulation's pace: under TCG a window of 64 x 16 MiB takes minutes.
 * LIMIT (1800 s) bounds the whole run: past it a rank exits with FAIL.
 *
 * Every message carries a pattern of its own (size, iteration); churn
 * checks every message at a word per page, and each size of each test
 * ends with one more iteration into cleared buffers, checked byte by byte
 * where it arrived (lat: at both ranks, the echo included). A wrong byte
 * is a FAIL (the job aborts), never a figure.
 *
 * Rank 0 prints, per test and size, a line
 *   result lat|bw reuse|churn SIZE VALUE us|MB/s ITERS mean MEAN
 *          [window N buffers M]
 * (VALUE of the median iteration, robust to the stalls of emulation; MEAN
 * of all), and at the end on how many ranks regcache's UCX bridge was
 * forwarding.
 */
#include <dlfcn.h>
#include <getopt.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "median.h"

#define TAG_DATA 1
#define TAG_REPLY 2
#define MIB ((size_t)1 << 20)
/* Beyond this, fewer timed iterations: the same bytes per size. */
#define FULL_ITERS_UP_TO ((size_t)64 << 10)
/* Rank 1's receive buffers of a window, at most (at least one). */
#define RBUF_BYTES (64 * MIB)

struct opts {
	bool lat, bw, reuse, churn;
	size_t max;
	unsigned lat_iters, bw_iters, warmup, window;
	size_t window_bytes;
	double seconds;
	unsigned limit;
};

static int rank;
/* Each timed iteration's time at rank 0, when not NULL (run_test). */
static double *iter_time;

static void fail(const char *fmt, ...)
{
	va_list ap;

	printf("mpi-bench: rank %d: ", rank);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf(" (FAIL)\n");
	fflush(stdout);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

static void on_alarm(int sig)
{
	static const char msg[] =
		"mpi-bench: the time limit (-t) passed (FAIL)\n";

	(void)sig;
	/* Async-signal-safe: the job is dead anyway, mpirun ends the peer. */
	if (write(STDOUT_FILENO, msg, sizeof(msg) - 1) < 0)
		_exit(3);
	_exit(3);
}

/* Word @j of the message that @seed names: differs by position and by
 * message, so a stale or misplaced page cannot look right. */
static inline uint64_t pattern(uint64_t seed, size_t j)
{
	return (seed * 0x9e3779b97f4a7c15ull) ^
	       ((j + 1) * 0xd1b54a32d192ed03ull);
}

static uint64_t seed_of(size_t size, unsigned iter, unsigned slot)
{
	return ((uint64_t)size << 32) ^ ((uint64_t)iter << 8) ^ slot ^
	       0x5a5a000000000000ull;
}

static void fill(void *buf, size_t len, uint64_t seed)
{
	uint64_t *w = buf;

	for (size_t j = 0; j < len / 8; j++)
		w[j] = pattern(seed, j);
}

/* Report the first wrong word of a message found wrong at word @j. */
static void wrong(const uint64_t *w, size_t len, uint64_t seed, size_t j,
		  const char *what)
{
	size_t first = 0;

	while (first < j && w[first] == pattern(seed, first))
		first++;
	fail("%s: a message of %zu bytes is wrong from byte %zu", what, len,
	     first * 8);
}

/* Every word (@full) or one per 4 KiB page and the last. */
static void check(const void *buf, size_t len, uint64_t seed, bool full,
		  const char *what)
{
	const uint64_t *w = buf;
	size_t n = len / 8, step = full ? 1 : 512;

	for (size_t j = 0; j < n; j += step)
		if (w[j] != pattern(seed, j))
			wrong(w, len, seed, j, what);
	if (w[n - 1] != pattern(seed, n - 1))
		wrong(w, len, seed, n - 1, what);
}

static void *alloc(size_t len)
{
	void *p = malloc(len);

	if (!p)
		fail("malloc(%zu) failed", len);
	return p;
}

/*
 * One test's iterations @first..@first+@iters-1 of ping-pong at @size.
 * @rbuf/@sbuf: the reused buffers (NULL: churn, fresh ones each time).
 * @full: check the last iteration's bytes in full. Return: the elapsed
 * time minus the application's own work (writing, checking); each
 * iteration's into iter_time[i - @first] when it is set.
 */
static double run_lat(size_t size, unsigned first, unsigned iters,
		      char *sbuf, char *rbuf, bool full)
{
	bool churn = !sbuf;
	double t0 = MPI_Wtime(), work = 0, w;

	for (unsigned i = first; i < first + iters; i++) {
		uint64_t seed = seed_of(size, i, 0);
		bool last = full && i == first + iters - 1;
		char *s = sbuf, *r = rbuf;
		double ts = MPI_Wtime(), ws = work;

		if (rank == 0) {
			if (churn) {
				s = alloc(size);
				w = MPI_Wtime();
				fill(s, size, seed);
				work += MPI_Wtime() - w;
			}
			MPI_Send(s, (int)size, MPI_BYTE, 1, TAG_DATA,
				 MPI_COMM_WORLD);
			if (churn)
				r = alloc(size);
			MPI_Recv(r, (int)size, MPI_BYTE, 1, TAG_DATA,
				 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else {
			if (churn)
				r = alloc(size);
			MPI_Recv(r, (int)size, MPI_BYTE, 0, TAG_DATA,
				 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			/* The echo: rank 0 checks the way back too. */
			MPI_Send(r, (int)size, MPI_BYTE, 0, TAG_DATA,
				 MPI_COMM_WORLD);
		}
		if (churn || last) {
			w = MPI_Wtime();
			check(r, size, seed, last,
			      rank ? "lat, rank 0 to 1" : "lat, echoed");
			work += MPI_Wtime() - w;
		}
		if (churn) {
			free(r);
			if (rank == 0)
				free(s);
		}
		if (iter_time)
			iter_time[i - first] = MPI_Wtime() - ts - (work - ws);
	}
	return MPI_Wtime() - t0 - work;
}

/* The same for a window of @window sends (rank 0) and receives into
 * @rbufs[slot % @nbufs] (rank 1; churn: @nbufs fresh ones per iteration),
 * then the reply. */
static double run_bw(size_t size, unsigned window, unsigned nbufs,
		     unsigned first, unsigned iters, char *sbuf, char **rbufs,
		     bool full)
{
	static MPI_Request req[1024];
	bool churn = !sbuf;
	double t0 = MPI_Wtime(), work = 0, w;
	char *rb[1024];
	int reply = 0;

	for (unsigned i = first; i < first + iters; i++) {
		uint64_t seed = seed_of(size, i, 0);
		bool last = full && i == first + iters - 1;
		double ts = MPI_Wtime(), ws = work;

		if (rank == 0) {
			char *s = sbuf;

			if (churn) {
				s = alloc(size);
				w = MPI_Wtime();
				fill(s, size, seed);
				work += MPI_Wtime() - w;
			}
			for (unsigned k = 0; k < window; k++)
				MPI_Isend(s, (int)size, MPI_BYTE, 1, TAG_DATA,
					  MPI_COMM_WORLD, &req[k]);
			MPI_Waitall((int)window, req, MPI_STATUSES_IGNORE);
			MPI_Recv(&reply, 1, MPI_INT, 1, TAG_REPLY,
				 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			if (churn)
				free(s);
			if (iter_time)
				iter_time[i - first] =
					MPI_Wtime() - ts - (work - ws);
			continue;
		}
		for (unsigned k = 0; k < nbufs; k++)
			rb[k] = churn ? alloc(size) : rbufs[k];
		for (unsigned k = 0; k < window; k++)
			MPI_Irecv(rb[k % nbufs], (int)size, MPI_BYTE, 0,
				  TAG_DATA, MPI_COMM_WORLD, &req[k]);
		MPI_Waitall((int)window, req, MPI_STATUSES_IGNORE);
		MPI_Send(&reply, 1, MPI_INT, 0, TAG_REPLY, MPI_COMM_WORLD);
		if (churn || last) {
			w = MPI_Wtime();
			for (unsigned k = 0; k < nbufs; k++)
				check(rb[k], size, seed, last, "bw");
			work += MPI_Wtime() - w;
		}
		if (churn)
			for (unsigned k = 0; k < nbufs; k++)
				free(rb[k]);
	}
	return MPI_Wtime() - t0 - work;
}

/* Timed iterations at @size for a test of @base iterations at 8 B. */
static unsigned scaled(unsigned base, size_t size)
{
	size_t n = size <= FULL_ITERS_UP_TO ? base :
		   (size_t)base * FULL_ITERS_UP_TO / size;

	return n ? (unsigned)n : 1;
}

/* One test (@bw or latency, @churn or reuse) over every size. */
static void run_test(const struct opts *o, bool bw, bool churn)
{
	const char *name = bw ? "bw" : "lat", *kind = churn ? "churn" : "reuse";

	if (rank == 0) {
		printf("mpi-bench: %s %s: %s\n", name, kind,
		       bw ? "MB/s (10^6 bytes), window of sends then a reply"
			  : "us, half a round trip");
		fflush(stdout);
	}
	for (size_t size = 8; size <= o->max; size *= 2) {
		unsigned window = o->window, warm, iters, nr, nbufs;
		char *sbuf = NULL, **rbufs = NULL;
		double t, per;

		if (bw && o->window_bytes &&
		    (size_t)window * size > o->window_bytes)
			window = (unsigned)(o->window_bytes / size);
		if (!window)
			window = 1;
		nbufs = (size_t)window * size > RBUF_BYTES ?
			(unsigned)(RBUF_BYTES / size) : window;
		if (!nbufs)
			nbufs = 1;
		/* Rank 0 sends from one buffer; rank 1 receives into one
		 * (lat: and echoes it) or nbufs for the window. */
		nr = bw && rank == 1 ? nbufs : 1;
		warm = scaled(o->warmup, size);
		iters = scaled(bw ? o->bw_iters : o->lat_iters, size);
		if (!churn) {
			sbuf = alloc(size);
			fill(sbuf, size, seed_of(size, 0, 0));
			rbufs = alloc(nr * sizeof(*rbufs));
			for (unsigned k = 0; k < nr; k++) {
				rbufs[k] = alloc(size);
				memset(rbufs[k], 0, size);
			}
		}
		MPI_Barrier(MPI_COMM_WORLD);
		iter_time = alloc((warm > iters ? warm : iters) *
				  sizeof(*iter_time));
		if (bw)
			run_bw(size, window, nbufs, 0, warm, sbuf, rbufs,
			       false);
		else
			run_lat(size, 0, warm, sbuf, rbufs ? rbufs[0] : NULL,
				false);
		/* Rank 0's median warm-up iteration decides how many fit
		 * in -s. */
		per = median_of(iter_time, warm);
		if (rank == 0 && per * iters > o->seconds) {
			iters = (unsigned)(o->seconds / per);
			if (!iters)
				iters = 1;
		}
		MPI_Bcast(&iters, 1, MPI_UNSIGNED, 0, MPI_COMM_WORLD);
		MPI_Barrier(MPI_COMM_WORLD);
		/* Seeds go on from the warm-up's: a heap chunk that comes
		 * back with an earlier message in it must not pass. */
		t = bw ? run_bw(size, window, nbufs, warm, iters, sbuf, rbufs,
				false)
		       : run_lat(size, warm, iters, sbuf,
				 rbufs ? rbufs[0] : NULL, false);
		/*
		 * The figure is of the median iteration: under emulation
		 * some iterations stall while the host runs other guests
		 * (means of 1-28 ms for 8 B, one way, in one run), and the
		 * mean follows them. The mean goes along, as the usual
		 * benchmarks print it.
		 */
		if (rank == 0) {
			double m = median_of(iter_time, iters);
			double v = bw ? (double)size * window / m / 1e6
				      : m / 2 * 1e6;
			double mean = bw ? (double)size * window * iters / t
						   / 1e6
					 : t / (2.0 * iters) * 1e6;

			printf("result %s %s %zu %.3f %s %u mean %.3f", name,
			       kind, size, v, bw ? "MB/s" : "us", iters, mean);
			if (bw)
				printf(" window %u buffers %u", window, nbufs);
			printf("\n");
			fflush(stdout);
		}
		free(iter_time);
		iter_time = NULL;
		/*
		 * The check: one more iteration with a pattern of its own,
		 * into cleared buffers, every byte checked; a registration
		 * that no longer reached the buffer's pages shows here.
		 */
		if (!churn) {
			uint64_t seed = seed_of(size, warm + iters, 0);

			if (rank == 0)
				fill(sbuf, size, seed);
			for (unsigned k = 0; k < nr; k++)
				memset(rbufs[k], 0, size);
		}
		MPI_Barrier(MPI_COMM_WORLD);
		if (bw)
			run_bw(size, window, nbufs, warm + iters, 1, sbuf,
			       rbufs, true);
		else
			run_lat(size, warm + iters, 1, sbuf,
				rbufs ? rbufs[0] : NULL, true);
		if (!churn) {
			for (unsigned k = 0; k < nr; k++)
				free(rbufs[k]);
			free(rbufs);
			free(sbuf);
		}
	}
}

static size_t parse_size(const char *s)
{
	char *end;
	size_t v = strtoull(s, &end, 10);

	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	}
	return *end ? 0 : v;
}

static int usage(void)
{
	if (rank == 0)
		fprintf(stderr,
			"usage: mpi-bench [-m lat,bw] [-b reuse,churn] "
			"[-M MAX] [-n ITERS] [-w WARMUP]\n"
			"                 [-W WINDOW] [-B BYTES] [-s SECONDS] "
			"[-t LIMIT]\n");
	MPI_Finalize();
	return 2;
}

static const char *ucx_version(void)
{
	void *h = dlopen("libucp.so.0", RTLD_LAZY | RTLD_NOLOAD);
	const char *(*v)(void);

	if (!h)
		return "not loaded";
	v = (const char *(*)(void))dlsym(h, "ucp_get_version_string");
	return v ? v() : "(unknown)";
}

int main(int argc, char **argv)
{
	struct opts o = {
		.lat = true, .bw = true, .reuse = true, .churn = true,
		.max = 16 * MIB, .lat_iters = 200, .bw_iters = 20,
		.warmup = 10, .window = 64, .window_bytes = 0,
		.seconds = 10, .limit = 1800,
	};
	char mpi[MPI_MAX_LIBRARY_VERSION_STRING];
	char host[MPI_MAX_PROCESSOR_NAME], host1[MPI_MAX_PROCESSOR_NAME];
	long (*forwarded)(void);
	int size, len, c, on, all;

	/*
	 * Before anything allocates: a fixed threshold keeps every churned
	 * buffer of 128 KiB and more on its own mmap. glibc otherwise
	 * raises the threshold to the largest chunk freed (up to 32 MiB),
	 * and frees after the first would stay in the heap, unchanged.
	 */
	mallopt(M_MMAP_THRESHOLD, 128 << 10);
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	while ((c = getopt(argc, argv, "m:b:M:n:w:W:B:s:t:")) != -1) {
		switch (c) {
		case 'm':
			o.lat = strstr(optarg, "lat");
			o.bw = strstr(optarg, "bw");
			break;
		case 'b':
			o.reuse = strstr(optarg, "reuse");
			o.churn = strstr(optarg, "churn");
			break;
		case 'M': o.max = parse_size(optarg); break;
		case 'n':
			o.lat_iters = o.bw_iters = (unsigned)atoi(optarg);
			break;
		case 'w': o.warmup = (unsigned)atoi(optarg); break;
		case 'W': o.window = (unsigned)atoi(optarg); break;
		case 'B':
			o.window_bytes = parse_size(optarg);
			if (!o.window_bytes)
				return usage();
			break;
		case 's': o.seconds = atof(optarg); break;
		case 't': o.limit = (unsigned)atoi(optarg); break;
		default: return usage();
		}
	}
	if (optind != argc || o.max < 8 || o.max > 1024 * MIB ||
	    !o.lat_iters || !o.warmup || !o.window || o.window > 1024 ||
	    (o.window_bytes && o.window_bytes < 8) ||
	    o.seconds <= 0 || !(o.lat || o.bw) || !(o.reuse || o.churn))
		return usage();
	if (size != 2) {
		if (rank == 0)
			printf("mpi-bench: needs 2 ranks, has %d (FAIL)\n",
			       size);
		MPI_Finalize();
		return 1;
	}
	signal(SIGALRM, on_alarm);
	alarm(o.limit);

	MPI_Get_processor_name(host, &len);
	memcpy(host1, host, sizeof(host1));
	MPI_Bcast(host1, (int)sizeof(host1), MPI_CHAR, 1, MPI_COMM_WORLD);
	if (rank == 0) {
		MPI_Get_library_version(mpi, &len);
		mpi[strcspn(mpi, "\n")] = '\0';
		printf("mpi-bench: %s; UCX %s\n", mpi, ucx_version());
		printf("mpi-bench: rank 0 on %s, rank 1 on %s; sizes 8 to %zu,"
		       " %u/%u lat/bw iterations, %u warm-up, window %u",
		       host, host1, o.max, o.lat_iters, o.bw_iters, o.warmup,
		       o.window);
		if (o.window_bytes)
			printf(" of at most %zu bytes", o.window_bytes);
		else
			printf(" at every size");
		printf(", %.1f s per size at most\n", o.seconds);
		fflush(stdout);
	}
	if (o.reuse && o.lat)
		run_test(&o, false, false);
	if (o.reuse && o.bw)
		run_test(&o, true, false);
	if (o.churn && o.lat)
		run_test(&o, false, true);
	if (o.churn && o.bw)
		run_test(&o, true, true);

	/* Which middleware the figures are of: a run meant to be under
	 * regcache-run must not have been under UCX's hooks, nor the reverse
	 * (tests/vm/nodes-bench.sh checks this line). */
	forwarded = (long (*)(void))dlsym(RTLD_DEFAULT,
					  "regcache_ucx_bridge_forwarded");
	on = forwarded && forwarded() >= 0;
	MPI_Reduce(&on, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
	if (rank == 0)
		printf("mpi-bench: regcache's UCX bridge forwarding on %d of "
		       "2 ranks\nmpi-bench: done, every message checked\n",
		       all);
	MPI_Finalize();
	return 0;
}
