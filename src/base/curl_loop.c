/*
 * curl_loop.c - libcurl's multi interface driven by the server loop
 * (curl_loop.h).
 *
 * Each socket curl wants watched is watched as a dup(), so the loop can
 * close its copy while curl keeps and closes its own; curl's read/write
 * interest becomes the watch's interest, and curl's one timeout is one loop
 * timer. After every call into curl, the transfers that ended are handed to
 * the owner.
 *
 * A hang-up ends the loop's watch (MCPX_EV_CLOSED) while curl may still want
 * the socket: curl is told on the next loop iteration, outside the loop's
 * close, and watches the socket anew if it still wants it.
 *
 * A shared loop (mcpx_curl_loop_new) hands each transfer that ended to the
 * transfer's own done function, found through CURLOPT_PRIVATE.
 *
 * What it does not do: decide anything about a transfer (egress_handle.c
 * and TokenReview set their easy handles' options), or load libcurl early.
 */
#include "curl_loop.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "log.h"

/* One socket curl asked us to watch. */
struct sock {
	struct mcpx_watch w; /* watches a dup of s */
	curl_socket_t s;
	struct mcpx_curl_loop *cl;
	bool watching; /* the loop still holds the dup */
	bool removed;  /* curl said CURL_POLL_REMOVE */
};

/* A socket whose watch the loop ended on a hang-up while curl still wanted
 * it. */
struct mcpx_curl_lost {
	struct mcpx_curl_lost *next;
	curl_socket_t s;
};

/* A shared loop's transfer ended: off the multi handle, then its owner is
 * told. */
static void xfer_done(struct mcpx_curl_loop *cl, CURL *easy, CURLcode rc)
{
	struct mcpx_curl_xfer *x = NULL;

	mcpx_curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&x);
	mcpx_curl_multi_remove_handle(cl->multi, easy);
	if (!x)
		return;
	x->running = false;
	x->done(x, rc);
}

/* Hands every transfer that ended to the owner. */
static void process_done(struct mcpx_curl_loop *cl)
{
	CURLMsg *msg;
	int left;

	while ((msg = mcpx_curl_multi_info_read(cl->multi, &left))) {
		if (msg->msg != CURLMSG_DONE)
			continue;
		if (cl->done)
			cl->done(cl->arg, msg->easy_handle, msg->data.result);
		else
			xfer_done(cl, msg->easy_handle, msg->data.result);
	}
}

static void lost_cb(struct mcpx_timer *t)
{
	struct mcpx_curl_loop *cl = t->arg;
	int running;

	while (cl->lost) {
		struct mcpx_curl_lost *l = cl->lost;

		cl->lost = l->next;
		/* curl learns of the hang-up by reading, and watches the socket
		 * anew if it still wants it. */
		mcpx_curl_multi_socket_action(cl->multi, l->s, CURL_CSELECT_IN | CURL_CSELECT_ERR,
		                              &running);
		free(l);
	}
	process_done(cl);
}

static void socket_lost(struct mcpx_curl_loop *cl, curl_socket_t s)
{
	struct mcpx_curl_lost *l = calloc(1, sizeof(*l));

	if (!l) {
		mcpx_error("%s: out of memory; a transfer waits for its timeout", cl->who);
		return;
	}
	l->s = s;
	l->next = cl->lost;
	cl->lost = l;
	mcpx_timer_start(cl->loop, &cl->lost_timer, 0);
}

static void sock_cb(struct mcpx_watch *w, int events)
{
	struct sock *k = w->arg;
	struct mcpx_curl_loop *cl = k->cl;
	curl_socket_t s = k->s;
	int flags = 0, running;

	if (events & MCPX_EV_CLOSED) {
		k->watching = false;
		if (k->removed) {
			free(k);
			return;
		}
		mcpx_curl_multi_assign(cl->multi, s, NULL);
		free(k);
		socket_lost(cl, s);
		return;
	}
	if (events & MCPX_EV_READ)
		flags |= CURL_CSELECT_IN;
	if (events & MCPX_EV_WRITE)
		flags |= CURL_CSELECT_OUT;
	mcpx_curl_multi_socket_action(cl->multi, s, flags, &running);
	process_done(cl);
}

static struct sock *sock_new(struct mcpx_curl_loop *cl, curl_socket_t s)
{
	struct sock *k = calloc(1, sizeof(*k));

	if (!k)
		return NULL;
	k->cl = cl;
	k->s = s;
	k->w.fd = fcntl(s, F_DUPFD_CLOEXEC, 3);
	k->w.fn = sock_cb;
	k->w.arg = k;
	if (k->w.fd < 0 || mcpx_loop_watch(cl->loop, &k->w) < 0) {
		if (k->w.fd >= 0)
			close(k->w.fd);
		free(k);
		return NULL;
	}
	k->watching = true;
	mcpx_curl_multi_assign(cl->multi, s, k);
	return k;
}

static int socket_fn(CURL *e, curl_socket_t s, int what, void *userp, void *socketp)
{
	struct mcpx_curl_loop *cl = userp;
	struct sock *k = socketp;

	(void)e;
	if (what == CURL_POLL_REMOVE) {
		if (!k)
			return 0;
		mcpx_curl_multi_assign(cl->multi, s, NULL);
		k->removed = true;
		if (k->watching)
			mcpx_loop_unwatch(&k->w); /* frees k at MCPX_EV_CLOSED */
		else
			free(k);
		return 0;
	}
	if (!k && !(k = sock_new(cl, s))) {
		/* The transfer then ends at its timeout, with an error. */
		mcpx_error("%s: cannot watch a socket", cl->who);
		return 0;
	}
	if (k->watching)
		mcpx_loop_set_events(&k->w, ((what & CURL_POLL_IN) ? MCPX_EV_READ : 0) |
		                                ((what & CURL_POLL_OUT) ? MCPX_EV_WRITE : 0));
	return 0;
}

static void timer_cb(struct mcpx_timer *t)
{
	struct mcpx_curl_loop *cl = t->arg;
	int running;

	mcpx_curl_multi_socket_action(cl->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	process_done(cl);
}

static int timer_fn(CURLM *m, long timeout_ms, void *userp)
{
	struct mcpx_curl_loop *cl = userp;

	(void)m;
	if (timeout_ms < 0)
		mcpx_timer_cancel(&cl->timer);
	else
		mcpx_timer_start(cl->loop, &cl->timer, (uint64_t)timeout_ms * 1000u);
	return 0;
}

void mcpx_curl_loop_init(struct mcpx_curl_loop *cl, struct mcpx_loop *loop, const char *who,
                         mcpx_curl_done_fn done, void *arg)
{
	*cl = (struct mcpx_curl_loop){.loop = loop, .who = who, .done = done, .arg = arg};
	cl->timer.fn = timer_cb;
	cl->timer.arg = cl;
	cl->lost_timer.fn = lost_cb;
	cl->lost_timer.arg = cl;
}

CURLM *mcpx_curl_loop_multi(struct mcpx_curl_loop *cl)
{
	if (cl->multi || !(cl->multi = mcpx_curl_multi_init()))
		return cl->multi;
	mcpx_curl_multi_setopt(cl->multi, CURLMOPT_SOCKETFUNCTION, socket_fn);
	mcpx_curl_multi_setopt(cl->multi, CURLMOPT_SOCKETDATA, cl);
	mcpx_curl_multi_setopt(cl->multi, CURLMOPT_TIMERFUNCTION, timer_fn);
	mcpx_curl_multi_setopt(cl->multi, CURLMOPT_TIMERDATA, cl);
	return cl->multi;
}

void mcpx_curl_loop_fini(struct mcpx_curl_loop *cl)
{
	if (cl->multi)
		mcpx_curl_multi_cleanup(cl->multi);
	cl->multi = NULL;
	mcpx_timer_cancel(&cl->timer);
	mcpx_timer_cancel(&cl->lost_timer);
	while (cl->lost) {
		struct mcpx_curl_lost *l = cl->lost;

		cl->lost = l->next;
		free(l);
	}
}

struct mcpx_curl_loop *mcpx_curl_loop_new(struct mcpx_loop *loop, const char *who)
{
	struct mcpx_curl_loop *cl = calloc(1, sizeof(*cl));

	if (cl)
		mcpx_curl_loop_init(cl, loop, who, NULL, NULL);
	return cl;
}

void mcpx_curl_loop_free(struct mcpx_curl_loop *cl)
{
	if (!cl)
		return;
	mcpx_curl_loop_fini(cl);
	free(cl);
}

int mcpx_curl_loop_add(struct mcpx_curl_loop *cl, struct mcpx_curl_xfer *x)
{
	CURLM *m = mcpx_curl_loop_multi(cl);

	if (!m || mcpx_curl_easy_setopt(x->easy, CURLOPT_PRIVATE, x) != CURLE_OK ||
	    mcpx_curl_multi_add_handle(m, x->easy) != CURLM_OK)
		return -EIO;
	x->running = true;
	return 0;
}

void mcpx_curl_loop_remove(struct mcpx_curl_loop *cl, struct mcpx_curl_xfer *x)
{
	if (!x->running)
		return;
	mcpx_curl_multi_remove_handle(cl->multi, x->easy);
	x->running = false;
}
