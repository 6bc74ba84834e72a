/* SPDX-License-Identifier: MIT */
/* The median of @n figures (sorts @v in place; 0 for none): what every
 * benchmark and timing test of the project reports, not the mean, because
 * these machines are shared and one stalled round must not move it. */
#ifndef TOOLS_MEDIAN_H
#define TOOLS_MEDIAN_H

#include <stddef.h>
#include <stdlib.h>

static int median_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static inline double median_of(double *v, size_t n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), median_cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#endif
