/*
 * A test that crashes says where, before it dies of it: CTest shows only
 * "SEGFAULT", and a crash under emulation may not come back. The report is
 * the signal, the faulting address, the thread and its stack (offsets in
 * the executable and the libraries, for addr2line). Sanitizer builds have
 * their own report and keep it.
 */
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "helpers.h"

#ifndef REGCACHE_SANITIZE
static void crash_report(int sig, siginfo_t *si, void *ucontext)
{
	void *frames[64];
	char line[200];
	int len, n;

	(void)ucontext;
	len = snprintf(line, sizeof(line), "CRASH: signal %d (%s), address "
		       "%p, si_code %d, thread %ld; its stack:\n", sig,
		       sigabbrev_np(sig) ? sigabbrev_np(sig) : "?", si->si_addr,
		       si->si_code, (long)syscall(SYS_gettid));
	if (write(2, line, (size_t)len) < 0)
		return;
	n = backtrace(frames, 64);
	backtrace_symbols_fd(frames, n, 2);
	/* SA_RESETHAND restored the default: returning faults again and
	 * the process dies of the signal, as it would have. */
}
#endif

void t_crash_report_install(void)
{
#ifndef REGCACHE_SANITIZE
	static char altstack[65536];
	const int sigs[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE };
	struct sigaction sa = { .sa_sigaction = crash_report,
				.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_ONSTACK };
	stack_t ss = { .ss_sp = altstack, .ss_size = sizeof(altstack) };
	void *frame;

	/* The first backtrace() loads libgcc: not from a signal handler. */
	backtrace(&frame, 1);
	sigaltstack(&ss, NULL);	/* the main thread's overflow too */
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
#endif
}
