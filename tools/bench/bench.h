/* SPDX-License-Identifier: MIT */
/*
 * regcache-bench's parts: bench.c (rounds of child processes, medians,
 * tables, JSON) and bench_groups.c (what a child measures).
 */
#ifndef TOOLS_BENCH_H
#define TOOLS_BENCH_H

#include <stdbool.h>

/* What a child reports to the parent, one record per figure. */
struct fig {
	char key[40];	/* stable name for --json */
	char who[24];	/* regcache, ucx, bpf, userfaultfd, baseline */
	double value;
	char unit[8];
};

struct bench_opt {
	int reps;
	double scale;
	bool json;
	const char *only;
};
extern struct bench_opt bench_opt;

enum group { G_HITS, G_SCALE, G_MISS, G_MONITOR };

#define MAX_REPS 64

/* bench_groups.c: run group @g for @who ("regcache", "ucx", "baseline",
 * "bpf", "userfaultfd") in this child process; figures go to @fd. */
void bench_child(enum group g, const char *who, int fd)
	__attribute__((noreturn));

#endif
