/* SPDX-License-Identifier: MIT */
/* What the bridge libraries (ucx.c, fabric.c) share: visibility and the
 * one-line messages they print. They use only regcache's public API, and
 * read their settings through their own hidden copy of the environment
 * table (env.c, with log.c for its warnings; bridge.cmake). */
#ifndef RC_BRIDGE_H
#define RC_BRIDGE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/env.h"
#include "../base/log.h"

#define rc_bridge_hidden __attribute__((visibility("hidden")))
#define rc_bridge_export __attribute__((visibility("default")))
#define rc_bridge_unlikely(x) __builtin_expect(!!(x), 0)

/* Always printed: the bridge changed nothing, or could not. */
#define rc_bridge_log(...)                                                   \
	do {                                                                 \
		fprintf(stderr, __VA_ARGS__);                                \
		fputc('\n', stderr);                                         \
	} while (0)

/* Printed with REGCACHE_LOG=info or debug: what the bridge set up. */
#define rc_bridge_info(...)                                                  \
	do {                                                                 \
		if (rc_env_choice(RC_ENV_LOG) >= RC_LOG_INFO)                \
			rc_bridge_log(__VA_ARGS__);                          \
	} while (0)

void rc_ucx_resolve(void) rc_bridge_hidden;

/*
 * The handle of the loaded object (the main program included) that itself
 * defines @sym, with its address in *@addr; NULL if none. Never loads
 * anything (dlopen(RTLD_NOLOAD)), finds an object dlopened RTLD_LOCAL (as
 * Open MPI loads its components) and never returns the bridge's own
 * interposer. Thread-safe.
 */
void *rc_bridge_find_definer(const char *sym, void **addr) rc_bridge_hidden;

/*
 * Whether the loaded object behind @handle binds @sym at run time (a
 * relocation names it), i.e. its calls can reach an interposer; false
 * when it does not, or when its dynamic section cannot be read.
 */
bool rc_bridge_imports(void *handle, const char *sym) rc_bridge_hidden;

/* The bounds of the executable segment of the object behind @handle. */
bool rc_bridge_text(void *handle, uintptr_t *start, uintptr_t *end) rc_bridge_hidden;

/*
 * An interposer: saves the argument registers, calls @hook with the first
 * three arguments, restores them and jumps to *@real, so it serves any
 * signature (x86_64 SysV). @hook may not run when @real is NULL: it must
 * set it or abort. rc_own_NAME is the same code under a hidden name: the
 * bridge's own address, whatever the process's scope resolves NAME to.
 */
#if defined(__x86_64__)
#define RC_BRIDGE_TRAMPOLINE(name, hook, real)                               \
	__asm__(".text\n"                                                    \
		".globl " #name "\n"                                         \
		".type " #name ", @function\n"                               \
		".globl rc_own_" #name "\n"                                  \
		".hidden rc_own_" #name "\n"                                 \
		"rc_own_" #name ":\n"                                        \
		#name ":\n"                                                  \
		"	endbr64\n"                                           \
		"	push %rdi\n	push %rsi\n	push %rdx\n"         \
		"	push %rcx\n	push %r8\n	push %r9\n"          \
		"	sub $8, %rsp\n" /* 16-byte alignment for the call */ \
		"	call " #hook "\n"                                    \
		"	add $8, %rsp\n"                                      \
		"	pop %r9\n	pop %r8\n	pop %rcx\n"          \
		"	pop %rdx\n	pop %rsi\n	pop %rdi\n"          \
		"	jmp *" #real "(%rip)\n"                              \
		".size " #name ", .-" #name "\n")
#else
#error "the bridges' interposers are written for x86_64"
#endif

#endif
