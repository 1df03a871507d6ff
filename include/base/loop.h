/*
 * loop.h - the one event loop every module shares.
 *
 * The process has one thread and one loop (libwebsockets' service loop). This
 * interface lets the executor and the stdio transport watch file descriptors
 * and set timers without including libwebsockets; loop_lws.c implements it.
 *
 * Ownership: a watched fd belongs to the loop; mcpx_loop_unwatch() (or the
 * loop noticing a hang-up) closes it. The callback is told exactly once that
 * the watch ended (MCPX_EV_CLOSED), after which the watch struct may be freed.
 * To watch a descriptor someone else owns and closes (libcurl's sockets),
 * watch a dup() of it: readiness is a property of the open file, so the
 * duplicate reports what the original would.
 *
 * Interest: a new watch waits for readability. mcpx_loop_set_events changes
 * that to any mix of read and write (the egress broker drives libcurl, which
 * says per socket whether it waits to read, to write, or both). Both kinds
 * are level-triggered: while the interest is set and the fd is ready, the
 * callback is called again on each loop iteration.
 */
#ifndef MCPX_LOOP_H
#define MCPX_LOOP_H

#include <stdbool.h>
#include <stdint.h>

struct mcpx_loop;
struct lws_context;

enum {
	MCPX_EV_READ = 1,   /* fd is readable (read() it; 0 bytes = EOF) */
	MCPX_EV_CLOSED = 2, /* the watch ended; the fd is already closed */
	MCPX_EV_WRITE = 4,  /* fd is writable (only with write interest set) */
};

struct mcpx_watch;
typedef void (*mcpx_watch_fn)(struct mcpx_watch *w, int events);

struct mcpx_watch {
	int fd;
	mcpx_watch_fn fn;
	void *arg;
	void *impl; /* private to the loop */
};

struct mcpx_timer;
typedef void (*mcpx_timer_fn)(struct mcpx_timer *t);

struct mcpx_timer {
	mcpx_timer_fn fn;
	void *arg;
	bool armed;
	unsigned char impl[64]; /* private to the loop (holds an lws_sorted_usec_list_t) */
};

/* Creates a loop without a network listener (stdio); the HTTP server makes
 * its own context and wraps it with mcpx_loop_wrap. */
struct mcpx_loop *mcpx_loop_new(void);
void mcpx_loop_free(struct mcpx_loop *loop);

/* Wraps an lws context made by the server module (http transports), so the
 * executor shares its service loop. */
struct mcpx_loop *mcpx_loop_wrap(struct lws_context *ctx);

/* Runs until mcpx_loop_stop(). Returns 0, or a negative errno. */
int mcpx_loop_run(struct mcpx_loop *loop);
void mcpx_loop_stop(struct mcpx_loop *loop);

/* Serves what is due now (ready fds, expired timers) without waiting, then
 * returns: for tests that turn the loop by hand between checks. Returns 0,
 * or a negative errno. */
int mcpx_loop_turn(struct mcpx_loop *loop);

/* Starts watching w->fd for readability; w must stay valid until the
 * MCPX_EV_CLOSED callback. */
int mcpx_loop_watch(struct mcpx_loop *loop, struct mcpx_watch *w);
/* Stops watching and closes the fd; MCPX_EV_CLOSED follows (synchronously,
 * or when called from w's own callback, right after that callback returns). */
void mcpx_loop_unwatch(struct mcpx_watch *w);
/* Sets what w waits for: MCPX_EV_READ and/or MCPX_EV_WRITE, or 0 for
 * nothing (a hang-up still ends the watch). Callable from any callback,
 * including w's own. Returns 0, or -EBADF when w is not being watched. */
int mcpx_loop_set_events(struct mcpx_watch *w, int events);

void mcpx_timer_start(struct mcpx_loop *loop, struct mcpx_timer *t, uint64_t usec);
void mcpx_timer_cancel(struct mcpx_timer *t);

/* Monotonic clock in microseconds. */
uint64_t mcpx_now_us(void);

#endif
