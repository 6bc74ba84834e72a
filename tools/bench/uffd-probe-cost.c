/*
 * Description: userfaultfd monitor, numbers (not a pass/fail property): the
 * raw cost of the hit probes, with one thread and with two threads probing
 * at once, against getppid() as the syscall floor. UFFDIO_WRITEPROTECT of
 * an empty range (what ->validate() uses) fails right after the kernel's
 * mmap_changing check and takes no lock; on a sentinel page (the
 * fallback) UFFDIO_ZEROPAGE takes the VMA lock and UFFDIO_WRITEPROTECT
 * mode 0 the mmap lock. Argument: a scale.
 */
#include <sys/ioctl.h>
#include <time.h>

#include <linux/userfaultfd.h>

#include "device.h"
#include "helpers.h"

static int fd, mode, n;
static char *zp, *wpp;

static void *run(void *out)
{
	double t0 = now_ns();

	for (int i = 0; i < n; i++) {
		if (mode == 0) {
			syscall(SYS_getppid);
		} else if (mode == 1) {
			struct uffdio_zeropage z = {
				.range = { (uintptr_t)zp, 4096 },
				.mode = UFFDIO_ZEROPAGE_MODE_DONTWAKE,
			};

			if (!ioctl(fd, UFFDIO_ZEROPAGE, &z) || errno != EEXIST)
				T_REQUIRE(!"ZEROPAGE probe did not answer EEXIST");
		} else if (mode == 2) {
			struct uffdio_writeprotect w = {
				.range = { (uintptr_t)wpp, 4096 },
			};

			T_REQUIRE(ioctl(fd, UFFDIO_WRITEPROTECT, &w) == 0);
		} else {
			struct uffdio_writeprotect w = { .range = { 0, 0 } };

			if (!ioctl(fd, UFFDIO_WRITEPROTECT, &w) ||
			    errno != EINVAL)
				T_REQUIRE(!"empty probe did not answer EINVAL");
		}
	}
	*(double *)out = (now_ns() - t0) / n;
	return NULL;
}

int main(int argc, char **argv)
{
	static const char *const names[] = { "getppid()", "UFFDIO_ZEROPAGE",
					     "UFFDIO_WRITEPROTECT",
					     "empty WRITEPROTECT" };
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg;

	n = 20000 * (argc > 1 ? atoi(argv[1]) : 10);
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

	for (mode = 0; mode < 4; mode++) {
		double one, two[2];
		pthread_t th[2];

		run(&one);
		for (int i = 0; i < 2; i++)
			T_REQUIRE(pthread_create(&th[i], NULL, run, &two[i]) == 0);
		for (int i = 0; i < 2; i++)
			pthread_join(th[i], NULL);
		printf("%-20s 1 thread %5.0f ns; 2 threads at once %5.0f / "
		       "%5.0f ns\n", names[mode], one, two[0], two[1]);
	}
	close(fd);
	return t_exit_status();
}
