/*
 * Description: a forked child that keeps a copy of the process's
 * userfaultfd and never calls regcache must not make the parent hang.
 * While the monitor runs, the parent's munmap + mmap and madvise
 * (MADV_DONTNEED) of watched memory return and are still seen (the next get
 * misses and pins the page the parent sees now). After the last cache is
 * destroyed (unregister, stop, close), munmap and madvise of formerly
 * watched memory return too, including a watched buffer that mremap moved
 * away from every range the monitor recorded: nothing is left registered
 * with a userfaultfd that nobody reads. The parent's part runs in a worker process that
 * reports each step through a pipe; a worker that has not finished within
 * a bound is hung, named by its last step, killed and failed.
 * Negative control: a userfaultfd of our own, registered over a mapping
 * with UNMAP events and never read, does make munmap hang while a child
 * holds a copy of it, and the same watchdog sees that.
 */
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>

#include <linux/userfaultfd.h>

#include "helpers.h"

#define LEN 16384
#define BOUND_MS 60000		/* the real case: milliseconds are normal */
#define CONTROL_MS 2000		/* the control must still hang by then */

static struct t_registrar t;
static int progress = -1;	/* worker -> watchdog, one byte per step */

static const char *const step_name[] = {
	"start",
	"cache created, child holding the userfaultfd forked",
	"munmap + mmap of a watched buffer, seen",
	"madvise(MADV_DONTNEED) of a watched buffer, seen",
	"mremap of a watched buffer to another address",
	"last cache destroyed",
	"madvise(MADV_DONTNEED) of formerly watched memory",
	"munmap of formerly watched memory",
	"munmap of the buffer that mremap moved while watched",
	"child released",
};
#define STEPS 9

enum { CONTROL_START = 1, CONTROL_MUNMAP, CONTROL_DONE };
static const char *const control_step_name[] = {
	"start",
	"own userfaultfd registered, child holding it forked, ours closed",
	"about to munmap the registered mapping",
	"munmap returned",
};

static void step(int n)
{
	unsigned char b = (unsigned char)n;

	T_REQUIRE(write(progress, &b, 1) == 1);
}

/* A child that only holds every fd it inherited, until @fd reads EOF. */
static pid_t fork_holder(int *release)
{
	int fds[2];
	pid_t pid;

	T_REQUIRE(pipe(fds) == 0);
	pid = fork();
	T_REQUIRE(pid >= 0);
	if (pid == 0) {
		char ch;

		close(fds[1]);
		alarm(2 * BOUND_MS / 1000);	/* never outlive the test */
		(void)!read(fds[0], &ch, 1);
		_exit(0);
	}
	close(fds[0]);
	*release = fds[1];
	return pid;
}

/* New pages at @buf, filled with 2s. */
static void replace(char *buf)
{
	t_remap(buf, LEN);
	memset(buf, 2, LEN);
}

/* Cache @buf, give it new pages (munmap + mmap, or MADV_DONTNEED when
 * @dontneed), and check that the next get
 * misses and pins the page the caller sees now (and that the cache hits
 * before the change). */
static void seen(struct regcache *c, char *buf, bool dontneed,
		 const char *what)
{
	struct regcache_stats before, after;
	struct regcache_region *r;

	T_REQUIRE(regcache_get(c, buf, LEN, 0, &r) == 0);
	regcache_put(c, r);
	regcache_get_stats(c, &before);
	T_REQUIRE(regcache_get(c, buf, LEN, 0, &r) == 0);
	regcache_get_stats(c, &after);
	if (after.hits != before.hits + 1) {
		fprintf(stderr, "%s: a repeated get did not hit\n", what);
		t_failures++;
	}
	regcache_put(c, r);
	if (dontneed) {
		T_REQUIRE(madvise(buf, LEN, MADV_DONTNEED) == 0);
		memset(buf, 3, LEN);
	} else {
		replace(buf);
	}
	regcache_get_stats(c, &before);
	T_REQUIRE(regcache_get(c, buf, LEN, 0, &r) == 0);
	regcache_get_stats(c, &after);
	if (after.hits != before.hits) {
		fprintf(stderr, "%s: a hit on the old pages\n", what);
		t_failures++;
	}
	if (!t_registrar_same_pages(&t, r, buf)) {
		fprintf(stderr, "%s: the region pins another page\n", what);
		t_failures++;
	}
	T_CHECK(t_dma_visible(&t.ring, r, buf, LEN, 5));
	regcache_put(c, r);
}

static int worker(void)
{
	struct regcache_region *r;
	struct regcache *c;
	char *buf = t_map(LEN), *other = t_map(LEN), *moved = t_map(LEN);
	char *dest;
	int release, status;
	pid_t holder;

	memset(buf, 1, LEN);
	memset(other, 1, LEN);
	memset(moved, 1, LEN);
	if (!t_pfn(buf)) {
		printf("SKIP: /proc/self/pagemap shows no frame numbers "
		       "(needs root)\n");
		return T_EXIT_SKIP;
	}
	t_monitor_only("userfaultfd");
	t_registrar_init(&t, 64);
	c = t_registrar_cache(&t, 0, 0, 0);
	t_monitor_require();
	/* The buffers' VMAs registered with the monitor's userfaultfd. */
	seen(c, other, false, "before the fork");
	T_REQUIRE(regcache_get(c, moved, LEN, 0, &r) == 0);
	regcache_put(c, r);
	holder = fork_holder(&release);
	step(1);
	seen(c, buf, false, "munmap + mmap while a child holds the fd");
	step(2);
	seen(c, buf, true, "madvise while a child holds the fd");
	step(3);
	/* The registration moves with the VMA, away from every range the
	 * monitor recorded: into a hole between two inaccessible pages,
	 * where it merges with nothing. */
	dest = mmap(NULL, 3 * LEN, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
		    -1, 0);
	T_REQUIRE(dest != MAP_FAILED);
	dest += LEN;
	T_REQUIRE(mremap(moved, LEN, LEN, MREMAP_MAYMOVE | MREMAP_FIXED,
			 dest) == dest);
	step(4);
	regcache_destroy(c);
	step(5);
	T_REQUIRE(madvise(buf, LEN, MADV_DONTNEED) == 0);
	step(6);
	T_REQUIRE(munmap(other, LEN) == 0);
	T_REQUIRE(munmap(buf, LEN) == 0);
	step(7);
	T_REQUIRE(munmap(dest - LEN, 3 * LEN) == 0);
	step(8);
	close(release);
	T_REQUIRE(waitpid(holder, &status, 0) == holder);
	step(STEPS);
	t_registrar_fini(&t);
	return t_exit_status();
}

/* The hazard itself, with no regcache: munmap of memory registered with a
 * userfaultfd that a child keeps open and nobody reads. */
static int control_worker(void)
{
	struct uffdio_api api = {
		.api = UFFD_API,
		.features = UFFD_FEATURE_EVENT_UNMAP,
	};
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	char *p = t_map(LEN);
	int fd, release;

	fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	T_REQUIRE(fd >= 0);
	T_REQUIRE(ioctl(fd, UFFDIO_API, &api) == 0);
	reg.range.start = (uintptr_t)p;
	reg.range.len = LEN;
	T_REQUIRE(ioctl(fd, UFFDIO_REGISTER, &reg) == 0);
	fork_holder(&release);
	close(fd);
	step(CONTROL_START);
	step(CONTROL_MUNMAP);
	T_REQUIRE(munmap(p, LEN) == 0);
	step(CONTROL_DONE);
	close(release);
	return 0;
}

/*
 * Run @fn in a worker process under a watchdog of @bound_ms. Returns the
 * worker's exit status, or -1 when it hung; *@last is the last step it
 * reported.
 */
static int watch(int (*fn)(void), const char *const *names, int bound_ms,
		 int *last)
{
	struct timespec t0, now;
	int fds[2], status;
	pid_t pid;

	T_REQUIRE(pipe(fds) == 0);
	fflush(stdout);
	pid = fork();
	T_REQUIRE(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		progress = fds[1];
		_exit(fn());
	}
	close(fds[1]);
	*last = 0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd pfd = { .fd = fds[0], .events = POLLIN };
		unsigned char b;
		long left;

		clock_gettime(CLOCK_MONOTONIC, &now);
		left = bound_ms - ((now.tv_sec - t0.tv_sec) * 1000 +
				   (now.tv_nsec - t0.tv_nsec) / 1000000);
		if (left <= 0 || poll(&pfd, 1, (int)left) == 0) {
			kill(pid, SIGKILL);
			T_REQUIRE(waitpid(pid, &status, 0) == pid);
			close(fds[0]);
			return -1;
		}
		if (read(fds[0], &b, 1) != 1)
			break;		/* EOF: the worker is done */
		*last = b;
	}
	close(fds[0]);
	T_REQUIRE(waitpid(pid, &status, 0) == pid);
	if (WIFSIGNALED(status)) {
		fprintf(stderr, "worker killed by signal %d after \"%s\"\n",
			WTERMSIG(status), names[*last]);
		return T_EXIT_FAIL;
	}
	return WEXITSTATUS(status);
}

int main(void)
{
	int ret, last;

	ret = watch(worker, step_name, BOUND_MS, &last);
	if (ret == T_EXIT_SKIP)
		return T_EXIT_SKIP;
	if (ret < 0) {
		fprintf(stderr, "hang: no progress within %d ms after \"%s\"\n",
			BOUND_MS, step_name[last]);
		return T_EXIT_FAIL;
	}
	if (ret == 0 && last != STEPS) {
		fprintf(stderr, "worker exited 0 after \"%s\" only\n",
			step_name[last]);
		ret = T_EXIT_FAIL;
	}
	if (ret == 0)
		printf("ok: a child holding the userfaultfd made nothing hang "
		       "(munmap, madvise, mremap, destroy, munmap and madvise "
		       "after stop)\n");

	/* The watchdog can see a hang: the hazard, made on purpose. */
	if (watch(control_worker, control_step_name, CONTROL_MS,
		  &last) >= 0 ||
	    last != CONTROL_MUNMAP) {
		fprintf(stderr, "negative control: munmap of memory "
			"registered with a userfaultfd nobody reads did not "
			"hang (last step \"%s\")\n", control_step_name[last]);
		ret = T_EXIT_FAIL;
	} else {
		printf("ok: negative control: munmap under an unread "
		       "userfaultfd held by a child hangs, and is seen\n");
	}
	return ret;
}
