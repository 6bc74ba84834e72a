/* SPDX-License-Identifier: MIT */
/*
 * A measurement, not a test: how late the kernel gives a released io_uring
 * fixed buffer back to RLIMIT_MEMLOCK. As uid UID with 256 KiB of the limit,
 * in one slot, registers and releases 64 KiB until -ENOMEM, then waits
 * (polling every 5 ms) until a registration succeeds, CYCLES times; prints
 * each wait, measured from the last release, with VmPin (the kernel's count
 * of the process's pinned pages) when it failed. Run as root:
 *
 *   cc -O2 -o /tmp/lag tests/vm/release-lag-probe.c -luring
 *   tests/vm/run.sh -- sh -c '/tmp/lag 3 65540; /tmp/lag 6 65540'
 *
 * (the guest sees the host's /tmp only if it is not a tmpfs; a path in
 * the checkout always works). On 6.1 in the guest: 1.02-1.07 s, idle or
 * with three CPU-bound processes; a second process of the uid started
 * right after the first exited first meets the first's pages, still
 * counted, and then registers as they come back (0.06-0.98 s).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define LEN 65536

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static long vm_pin_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kib = -1;

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmPin:", 6))
			kib = atol(line + 6);
	if (f)
		fclose(f);
	return kib;
}

int main(int argc, char **argv)
{
	struct rlimit rl = { 256 << 10, 256 << 10 };
	int cycles = argc > 1 ? atoi(argv[1]) : 8;
	uid_t uid = argc > 2 ? (uid_t)atoi(argv[2]) : 65540;
	struct iovec iov, empty = { 0 };
	struct io_uring ring;
	double worst = 0, released = 0;
	char *buf;

	if (setrlimit(RLIMIT_MEMLOCK, &rl) || setgroups(0, NULL) ||
	    setresgid(uid, uid, uid) || setresuid(uid, uid, uid)) {
		perror("dropping to the uid (run as root)");
		return 2;
	}
	buf = mmap(NULL, LEN, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	iov = (struct iovec){ buf, LEN };
	if (buf == MAP_FAILED || io_uring_queue_init(8, &ring, 0) ||
	    io_uring_register_buffers_sparse(&ring, 4)) {
		fprintf(stderr, "no ring with a sparse buffer table\n");
		return 2;
	}
	for (int k = 0; k < cycles; k++) {
		int n = 0, ret;

		while ((ret = io_uring_register_buffers_update_tag(
				&ring, 0, &iov, NULL, 1)) == 1) {
			io_uring_register_buffers_update_tag(&ring, 0, &empty,
							     NULL, 1);
			released = now();
			if (++n > 64) {
				printf("no ENOMEM in 64 registrations: this "
				       "kernel gives released buffers back at "
				       "once\n");
				return 0;
			}
		}
		if (ret != -ENOMEM) {
			fprintf(stderr, "register: %s\n", strerror(-ret));
			return 1;
		}
		long pin = vm_pin_kib();
		double t0 = now(), lag;

		while ((ret = io_uring_register_buffers_update_tag(
				&ring, 0, &iov, NULL, 1)) == -ENOMEM &&
		       now() - t0 < 60)
			usleep(5000);
		lag = now() - released;
		if (lag > worst)
			worst = lag;
		printf("cycle %d: ENOMEM after %d registrations (VmPin %ld "
		       "KiB); registered %.3f s after the last release\n", k,
		       n, pin, lag);
		io_uring_register_buffers_update_tag(&ring, 0, &empty, NULL, 1);
		released = now();
	}
	printf("worst %.3f s\n", worst);
	return 0;
}
