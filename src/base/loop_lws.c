/*
 * loop_lws.c - the event loop interface (loop.h) on libwebsockets 4.1.6.
 *
 * Debian's lws has one service thread and no spawn helper, so child pipes,
 * pidfds, stdin and signalfds are adopted as RAW_FILE descriptors into the
 * same poll loop as the sockets, and timers are lws "sorted usec lists".
 * lws closes an adopted fd when its wsi closes; a watch therefore owns its
 * fd, and the watcher learns exactly once (MCPX_EV_CLOSED) that it is gone.
 * A wsi may not be closed synchronously while it is being serviced, so an
 * unwatch from inside its own callback is deferred to the callback's return.
 *
 * Interest: read interest is lws's rx flow control (POLLIN on or off). Write
 * interest is lws_callback_on_writable, which is one-shot, and for a raw file
 * lws clears POLLOUT after the writeable callback returns, so asking again
 * from inside that callback would be undone: a watch that still wants to
 * write asks again from a zero-delay timer, on the next loop iteration.
 *
 * Every callback it makes is marked for loop_guard.h: timed (the loop's
 * longest stall) and checked for waits that would block the loop.
 */
#include "loop.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "loop_guard.h"
#include "loop_lws.h"

struct mcpx_loop {
	struct lws_context *ctx;
	struct lws_vhost *vhost;
	bool owns_ctx;
	volatile int stop;
};

/* Per-watch state kept beside the caller's struct. */
struct watch_impl {
	struct lws *wsi;
	struct mcpx_loop *loop;
	bool in_callback;
	bool close_requested;
	int events;                   /* MCPX_EV_READ | MCPX_EV_WRITE wanted */
	lws_sorted_usec_list_t rearm; /* asks for POLLOUT again (see above) */
};

static void rearm_cb(lws_sorted_usec_list_t *sul)
{
	struct watch_impl *impl =
		(struct watch_impl *)(void *)((char *)sul - offsetof(struct watch_impl, rearm));

	if ((impl->events & MCPX_EV_WRITE) && !impl->close_requested)
		lws_callback_on_writable(impl->wsi);
}

/* Runs the watcher's callback for one event; returns what the lws callback
 * must return (-1 closes the wsi when an unwatch was asked for meanwhile). */
static int deliver(struct mcpx_watch *w, int event)
{
	struct watch_impl *impl = w->impl;

	if (!(impl->events & event))
		return 0; /* interest dropped since poll() returned */
	impl->in_callback = true;
	mcpx_loop_guard_begin();
	w->fn(w, event);
	mcpx_loop_guard_end();
	impl->in_callback = false;
	if (impl->close_requested)
		return -1;
	if (event == MCPX_EV_WRITE && (impl->events & MCPX_EV_WRITE))
		lws_sul_schedule(impl->loop->ctx, 0, &impl->rearm, rearm_cb, 0);
	return 0;
}

_Static_assert(sizeof(lws_sorted_usec_list_t) <= sizeof(((struct mcpx_timer *)0)->impl),
	       "mcpx_timer.impl too small for an lws sul");

static int fd_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
		       size_t len)
{
	struct mcpx_watch *w = lws_get_opaque_user_data(wsi);
	struct watch_impl *impl;

	switch (reason) {
	case LWS_CALLBACK_RAW_RX_FILE:
		return w ? deliver(w, MCPX_EV_READ) : -1;
	case LWS_CALLBACK_RAW_WRITEABLE_FILE:
		return w ? deliver(w, MCPX_EV_WRITE) : 0;
	case LWS_CALLBACK_RAW_CLOSE_FILE:
		if (!w)
			return 0;
		lws_set_opaque_user_data(wsi, NULL);
		impl = w->impl;
		lws_sul_cancel(&impl->rearm);
		w->impl = NULL;
		w->fd = -1;
		free(impl);
		mcpx_loop_guard_begin();
		w->fn(w, MCPX_EV_CLOSED);
		mcpx_loop_guard_end();
		return 0;
	default:
		return 0;
	}
}

const struct lws_protocols mcpx_loop_fd_protocol = {MCPX_FD_PROTOCOL_NAME, fd_callback, 0, 0, 0,
						     NULL, 0};

struct mcpx_loop *mcpx_loop_new(void)
{
	static const struct lws_protocols protocols[] = {
		{MCPX_FD_PROTOCOL_NAME, fd_callback, 0, 0, 0, NULL, 0},
		{NULL, NULL, 0, 0, 0, NULL, 0},
	};
	struct lws_context_creation_info info;
	struct mcpx_loop *loop = calloc(1, sizeof(*loop));

	if (!loop)
		return NULL;
	memset(&info, 0, sizeof(info));
	info.port = CONTEXT_PORT_NO_LISTEN;
	info.protocols = protocols;
	info.gid = (gid_t)-1;
	info.uid = (uid_t)-1;
	lws_set_log_level(LLL_ERR, NULL);
	loop->ctx = lws_create_context(&info);
	if (!loop->ctx) {
		free(loop);
		return NULL;
	}
	loop->owns_ctx = true;
	loop->vhost = lws_get_vhost_by_name(loop->ctx, "default");
	return loop;
}

struct mcpx_loop *mcpx_loop_wrap(struct lws_context *ctx)
{
	struct mcpx_loop *loop = calloc(1, sizeof(*loop));
	if (!loop)
		return NULL;
	loop->ctx = ctx;
	loop->vhost = lws_get_vhost_by_name(ctx, "default");
	return loop;
}

void mcpx_loop_free(struct mcpx_loop *loop)
{
	if (!loop)
		return;
	if (loop->owns_ctx)
		lws_context_destroy(loop->ctx);
	free(loop);
}

/* One lws_service call, marked as the loop's service (loop_guard.h). */
static int service(struct mcpx_loop *loop, int timeout_ms)
{
	int r;

	mcpx_loop_guard_service_begin();
	r = lws_service(loop->ctx, timeout_ms);
	mcpx_loop_guard_service_end();
	return r;
}

int mcpx_loop_run(struct mcpx_loop *loop)
{
	while (!loop->stop)
		if (service(loop, 0) < 0)
			return -EIO;
	return 0;
}

int mcpx_loop_turn(struct mcpx_loop *loop)
{
	/* lws_service with a negative timeout polls without waiting. */
	return service(loop, -1) < 0 ? -EIO : 0;
}

void mcpx_loop_stop(struct mcpx_loop *loop)
{
	loop->stop = 1;
	lws_cancel_service(loop->ctx);
}

int mcpx_loop_watch(struct mcpx_loop *loop, struct mcpx_watch *w)
{
	lws_sock_file_fd_type u;
	struct watch_impl *impl = calloc(1, sizeof(*impl));
	struct lws *wsi;

	if (!impl)
		return -ENOMEM;
	if (!loop->vhost) {
		free(impl);
		return -ENODEV;
	}
	impl->loop = loop;
	impl->events = MCPX_EV_READ; /* lws adopts a raw file with POLLIN set */
	u.filefd = w->fd;
	wsi = lws_adopt_descriptor_vhost(loop->vhost, LWS_ADOPT_RAW_FILE_DESC, u,
					 MCPX_FD_PROTOCOL_NAME, NULL);
	if (!wsi) {
		free(impl);
		return -EIO;
	}
	impl->wsi = wsi;
	w->impl = impl;
	lws_set_opaque_user_data(wsi, w);
	return 0;
}

void mcpx_loop_unwatch(struct mcpx_watch *w)
{
	struct watch_impl *impl = w->impl;

	if (!impl)
		return;
	if (impl->in_callback) {
		impl->close_requested = true;
		return;
	}
	lws_set_timeout(impl->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_SYNC);
}

int mcpx_loop_set_events(struct mcpx_watch *w, int events)
{
	struct watch_impl *impl = w->impl;
	int was;

	if (!impl || impl->close_requested)
		return -EBADF;
	was = impl->events;
	impl->events = events & (MCPX_EV_READ | MCPX_EV_WRITE);
	if ((was ^ impl->events) & MCPX_EV_READ)
		lws_rx_flow_control(impl->wsi, (impl->events & MCPX_EV_READ) ? 1 : 0);
	/* Turning write interest off cannot clear POLLOUT (lws has no public
	 * call for that); deliver() drops the one wake-up that may follow. */
	if ((impl->events & MCPX_EV_WRITE) && !(was & MCPX_EV_WRITE))
		lws_callback_on_writable(impl->wsi);
	return 0;
}

static void sul_cb(lws_sorted_usec_list_t *sul)
{
	struct mcpx_timer *t = (struct mcpx_timer *)((char *)sul - offsetof(struct mcpx_timer, impl));
	t->armed = false;
	mcpx_loop_guard_begin();
	t->fn(t);
	mcpx_loop_guard_end();
}

void mcpx_timer_start(struct mcpx_loop *loop, struct mcpx_timer *t, uint64_t usec)
{
	lws_sorted_usec_list_t *sul = (lws_sorted_usec_list_t *)(void *)t->impl;
	if (t->armed)
		lws_sul_cancel(sul);
	else
		memset(sul, 0, sizeof(*sul));
	t->armed = true;
	lws_sul_schedule(loop->ctx, 0, sul, sul_cb, (lws_usec_t)usec);
}

void mcpx_timer_cancel(struct mcpx_timer *t)
{
	if (t->armed) {
		lws_sul_cancel((lws_sorted_usec_list_t *)(void *)t->impl);
		t->armed = false;
	}
}

uint64_t mcpx_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}
