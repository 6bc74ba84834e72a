/*
 * Description: userfaultfd monitor, numbers (not a pass/fail property): the
 * raw cost of the candidate hit probes against getppid() (the syscall
 * floor), as medians of batches, every candidate interleaved with the
 * others batch by batch so that a change of load hits them alike:
 *  - UFFDIO_WRITEPROTECT of an empty range (what ->validate() uses), through
 *    libc's ioctl() and through a raw syscall instruction;
 *  - UFFDIO_WAKE of an empty range: it checks nothing, so it is the floor
 *    of any ioctl on the userfaultfd (the ioctl path, not the handler);
 *  - on a sentinel page (the fallback), UFFDIO_ZEROPAGE, which takes the
 *    VMA lock, and UFFDIO_WRITEPROTECT mode 0, which takes the mmap lock;
 * each alone in the process, with one idle thread that shares the file
 * table (as the monitor thread did), with one idle thread that has its own
 * (as the monitor thread now has), and with two threads probing at once.
 * Argument: a scale.
 */
#include <sched.h>
#include <sys/ioctl.h>
#include <time.h>

#include <linux/userfaultfd.h>

#include "device.h"
#include "helpers.h"

#define NCAND 6
#define PER 1000

static const char *const names[NCAND] = {
	"getppid()", "empty WRITEPROTECT", "empty WRITEPROTECT, raw",
	"empty WAKE (floor)", "ZEROPAGE, sentinel", "WRITEPROTECT, sentinel",
};
static int fd, batches;
static char *zp, *wpp;
static _Atomic int quit;

static long raw_ioctl(int f, unsigned long cmd, void *arg)
{
#if defined(__x86_64__) && !defined(__ILP32__)
	long ret;

	__asm__ volatile("syscall" : "=a"(ret)
			 : "0"((long)SYS_ioctl), "D"((long)f), "S"(cmd),
			   "d"(arg)
			 : "rcx", "r11", "memory");
	return ret;
#else
	return ioctl(f, cmd, arg) ? -errno : 0;
#endif
}

/* ns per call of candidate @c, over PER calls. */
static double batch(int c)
{
	struct uffdio_writeprotect empty = { .range = { 0, 0 } };
	struct uffdio_range none = { 0, 0 };
	double t0 = now_ns();

	for (int i = 0; i < PER; i++) {
		switch (c) {
		case 0:
			syscall(SYS_getppid);
			break;
		case 1:
			if (!ioctl(fd, UFFDIO_WRITEPROTECT, &empty) ||
			    errno != EINVAL)
				T_REQUIRE(!"empty probe did not answer EINVAL");
			break;
		case 2:
			T_REQUIRE(raw_ioctl(fd, UFFDIO_WRITEPROTECT, &empty) ==
				  -EINVAL);
			break;
		case 3:
			ioctl(fd, UFFDIO_WAKE, &none);
			break;
		case 4: {
			struct uffdio_zeropage z = {
				.range = { (uintptr_t)zp, 4096 },
				.mode = UFFDIO_ZEROPAGE_MODE_DONTWAKE,
			};

			if (!ioctl(fd, UFFDIO_ZEROPAGE, &z) || errno != EEXIST)
				T_REQUIRE(!"ZEROPAGE probe did not answer EEXIST");
			break;
		}
		default: {
			struct uffdio_writeprotect w = {
				.range = { (uintptr_t)wpp, 4096 },
			};

			T_REQUIRE(ioctl(fd, UFFDIO_WRITEPROTECT, &w) == 0);
		}
		}
	}
	return (now_ns() - t0) / PER;
}

/* Median per candidate over @batches interleaved batches. */
static void *measure(void *out)
{
	double *med = out, *v = calloc((size_t)batches * NCAND, sizeof(*v));

	T_REQUIRE(v);
	for (int b = 0; b < batches; b++)
		for (int c = 0; c < NCAND; c++)
			v[c * batches + b] = batch(c);
	for (int c = 0; c < NCAND; c++)
		med[c] = median(v + c * batches, batches);
	free(v);
	return NULL;
}

static void *idle(void *own_table)
{
	if (own_table)
		T_REQUIRE(unshare(CLONE_FILES) == 0);
	while (!quit)
		usleep(1000);
	return NULL;
}

int main(int argc, char **argv)
{
	static const char *const cases[4] = {
		"alone", "+1 idle thread, shared fd table",
		"+1 idle thread, own fd table", "2 threads at once (each)",
	};
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg;
	double med[4][NCAND], two[NCAND];

	batches = 40 * (argc > 1 ? atoi(argv[1]) : 10);
	fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | 1);
	if (fd < 0) {
		printf("SKIP: userfaultfd: %s\n", strerror(errno));
		return T_EXIT_SKIP;
	}
	T_REQUIRE(ioctl(fd, UFFDIO_API, &api) == 0);
	zp = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS |
		  MAP_POPULATE, -1, 0);
	wpp = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_REQUIRE(zp != MAP_FAILED && wpp != MAP_FAILED);
	reg = (struct uffdio_register){
		.range = { (uintptr_t)zp, 4096 },
		.mode = UFFDIO_REGISTER_MODE_WP | UFFDIO_REGISTER_MODE_MISSING,
	};
	T_REQUIRE(ioctl(fd, UFFDIO_REGISTER, &reg) == 0);
	reg.range.start = (uintptr_t)wpp;
	reg.mode = UFFDIO_REGISTER_MODE_WP;
	T_REQUIRE(ioctl(fd, UFFDIO_REGISTER, &reg) == 0);

	measure(med[0]);
	for (int own = 0; own < 2; own++) {
		pthread_t t;

		quit = 0;
		T_REQUIRE(pthread_create(&t, NULL, idle,
					 own ? (void *)1 : NULL) == 0);
		usleep(20000);	/* let it unshare */
		measure(med[1 + own]);
		quit = 1;
		pthread_join(t, NULL);
	}
	{
		pthread_t th[2];

		T_REQUIRE(pthread_create(&th[0], NULL, measure, med[3]) == 0);
		T_REQUIRE(pthread_create(&th[1], NULL, measure, two) == 0);
		pthread_join(th[0], NULL);
		pthread_join(th[1], NULL);
	}
	printf("ns per call, medians of %d batches of %d calls\n", batches, PER);
	for (int k = 0; k < 4; k++) {
		printf("%s:\n", cases[k]);
		for (int c = 0; c < NCAND; c++)
			printf("  %-26s %7.1f ns  %.2fx getppid\n", names[c],
			       med[k][c], med[k][c] / med[k][0]);
	}
	close(fd);
	return t_exit_status();
}
