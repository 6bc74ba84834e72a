/*
 * Description: eBPF monitor: how the syscall stages attach, seen in the
 * programs the process holds, each mode in a child of its own:
 * REGCACHE_BPF_ATTACH=syscalls holds rc_sys_enter and rc_sys_exit and no
 * fentry program; =fentry holds fentry/fexit programs and no syscall
 * tracepoint where this test's own probe can attach a fentry program, and
 * gives no bpf monitor where it cannot; auto (unset) takes fentry where it
 * attaches and falls back to the tracepoints where it does not (the
 * fallback, on a kernel that refuses fentry); an unknown value gives no
 * bpf monitor. In every mode that runs, a munmap + mmap under a cached
 * region is caught (DMA-checked, with the negative control).
 */
#include <sys/mman.h>
#include <sys/wait.h>

#include <bpf/btf.h>

#include "bpf-held-progs.h"

#define LEN 16384

enum held { NO_MONITOR, HOLDS_SYSCALLS, HOLDS_FENTRY, HOLDS_MIXED };

/* Does this kernel load and attach a fentry program? Written apart from
 * the library's probe (bpf_kernel.c) on purpose. */
static bool fentry_attaches(char *why, size_t len)
{
	struct bpf_insn insns[2] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	struct btf *vmlinux = btf__load_vmlinux_btf();
	int id, fd, link;

	T_REQUIRE(vmlinux);
	id = btf__find_by_name_kind(vmlinux, "__x64_sys_munmap",
				    BTF_KIND_FUNC);
	btf__free(vmlinux);
	T_REQUIRE(id > 0);
	LIBBPF_OPTS(bpf_prog_load_opts, opts,
		    .expected_attach_type = BPF_TRACE_FENTRY,
		    .attach_btf_id = id);
	fd = bpf_prog_load(BPF_PROG_TYPE_TRACING, "t_fentry", "GPL", insns, 2,
			   &opts);
	if (fd < 0) {
		snprintf(why, len, "load: %s", strerror(errno));
		return false;
	}
	link = bpf_raw_tracepoint_open(NULL, fd);
	if (link < 0)
		snprintf(why, len, "attach: %s", strerror(errno));
	close(fd);
	if (link < 0)
		return false;
	close(link);
	return true;
}

/* In a child: REGCACHE_BPF_ATTACH=@mode (NULL: unset), then what the
 * process holds; exits with enum held, or 100 + failures. */
static int run_mode(void *arg)
{
	const char *mode = arg;
	struct io_uring ring;
	struct regcache *c;
	struct t_bpf_held h;
	struct t_case k;
	char *buf;

	if (mode)
		setenv("REGCACHE_BPF_ATTACH", mode, 1);
	else
		unsetenv("REGCACHE_BPF_ATTACH");
	t_monitor_only("bpf");
	t_ring_init(&ring);
	c = t_uring_cache(&ring, 0, 0, 0);
	if (!t_monitor_is("bpf"))
		exit(NO_MONITOR);
	t_bpf_held(&h);
	buf = t_map(LEN);
	t_case_begin(&k, &ring, c, buf, LEN);
	t_remap(buf, LEN);
	t_case_end(&k, mode ? mode : "auto", true);
	if (t_failures)
		exit(100 + t_failures);
	printf("  %-8s holds %u sys_enter/sys_exit and %u fentry/fexit "
	       "programs\n", mode ? mode : "(unset)", h.syscall_tp, h.fentry);
	if (h.syscall_tp == 2 && !h.fentry)
		exit(HOLDS_SYSCALLS);
	if (!h.syscall_tp && h.fentry)
		exit(HOLDS_FENTRY);
	exit(HOLDS_MIXED);
}

static int in_child(const char *mode)
{
	int status = t_fork_wait(run_mode, (void *)mode, true);

	return WIFEXITED(status) ? WEXITSTATUS(status) : 200;
}

int main(void)
{
	char why[128] = "";
	bool fentry;
	int got;

	t_monitor_skip_unavailable("bpf");
	fentry = fentry_attaches(why, sizeof(why));
	printf("this kernel %s fentry programs%s%s%s\n",
	       fentry ? "attaches" : "refuses", why[0] ? " (" : "", why,
	       why[0] ? ")" : "");
	T_EXPECT_EQ(HOLDS_SYSCALLS, in_child("syscalls"));
	T_EXPECT_EQ(fentry ? HOLDS_FENTRY : NO_MONITOR, in_child("fentry"));
	got = in_child(NULL);
	T_EXPECT_EQ(fentry ? HOLDS_FENTRY : HOLDS_SYSCALLS, got);
	T_EXPECT_EQ(fentry ? HOLDS_FENTRY : HOLDS_SYSCALLS, in_child("auto"));
	T_EXPECT_EQ(NO_MONITOR, in_child("kprobes"));
	if (!t_failures)
		printf("ok: auto takes %s\n", fentry ? "fentry" :
		       "sys_enter/sys_exit (the fallback)");
	return t_exit_status();
}
