/* SPDX-License-Identifier: MIT */
/*
 * The library's one clock: CLOCK_MONOTONIC through the vDSO (no lock, no
 * allocation, so safe in the monitor's thread and under its lock), as
 * milliseconds for logs and as deadlines for timed waits.
 */
#ifndef RC_BASE_CLOCK_H
#define RC_BASE_CLOCK_H

#include <time.h>

#define RC_NSEC_PER_SEC 1000000000L

/* Now on CLOCK_MONOTONIC, in milliseconds: for durations in log lines. */
static inline double rc_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Now on CLOCK_MONOTONIC, in nanoseconds. */
static inline long long rc_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * (long long)RC_NSEC_PER_SEC + ts.tv_nsec;
}

/* @ms (>= 0) milliseconds from now on @clock: CLOCK_MONOTONIC, or
 * CLOCK_REALTIME for pthread_cond_timedwait() on a default condvar. */
static inline struct timespec rc_deadline_ms(clockid_t clock, long ms)
{
	struct timespec t;

	clock_gettime(clock, &t);
	t.tv_sec += ms / 1000;
	t.tv_nsec += (ms % 1000) * 1000000L;
	if (t.tv_nsec >= RC_NSEC_PER_SEC) {
		t.tv_sec++;
		t.tv_nsec -= RC_NSEC_PER_SEC;
	}
	return t;
}

/* Time left until the CLOCK_MONOTONIC deadline @end, never negative. */
static inline struct timespec rc_time_left(const struct timespec *end)
{
	struct timespec now, left;

	clock_gettime(CLOCK_MONOTONIC, &now);
	left.tv_sec = end->tv_sec - now.tv_sec;
	left.tv_nsec = end->tv_nsec - now.tv_nsec;
	if (left.tv_nsec < 0) {
		left.tv_sec--;
		left.tv_nsec += RC_NSEC_PER_SEC;
	}
	if (left.tv_sec < 0)
		left = (struct timespec){ 0, 0 };
	return left;
}

/* Whole milliseconds until the CLOCK_MONOTONIC deadline @end, rounded up
 * (a poll() timeout that never wakes early); 0 once it has passed. */
static inline int rc_ms_until(const struct timespec *end)
{
	struct timespec left = rc_time_left(end);

	if (!left.tv_sec && !left.tv_nsec)
		return 0;
	return (int)(left.tv_sec * 1000 + left.tv_nsec / 1000000) + 1;
}

#endif /* RC_BASE_CLOCK_H */
