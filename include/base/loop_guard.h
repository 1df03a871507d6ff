/*
 * loop_guard.h - what the event loop's thread must not do: wait.
 *
 * The server has one thread serving one loop (loop.h); while one of its
 * callbacks runs, every client, run and timer waits. This module keeps two
 * facts about that:
 *
 *  - how long the longest callback took (the loop's longest stall), since
 *    the last time it was read: /metrics shows it
 *    (mcp_exec_loop_stall_max_seconds) and bench/loop_stall.sh reads it;
 *  - every wait a module makes through mcpx_wait_poll or mcpx_wait_sleep
 *    (the fork server's answers, a leader's exit, a cgroup's removal).
 *    One that would block while the calling thread serves the loop is
 *    counted (mcp_exec_loop_blocking_waits_total), logged with what it
 *    waited for, and, in a debug build (no NDEBUG: the sanitizer build the
 *    tests run), aborts the process, so that a test which drives such a
 *    path fails. A wait that finds its descriptor ready at once is no wait.
 *
 * Waiting stays allowed where it costs nobody: on other threads (the
 * offload workers), at start-up before the loop runs, at teardown after
 * it, and in unit tests that call a module's synchronous API outside the
 * loop's callbacks. loop_lws.c and the HTTP server mark their callbacks
 * with mcpx_loop_guard_begin/_end, and loop_lws.c marks its service, so a
 * callback that teardown runs synchronously (a watch's close, a context's
 * destruction) is off the loop, as its caller is.
 *
 * Not every wait in the tree goes through here yet: docs/architecture.md
 * ("One thread, one loop") lists the ones that remain on the loop.
 */
#ifndef MCPX_LOOP_GUARD_H
#define MCPX_LOOP_GUARD_H

#include <poll.h>
#include <stdbool.h>
#include <stdint.h>

/* The calling thread enters (or leaves) the loop's service (loop_lws.c
 * around lws_service). Outside it no callback counts as serving the loop:
 * teardown closes watches and connections through the same callbacks. */
void mcpx_loop_guard_service_begin(void);
void mcpx_loop_guard_service_end(void);

/* A callback of the loop starts (or ends) on the calling thread. They
 * nest: only the outermost is timed. */
void mcpx_loop_guard_begin(void);
void mcpx_loop_guard_end(void);

/* True while the calling thread runs a callback of the loop. */
bool mcpx_loop_guard_serving(void);

/* poll(2) on fds for up to timeout_ms (-1: no bound), EINTR retried;
 * returns what poll returns. what names the wait in the log line of a
 * violation ("an answer of the zygote"). */
int mcpx_wait_poll(struct pollfd *fds, nfds_t n, int timeout_ms, const char *what);

/* The caller is about to block in a call with nothing to poll (waitid
 * without WNOHANG): checked as a wait would be. */
void mcpx_wait_blocks(const char *what);

/* Sleeps for ns nanoseconds (under a second). */
void mcpx_wait_sleep(long ns, const char *what);

/* The longest callback since the last call, in microseconds; the next
 * call measures from now on. */
uint64_t mcpx_loop_stall_max_us_take(void);

/* Waits that blocked the loop's thread since start-up. */
uint64_t mcpx_loop_blocking_waits(void);

#endif
