/*
 * loop_guard.c - what the event loop's thread must not do (loop_guard.h):
 * its callbacks timed, its waits checked.
 *
 * The state is per thread (a callback's depth and start) and, for what
 * /metrics reads, process-wide atomics: the offload workers never serve
 * the loop, so only the loop's thread writes them, but a reader may be
 * anywhere. A violation is logged once per kind of wait (the what string's
 * address), so a path that blocks on every run does not flood the log.
 *
 * What it does not do: make anything non-blocking (the modules that wait
 * do that), or time work the loop does outside the marked callbacks
 * (libwebsockets' own, which is bounded).
 */
#include "loop_guard.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "log.h"

static _Thread_local unsigned servicing;
static _Thread_local unsigned depth;
static _Thread_local uint64_t began_us;
static _Atomic uint64_t stall_max_us;
static _Atomic uint64_t blocking_waits;

/* The last few kinds of wait already logged (their what pointers). */
#define LOGGED_KINDS 8
static const char *logged[LOGGED_KINDS];

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

void mcpx_loop_guard_service_begin(void)
{
	servicing++;
}

void mcpx_loop_guard_service_end(void)
{
	if (servicing)
		servicing--;
}

/* A callback counts only inside the loop's service: the same callbacks run
 * synchronously at teardown (a watch closed by an unwatch off the loop, a
 * context destroyed), where waiting costs nobody. servicing does not change
 * while a callback runs, so begin and end agree on whether it counted. */
void mcpx_loop_guard_begin(void)
{
	if (!servicing)
		return;
	if (depth++ == 0)
		began_us = now_us();
}

void mcpx_loop_guard_end(void)
{
	uint64_t took, max;

	if (!servicing || !depth || --depth)
		return;
	took = now_us() - began_us;
	max = atomic_load(&stall_max_us);
	while (took > max && !atomic_compare_exchange_weak(&stall_max_us, &max, took))
		;
}

bool mcpx_loop_guard_serving(void)
{
	return depth > 0;
}

/* A wait that blocks the loop: counted, logged (once per kind), and fatal
 * in a debug build, where the tests run. */
static void violation(const char *what)
{
	size_t i;

	atomic_fetch_add(&blocking_waits, 1);
	for (i = 0; i < LOGGED_KINDS && logged[i] && logged[i] != what; i++)
		;
	if (i == LOGGED_KINDS || !logged[i]) {
		if (i < LOGGED_KINDS)
			logged[i] = what;
		mcpx_error("the event loop's thread waited for %s (every client and run waited "
		           "with it)",
		           what);
	}
#ifndef NDEBUG
	abort();
#endif
}

int mcpx_wait_poll(struct pollfd *fds, nfds_t n, int timeout_ms, const char *what)
{
	int r;

	do
		r = poll(fds, n, 0);
	while (r < 0 && errno == EINTR);
	if (r != 0 || timeout_ms == 0)
		return r;
	if (depth)
		violation(what);
	do
		r = poll(fds, n, timeout_ms);
	while (r < 0 && errno == EINTR);
	return r;
}

void mcpx_wait_blocks(const char *what)
{
	if (depth)
		violation(what);
}

void mcpx_wait_sleep(long ns, const char *what)
{
	struct timespec ts = {0, ns};

	if (depth)
		violation(what);
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

uint64_t mcpx_loop_stall_max_us_take(void)
{
	return atomic_exchange(&stall_max_us, 0);
}

uint64_t mcpx_loop_blocking_waits(void)
{
	return atomic_load(&blocking_waits);
}
