/* SPDX-License-Identifier: MIT */
/*
 * Description: regcache-info names the monitor that a process of the same
 * user gets from regcache_create(), and says why the others are
 * unavailable. Run as root, then in a child dropped to uid 65534 with no
 * capabilities and an 8 MiB RLIMIT_MEMLOCK, the way an ordinary user runs
 * it. The expected monitor is learned by creating a cache in the same
 * process the tool is started from. As the ordinary user the bpf monitor
 * must be unavailable with the reason "no CAP_BPF"; as root that reason
 * must be absent. A third run, as root under a seccomp filter that refuses
 * bpf() and userfaultfd() with EPERM (as container profiles do), must blame
 * seccomp and not capabilities: the negative control that proves the tool
 * does not give "no CAP_BPF" whenever bpf is unavailable.
 * REGCACHE_SOCKET names a node-service socket that nobody listens on, in a
 * directory only root may enter: root must be told the connection is
 * refused, the ordinary user that permission is denied.
 *
 * Usage: info-report PATH-TO-regcache-info text|json
 *   text: the monitor and the reasons in the text output;
 *   json: --json is valid JSON (checked by a small parser here) and says
 *         the same as the text output: the same version (the header's),
 *         monitor, verdict and reasons for each monitor; and the
 *         pinned-memory budget is the cache's default.
 */
#include <errno.h>
#include <grp.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"
#include "reachable.h"

#define OUT_MAX (64 * 1024)
#define MAX_MON 8
#define MAX_WHY 8
#define TEXT 512

static const char *tool;

/* ---------------------------------------------------------------------
 * Running the tool
 * ------------------------------------------------------------------- */

/* Run the tool with @arg (or none), return its stdout in @out. */
static void run_tool(const char *arg, char *out)
{
	size_t len = 0;
	int pfd[2], status;
	ssize_t n;
	pid_t pid;

	T_REQUIRE(pipe(pfd) == 0);
	pid = fork();
	T_REQUIRE(pid >= 0);
	if (pid == 0) {
		dup2(pfd[1], STDOUT_FILENO);
		close(pfd[0]);
		close(pfd[1]);
		execl(tool, tool, arg, (char *)NULL);
		fprintf(stderr, "exec %s: %s\n", tool, strerror(errno));
		_exit(127);
	}
	close(pfd[1]);
	while ((n = read(pfd[0], out + len, OUT_MAX - 1 - len)) > 0)
		len += (size_t)n;
	close(pfd[0]);
	out[len] = 0;
	T_REQUIRE(waitpid(pid, &status, 0) == pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "%s %s: exit status 0x%x\n", tool,
			arg ? arg : "", status);
		t_failures++;
	}
}

/* The monitor that a cache created in this process gets. */
static const char *expected_monitor(void)
{
	static char name[32];
	struct io_uring ring;
	struct regcache *cache;

	t_ring_init(&ring);
	cache = t_uring_cache(&ring, 0, 0, 0);
	snprintf(name, sizeof(name), "%s", regcache_monitor_name());
	regcache_destroy(cache);
	io_uring_queue_exit(&ring);
	return name;
}

/* ---------------------------------------------------------------------
 * The text output
 * ------------------------------------------------------------------- */

struct mon {
	char name[32];
	bool available;
	int nwhy;
	char why[MAX_WHY][TEXT];
};

struct report {
	char version[32];
	char monitor[32];
	int nmon;
	struct mon mon[MAX_MON];
	long long default_max_bytes;	/* -1: none */
	bool cap_bpf;
};

static void copy_line(char *out, size_t len, const char *s)
{
	size_t n = strcspn(s, "\n");

	if (n >= len)
		n = len - 1;
	memcpy(out, s, n);
	out[n] = 0;
}

static void parse_text(const char *out, struct report *r)
{
	const char *p = strstr(out, "\nmonitor:");
	const char *sec = strstr(out, "\nmonitors, in the order");

	memset(r, 0, sizeof(*r));
	T_REQUIRE(p && sec);
	T_REQUIRE(sscanf(out, "regcache %31s", r->version) == 1);
	sscanf(p + strlen("\nmonitor:"), "%31s", r->monitor);
	for (p = strchr(sec + 1, '\n'); p && p[1] == ' '; p = strchr(p + 1, '\n')) {
		const char *line = p + 1;

		if (!strncmp(line, "      why: ", 11)) {
			struct mon *m = &r->mon[r->nmon - 1];

			T_REQUIRE(r->nmon > 0 && m->nwhy < MAX_WHY);
			copy_line(m->why[m->nwhy++], TEXT, line + 11);
		} else if (strncmp(line, "      ", 6)) {
			struct mon *m = &r->mon[r->nmon++];
			char verdict[32];

			T_REQUIRE(r->nmon <= MAX_MON);
			T_REQUIRE(sscanf(line, "%31s %31s", m->name, verdict) == 2);
			m->available = !strcmp(verdict, "available");
		}
	}
}

static const struct mon *find_mon(const struct report *r, const char *name)
{
	for (int i = 0; i < r->nmon; i++)
		if (!strcmp(r->mon[i].name, name))
			return &r->mon[i];
	return NULL;
}

static bool says(const struct mon *m, const char *what)
{
	for (int i = 0; m && i < m->nwhy; i++)
		if (strstr(m->why[i], what))
			return true;
	return false;
}

/* The line of @out that starts with @start ends with @value. */
static bool line_says(const char *out, const char *start, const char *value)
{
	const char *p = strstr(out, start);
	size_t n = strlen(value), len;

	if (!p)
		return false;
	len = strcspn(p, "\n");
	return len >= n && !strncmp(p + len - n, value, n);
}

/* ---------------------------------------------------------------------
 * A small JSON reader: validates the whole document and looks members up
 * ------------------------------------------------------------------- */

static const char *j_ws(const char *p)
{
	while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
		p++;
	return p;
}

/* Past the string at @p (decoded into @out if not NULL), or NULL. */
static const char *j_string(const char *p, char *out, size_t len)
{
	size_t n = 0;

	if (*p++ != '"')
		return NULL;
	for (; *p != '"'; p++) {
		char c = *p;

		if (!*p || (unsigned char)*p < 0x20)
			return NULL;
		if (c == '\\') {
			p++;
			if (*p == 'u') {
				for (int i = 1; i <= 4; i++)
					if (!strchr("0123456789abcdefABCDEF",
						    p[i]) || !p[i])
						return NULL;
				c = '?';
				p += 4;
			} else if (*p && strchr("\"\\/bfnrt", *p)) {
				c = *p == 'n' ? '\n' : *p == 't' ? '\t' : *p;
			} else {
				return NULL;
			}
		}
		if (out && n + 1 < len)
			out[n++] = c;
	}
	if (out)
		out[n] = 0;
	return p + 1;
}

static const char *j_value(const char *p);

static const char *j_members(const char *p, char close, bool keys)
{
	p = j_ws(p + 1);
	if (*p == close)
		return p + 1;
	for (;;) {
		if (keys) {
			p = j_string(p, NULL, 0);
			if (!p)
				return NULL;
			p = j_ws(p);
			if (*p++ != ':')
				return NULL;
		}
		p = j_value(p);
		if (!p)
			return NULL;
		p = j_ws(p);
		if (*p == close)
			return p + 1;
		if (*p++ != ',')
			return NULL;
		p = j_ws(p);
	}
}

/* Past the value at @p, or NULL if it is not valid JSON. */
static const char *j_value(const char *p)
{
	p = j_ws(p);
	if (*p == '{')
		return j_members(p, '}', true);
	if (*p == '[')
		return j_members(p, ']', false);
	if (*p == '"')
		return j_string(p, NULL, 0);
	if (!strncmp(p, "true", 4))
		return p + 4;
	if (!strncmp(p, "false", 5))
		return p + 5;
	if (!strncmp(p, "null", 4))
		return p + 4;
	if (*p == '-' || (*p >= '0' && *p <= '9')) {
		char *end;

		strtod(p, &end);
		return end > p ? end : NULL;
	}
	return NULL;
}

/* The value of member @key of the object at @obj, or NULL. */
static const char *j_get(const char *obj, const char *key)
{
	char k[64];
	const char *p = j_ws(obj);

	if (*p != '{')
		return NULL;
	p = j_ws(p + 1);
	while (*p == '"') {
		p = j_ws(j_string(p, k, sizeof(k)));
		p = j_ws(p + 1);		/* ':' */
		if (!strcmp(k, key))
			return p;
		p = j_ws(j_value(p));
		if (*p != ',')
			return NULL;
		p = j_ws(p + 1);
	}
	return NULL;
}

/* Element @i of the array at @arr, or NULL. */
static const char *j_at(const char *arr, int i)
{
	const char *p = j_ws(arr);

	if (*p != '[')
		return NULL;
	p = j_ws(p + 1);
	if (*p == ']')
		return NULL;
	while (i--) {
		p = j_ws(j_value(p));
		if (*p != ',')
			return NULL;
		p = j_ws(p + 1);
	}
	return p;
}

static bool j_true(const char *v)
{
	return v && !strncmp(v, "true", 4);
}

static void parse_json(const char *out, struct report *r)
{
	const char *end = j_value(out), *mons, *v, *m;

	memset(r, 0, sizeof(*r));
	if (!end || *j_ws(end)) {
		fprintf(stderr, "--json is not valid JSON (at byte %ld):\n%s\n",
			end ? (long)(end - out) : -1L, out);
		t_failures++;
		return;
	}
	v = j_get(out, "version");
	T_REQUIRE(v && j_string(v, r->version, sizeof(r->version)));
	v = j_get(out, "monitor");
	T_REQUIRE(v && j_string(v, r->monitor, sizeof(r->monitor)));
	mons = j_get(out, "monitors");
	T_REQUIRE(mons);
	for (int i = 0; (m = j_at(mons, i)); i++) {
		struct mon *mon = &r->mon[r->nmon++];
		const char *why = j_get(m, "reasons"), *w;

		T_REQUIRE(r->nmon <= MAX_MON);
		T_REQUIRE(j_string(j_get(m, "name"), mon->name,
				   sizeof(mon->name)));
		mon->available = j_true(j_get(m, "available"));
		for (int k = 0; why && (w = j_at(why, k)); k++) {
			T_REQUIRE(mon->nwhy < MAX_WHY);
			T_REQUIRE(j_string(w, mon->why[mon->nwhy++], TEXT));
		}
	}
	v = j_get(j_get(out, "memlock"), "default_max_bytes");
	r->default_max_bytes = v && *v != 'n' ? strtoll(v, NULL, 10) : -1;
	r->cap_bpf = j_true(j_get(j_get(out, "capabilities"), "CAP_BPF"));
}

/* ---------------------------------------------------------------------
 * The checks
 * ------------------------------------------------------------------- */

enum who { ROOT, SECCOMP, USER };
static const char *const who_names[] = { "root", "root under seccomp",
					 "uid 65534" };

static void check(enum who who_id, bool json)
{
	static char text_out[OUT_MAX], json_out[OUT_MAX];
	static struct report text, js;
	const char *want = expected_monitor();
	const char *who = who_names[who_id];
	bool unprivileged = who_id == USER;
	const struct mon *bpf, *uffd, *regcached;

	run_tool(NULL, text_out);
	parse_text(text_out, &text);
	if (strcmp(text.monitor, want)) {
		fprintf(stderr, "%s: regcache-info names \"%s\", a cache got "
			"\"%s\":\n%s", who, text.monitor, want, text_out);
		t_failures++;
	}
	bpf = find_mon(&text, "bpf");
	T_REQUIRE(bpf);
	T_CHECK(find_mon(&text, want) && find_mon(&text, want)->available);
	if (unprivileged) {
		/* An ordinary user cannot load the tracing programs. */
		T_CHECK(strcmp(want, "bpf") != 0);
		T_CHECK(!bpf->available);
		if (!says(bpf, "no CAP_BPF")) {
			fprintf(stderr, "%s: no \"no CAP_BPF\" reason:\n%s",
				who, text_out);
			t_failures++;
		}
	} else {
		/* Root has CAP_BPF: that reason is never given. */
		T_CHECK(!says(bpf, "no CAP_BPF"));
	}
	regcached = find_mon(&text, "regcached");
	T_REQUIRE(regcached);
	if (!regcached->available)
		T_CHECK(says(regcached, unprivileged ? "Permission denied" :
						       "Connection refused"));
	if (who_id == SECCOMP) {
		/* bpf is unavailable for another reason, which is named. */
		uffd = find_mon(&text, "userfaultfd");
		T_CHECK(!bpf->available);
		T_CHECK(says(bpf, "bpf syscall is refused"));
		T_CHECK(says(bpf, "seccomp"));
		T_CHECK(line_says(text_out, "  seccomp ", "filter"));
		/* /dev/userfaultfd still serves root; if not, seccomp is
		 * blamed for the syscall. */
		T_CHECK(uffd && (uffd->available || says(uffd, "seccomp")));
		if (t_failures)
			fprintf(stderr, "%s:\n%s", who, text_out);
	}
	if (!json)
		return;

	run_tool("--json", json_out);
	parse_json(json_out, &js);
	if (t_failures)
		return;
	T_CHECK(!strcmp(js.monitor, text.monitor));
	T_CHECK(!strcmp(js.version, text.version));
#ifdef REGCACHE_VERSION_MAJOR
	{
		char want_version[32];

		snprintf(want_version, sizeof(want_version), "%d.%d.%d",
			 REGCACHE_VERSION_MAJOR, REGCACHE_VERSION_MINOR,
			 REGCACHE_VERSION_PATCH);
		T_CHECK(!strcmp(text.version, want_version));
	}
#endif
	T_EXPECT_EQ(text.nmon, js.nmon);
	for (int i = 0; i < text.nmon && i < js.nmon; i++) {
		const struct mon *a = &text.mon[i], *b = &js.mon[i];

		T_CHECK(!strcmp(a->name, b->name));
		T_EXPECT_EQ(a->available, b->available);
		T_EXPECT_EQ(a->nwhy, b->nwhy);
		for (int k = 0; k < a->nwhy && k < b->nwhy; k++)
			if (strcmp(a->why[k], b->why[k])) {
				fprintf(stderr, "%s: %s: text says \"%s\", "
					"json \"%s\"\n", who, a->name,
					a->why[k], b->why[k]);
				t_failures++;
			}
	}
	T_EXPECT_EQ(!unprivileged, js.cap_bpf);
	/* The cache's default budget: 3/4 of the 8 MiB limit for an
	 * ordinary user; root is not charged, and gets 1/4 of RAM. */
	if (unprivileged)
		T_EXPECT_EQ((8ll << 20) / 4 * 3, js.default_max_bytes);
	else
		T_CHECK(js.default_max_bytes != (8ll << 20) / 4 * 3);
}

static void drop_privileges(void);

/* Refuse bpf() and userfaultfd() with EPERM, as a container runtime's
 * default profile does, keeping every capability. */
static void enter_seccomp(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 4),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_bpf, 3, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_userfaultfd, 2, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };

	T_REQUIRE(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0);
	T_REQUIRE(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0);
}

/* Run check(@who) in a child set up as @who. */
static void in_child(enum who who, bool json)
{
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	T_REQUIRE(pid >= 0);
	if (pid == 0) {
		if (who == SECCOMP)
			enter_seccomp();
		else
			drop_privileges();
		check(who, json);
		exit(t_exit_status());
	}
	T_REQUIRE(waitpid(pid, &status, 0) == pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "the child as %s failed (0x%x)\n",
			who_names[who], status);
		t_failures++;
	}
}

/* Become uid/gid 65534 with no capabilities and the default 8 MiB
 * RLIMIT_MEMLOCK, as an ordinary user's process starts. */
static void drop_privileges(void)
{
	struct rlimit rl = { 8 << 20, 8 << 20 };
	char line[256];
	bool caps_zero = false;
	FILE *f;

	T_REQUIRE(reach_path_for_all(tool) == 0);
	T_REQUIRE(setrlimit(RLIMIT_MEMLOCK, &rl) == 0);
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	T_REQUIRE(setgroups(0, NULL) == 0);
	T_REQUIRE(setresgid(65534, 65534, 65534) == 0);
	/* Leaving uid 0 clears the permitted and effective sets. */
	T_REQUIRE(setresuid(65534, 65534, 65534) == 0);
	f = fopen("/proc/self/status", "r");
	T_REQUIRE(f);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "CapEff:", 7))
			caps_zero = strtoull(line + 7, NULL, 16) == 0;
	fclose(f);
	T_REQUIRE(caps_zero);
}

static char sock_dir[] = "/tmp/info-report-XXXXXX";
static char sock_path[sizeof(sock_dir) + 32];

/* A socket file nobody listens on (bound, then closed), in a directory of
 * mode 0700, named by REGCACHE_SOCKET. */
static void dead_socket(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	T_REQUIRE(mkdtemp(sock_dir));
	snprintf(sock_path, sizeof(sock_path), "%s/regcached.sock", sock_dir);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	T_REQUIRE(fd >= 0);
	T_REQUIRE(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	close(fd);
	setenv("REGCACHE_SOCKET", sock_path, 1);
}

int main(int argc, char **argv)
{
	bool json;

	if (argc != 3 || (strcmp(argv[2], "text") && strcmp(argv[2], "json"))) {
		fprintf(stderr, "usage: %s PATH-TO-regcache-info text|json\n",
			argv[0]);
		return T_EXIT_FAIL;
	}
	tool = argv[1];
	json = !strcmp(argv[2], "json");
	if (geteuid() != 0) {
		printf("SKIP: needs root, to compare root with a dropped "
		       "ordinary user\n");
		return T_EXIT_SKIP;
	}
	/* The automatic choice is under test, whatever the caller set. */
	unsetenv("REGCACHE_MONITOR");
	unsetenv("REGCACHE_MAX_BYTES");
	dead_socket();

	check(ROOT, json);
#ifdef __x86_64__
	in_child(SECCOMP, json);
#else
	printf("note: the seccomp run filters x86_64 syscall numbers only; "
	       "not run here\n");
#endif
	in_child(USER, json);
	unlink(sock_path);
	rmdir(sock_dir);
	return t_exit_status();
}
