/* SPDX-License-Identifier: MIT */
/*
 * What the running kernel offers the eBPF programs, fitted before the load.
 * The programs are compiled once, against the build machine's BTF; a
 * tracepoint that another kernel names differently is pointed at that
 * name, and the syscall stages attach by fentry or by the sys_enter and
 * sys_exit tracepoints. Shared by the in-process monitor (bpf.c) and the
 * node service (src/daemon/bpf_set.c).
 */
#ifndef RC_MONITOR_BPF_KERNEL_H
#define RC_MONITOR_BPF_KERNEL_H

#include <bpf/libbpf.h>
#include <stdbool.h>
#include <stddef.h>

/* How stages 1 and 3 (docs/monitor-bpf.md) are attached. */
enum rc_bpf_attach {
	RC_BPF_ATTACH_AUTO,	/* fentry where the kernel allows it */
	RC_BPF_ATTACH_FENTRY,	/* fentry/fexit on the decoded calls alone */
	RC_BPF_ATTACH_SYSCALLS,	/* sys_enter/sys_exit: every syscall */
};

/* What rc_bpf_fit() chose. */
struct rc_bpf_fit {
	enum rc_bpf_attach mode;	/* FENTRY or SYSCALLS */
	unsigned nfentry;	/* fentry + fexit programs left to load */
	bool uring;		/* the io_uring programs load */
	char why[400];		/* the mode, and why not fentry */
	char uring_why[128];	/* why not io_uring, when !uring */
};

/**
 * rc_bpf_attach_name() - the REGCACHE_BPF_ATTACH spelling of a mode
 * @mode: a mode
 *
 * Return: "auto", "fentry" or "syscalls".
 */
const char *rc_bpf_attach_name(enum rc_bpf_attach mode);

/**
 * rc_bpf_attach_wanted() - the mode $REGCACHE_BPF_ATTACH asks for
 * @want: filled with the mode (auto when the variable is unset or empty)
 *
 * Return: 0, or -EINVAL for any other value than auto, fentry, syscalls
 * (@want is then auto; the caller logs it).
 */
int rc_bpf_attach_wanted(enum rc_bpf_attach *want);

/**
 * rc_bpf_fit() - fit a program set to this kernel before it is loaded
 * @obj:    the opened object (rc_monitor or rc_node)
 * @submit: its tp_btf program written for io_uring_submit_req
 * @uring_complete: its io_uring_complete program
 * @want:   the mode asked for
 * @fit:    filled with what was chosen and why
 *
 * io_uring: Linux 6.2 renamed io_uring_submit_sqe(req, force_nonblock) to
 * io_uring_submit_req(req); both take the request first, which is all the
 * program reads; before 5.5 neither exists (nor does IORING_OP_MADVISE),
 * and both io_uring programs are left out.
 *
 * Syscall stages: with @want auto or fentry, every fentry/fexit program's
 * target must be a function in the kernel's BTF (the __ia32_ ones are left
 * out when the kernel has no i386 entry at all), and a probe program must
 * load and attach to __x64_sys_munmap; then rc_sys_enter and rc_sys_exit
 * are left out. Otherwise (or with @want syscalls) the fentry and fexit
 * programs are left out, and @fit->why says why.
 *
 * A caller whose fentry load, attach or self-test fails after all opens
 * the object again and fits it with @want syscalls (unless fentry was
 * asked for), saying why.
 *
 * Return: 0; -EOPNOTSUPP when @want is fentry and the kernel refuses it
 * (@fit->why says why); -errno when the kernel's BTF cannot be read.
 * Context: the probe attaches a program that does nothing for a moment.
 */
int rc_bpf_fit(struct bpf_object *obj, struct bpf_program *submit,
	       struct bpf_program *uring_complete, enum rc_bpf_attach want,
	       struct rc_bpf_fit *fit);

#endif
