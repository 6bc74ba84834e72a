/* SPDX-License-Identifier: MIT */
/*
 * tools/microbench/mpi-bench.c includes "../median.h", which is this file;
 * the medians themselves are common/median.h.
 */
#include "common/median.h"
