/* SPDX-License-Identifier: MIT */
/*
 * What the libFuzzer targets (tests/fuzz-*.c) share. FAIL prints its
 * message under the target's name, FUZZ_NAME, and aborts: libFuzzer then
 * keeps the input as a crash. An input is read a byte at a time; past its
 * end every byte is 0, so that any input is a whole sequence.
 */
#ifndef T_FUZZ_H
#define T_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define FAIL(...)                                                            \
	do {                                                                 \
		fprintf(stderr, FUZZ_NAME ": " __VA_ARGS__);                 \
		fprintf(stderr, "\n");                                       \
		abort();                                                     \
	} while (0)

struct input {
	const uint8_t *p;
	size_t n;
};

static inline unsigned next(struct input *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

#endif
