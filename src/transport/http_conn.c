/*
 * http_conn.c - one HTTP connection's life in the server: the cap on open
 * connections, the deadlines for the request head and body, the head gate,
 * and watching the client while its request is in flight.
 *
 * Why it looks like this (libwebsockets 4.1.6, lib/roles/http/server/
 * server.c and lib/roles/h1/ops-h1.c at the v4.1.6 tag):
 *
 * - lws attaches a header table ("ah") to every accepted connection and
 *   keeps it while the connection lives (an SSE stream gives it back); with
 *   the pool exhausted, new connections wait for an ah without being read. The pool is therefore
 *   sized to MCP_EXEC_MAX_CONNECTIONS, and a connection beyond the cap
 *   makes room by dropping the oldest one that has not passed the admission
 *   gate (http_admit.h) and waits on its client, or is refused: an idle or
 *   slowloris peer never displaces a client that presented the token.
 *
 * - Bytes that arrive with a request but belong after it (HTTP pipelining)
 *   stay in lws's per-connection buffer. When lws later parses a request
 *   head out of that buffer and the request has a body, lws_http_action()
 *   re-reads the buffer from its start as body and loops without progress:
 *   the 100 % CPU hang of issue 10. While a response is pending, lws also
 *   spins on any readable byte (a GET sits in a state whose input is never
 *   read; a POST re-delivers BODY_COMPLETION without consuming). No public
 *   call reveals whether that buffer holds anything. So this server keeps
 *   no connection open after its response (every response says
 *   "Connection: close"), and it measures instead of asking: the head gate
 *   learns the exact length of the head before lws reads a byte, and the
 *   kernel's count of bytes handed to lws (TCP_INFO bytes_received minus the
 *   unread queue) then shows whether lws took more than the request
 *   (mcpx_conn_overread). Such a request is answered and the rest dropped.
 *
 * - The head gate: until the whole head is in the socket's receive queue,
 *   lws does not read (rx flow control off); a duplicate of the socket is
 *   watched instead, the queue is inspected with MSG_PEEK, and SO_RCVLOWAT
 *   keeps a partial head from waking the loop again until more bytes come.
 *   A head already complete when the connection is accepted goes straight
 *   to lws.
 *
 * - In flight (a request handed to a transport), lws is kept from reading
 *   again, and the same duplicate socket is watched: end of file means the
 *   client went away (its run is cancelled at once, also for the legacy SSE
 *   stream, whose GET lws never reads); anything else the client sends is
 *   read and discarded. lws only delivers a writeable callback to a
 *   connection whose rx is on, so the response writer turns rx on for the
 *   moments it writes (http_response.c).
 *
 * It does not parse HTTP (lws does) nor decide about requests (http_admit.c).
 */
#include "http_conn.h"

#include <errno.h>
#include <fcntl.h>
#include <libwebsockets.h>
#include <linux/sockios.h>
#include <linux/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config.h"
#include "crypto.h"
#include "log.h"
#include "metrics.h"
#include "tokenreview.h"

/* What a client may send while its request is in flight before the
 * connection is dropped: more is a flood, not a confused client. */
#define DISCARD_MAX 65536

/* How many of the oldest candidates eviction inspects for an idle one
 * (one ioctl each), so a full table does not cost a scan of all of it. */
#define EVICT_SCAN 64

/* A duplicate of the connection's socket, watched by the loop. It lives
 * apart from the connection because the loop may report its end after the
 * connection is gone; conn is NULL then. */
struct peer_watch {
	struct mcpx_watch w;
	struct mcpx_http_conn *conn;
};

static void publish_count(const struct mcpx_http_server *s)
{
	mcpx_metrics_http_connections(s->live);
}

void mcpx_conn_rx(struct mcpx_http_conn *c, bool on)
{
	if (c->rx_paused == !on)
		return;
	c->rx_paused = !on;
	lws_rx_flow_control(c->wsi, on ? 1 : 0);
}

void mcpx_conn_kill(struct mcpx_http_conn *c, const char *reason)
{
	/* During teardown lws closes everything itself. */
	if (c->closing || c->destroying || c->srv->shutting_down)
		return;
	c->closing = true;
	c->srv->live--;
	if (reason)
		mcpx_metrics_http_conn_closed(reason);
	mcpx_conn_stop_deadline(c);
	/* Synchronous, so its header table and descriptors are free before
	 * the caller goes on (an accept burst must not outgrow the pool). */
	lws_set_timeout(c->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_SYNC);
}

static void deadline_fired(struct mcpx_timer *t)
{
	struct mcpx_http_conn *c = t->arg;

	mcpx_conn_kill(c, c->phase == PH_BODY || c->phase == PH_DISPATCHED ? "body_timeout"
	                                                                   : "header_timeout");
}

void mcpx_conn_start_deadline(struct mcpx_http_conn *c, unsigned seconds)
{
	c->deadline.fn = deadline_fired;
	c->deadline.arg = c;
	mcpx_timer_start(c->srv->loop, &c->deadline, (uint64_t)seconds * 1000000u);
}

void mcpx_conn_stop_deadline(struct mcpx_http_conn *c)
{
	mcpx_timer_cancel(&c->deadline);
}

/* ---- the watched duplicate ---- */

static void unwatch_peer(struct mcpx_http_conn *c)
{
	struct peer_watch *pw = c->peer;

	if (!pw)
		return;
	c->peer = NULL;
	pw->conn = NULL;
	mcpx_loop_unwatch(&pw->w);
}

static void set_lowat(int fd, int bytes)
{
	/* Best effort: without it a partial head costs one more wakeup per
	 * loop turn, never a wrong answer. */
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &bytes, sizeof(bytes));
}

/* Answers a head the gate refuses before lws has seen it. Best effort: the
 * connection closes right after either way. */
static void raw_reply(int fd, int status, const char *text)
{
	char buf[160];
	int n = snprintf(buf, sizeof(buf),
	                 "HTTP/1.1 %d %s\r\ncontent-length: 0\r\nconnection: close\r\n\r\n", status,
	                 text);
	mcpx_metrics_http_response(status);
	(void)send(fd, buf, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* Where the head ends in [p, p+n): its length, 0 when not all there, -1
 * when malformed. Lines must end in CRLF: a bare LF could end the head
 * earlier for lws than for this count. */
static long head_end(const char *p, size_t n)
{
	if (n >= 2 && p[0] == '\r' && p[1] == '\n')
		return -1; /* an empty line before the request line */
	for (size_t i = 0; i < n; i++) {
		if (p[i] != '\n')
			continue;
		if (i == 0 || p[i - 1] != '\r')
			return -1;
		if (i >= 3 && p[i - 2] == '\n' && p[i - 3] == '\r')
			return (long)(i + 1);
	}
	return 0;
}

/* True when the peer has shut down its sending side (or the socket failed). */
static bool peer_shut(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLRDHUP};

	return poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

enum head_state {
	HEAD_WAIT,      /* not all there yet (or nothing) */
	HEAD_READY,     /* complete; c->head_len is its length */
	HEAD_BAD,       /* malformed: 400 */
	HEAD_TOO_LARGE, /* over MCPX_HTTP_HEAD_MAX: 431 */
	HEAD_GONE,      /* end of file or an error before the head was whole */
};

/* Looks at the queued bytes without taking them. */
static enum head_state look_at_head(struct mcpx_http_conn *c, int fd)
{
	static char peek[MCPX_HTTP_HEAD_MAX + 1]; /* one thread: one buffer */
	ssize_t n = recv(fd, peek, sizeof(peek), MSG_PEEK | MSG_DONTWAIT);
	long end;

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return HEAD_WAIT;
	if (n <= 0)
		return HEAD_GONE;
	end = head_end(peek, (size_t)n);
	if (end < 0)
		return HEAD_BAD;
	if (end > MCPX_HTTP_HEAD_MAX || (end == 0 && (size_t)n > MCPX_HTTP_HEAD_MAX))
		return HEAD_TOO_LARGE;
	if (end == 0) {
		/* A peer that stopped sending can never finish its head; its
		 * end of file sits behind the bytes a peek keeps returning. */
		if (peer_shut(fd))
			return HEAD_GONE;
		set_lowat(fd, (int)n + 1);
		return HEAD_WAIT;
	}
	set_lowat(fd, 1);
	c->head_len = (size_t)end;
	return HEAD_READY;
}

/* The whole head is queued: lws may read and parse it now. */
static void head_ready(struct mcpx_http_conn *c)
{
	c->phase = PH_PARSING;
	unwatch_peer(c);
	mcpx_conn_rx(c, true);
}

/* The head gate, from the watch: called whenever more of the head may have
 * arrived. */
static void head_gate(struct mcpx_http_conn *c, int fd)
{
	switch (look_at_head(c, fd)) {
	case HEAD_WAIT:
		return;
	case HEAD_READY:
		head_ready(c);
		return;
	case HEAD_BAD:
		raw_reply(fd, 400, "Bad Request");
		mcpx_conn_kill(c, "bad_head");
		return;
	case HEAD_TOO_LARGE:
		raw_reply(fd, 431, "Request Header Fields Too Large");
		mcpx_conn_kill(c, "head_too_large");
		return;
	case HEAD_GONE:
		mcpx_conn_kill(c, "peer_closed");
		return;
	}
}

/* In flight: end of file or an error means the client is gone; bytes are
 * read and dropped (a request after this one on the same connection). */
static void drain_peer(struct mcpx_http_conn *c, int fd)
{
	char buf[4096];
	ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

	if (n > 0) {
		c->discarded += (size_t)n;
		if (c->discarded > DISCARD_MAX)
			mcpx_conn_kill(c, "pipelined");
		return;
	}
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	mcpx_conn_kill(c, "peer_closed");
}

static void peer_event(struct mcpx_watch *w, int events)
{
	struct peer_watch *pw = w->arg;
	struct mcpx_http_conn *c = pw->conn;

	if (events & MCPX_EV_CLOSED) {
		/* The loop dropped the duplicate (a hang-up); a connection
		 * still attached has lost its client. */
		free(pw);
		if (c) {
			c->peer = NULL;
			mcpx_conn_kill(c, "peer_closed");
		}
		return;
	}
	if (!c)
		return;
	if (c->phase == PH_HEAD)
		head_gate(c, w->fd);
	else
		drain_peer(c, w->fd);
}

static int watch_peer(struct mcpx_http_conn *c)
{
	int fd = lws_get_socket_fd(c->wsi), rc;
	struct peer_watch *pw;

	if (fd < 0)
		return -EBADF;
	pw = calloc(1, sizeof(*pw));
	if (!pw)
		return -ENOMEM;
	pw->w.fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (pw->w.fd < 0) {
		rc = -errno;
		free(pw);
		return rc;
	}
	pw->w.fn = peer_event;
	pw->w.arg = pw;
	pw->conn = c;
	rc = mcpx_loop_watch(c->srv->loop, &pw->w);
	if (rc < 0) {
		close(pw->w.fd);
		free(pw);
		return rc;
	}
	c->peer = pw;
	return 0;
}

/* ---- accept, evict, destroy ---- */

/* Bytes the client has sent that nobody has read yet. Before its head is
 * complete a connection has had nothing read, so this is all it sent. */
static int pending_bytes(const struct mcpx_http_conn *c)
{
	int n = 0;
	return ioctl(lws_get_socket_fd(c->wsi), SIOCINQ, &n) == 0 ? n : -1;
}

/* May this connection be closed to make room? Only one that has not passed
 * the gate and is waiting on its client: for the rest of its head, or for a
 * refused request's body that is being read and dropped. A complete head
 * being parsed or answered is not idle; it is gone in a turn of the loop. */
static bool evictable(const struct mcpx_http_conn *c)
{
	if (c->admitted || c->closing)
		return false;
	return c->phase == PH_HEAD || (c->resp.started && !c->body_done);
}

/* Makes room for a new connection. Among the oldest few evictable ones,
 * one that has sent nothing at all goes first. Otherwise the oldest goes,
 * unless its head has arrived whole in the meantime: that one is handed to
 * lws instead (it is a request, not an idle peer) and the next is tried. So
 * a real request is not pushed out when new connections arrive faster than
 * the loop gets round to reading heads. */
static bool evict_oldest_idle(struct mcpx_http_server *s)
{
	struct mcpx_http_conn *c, *next;
	unsigned scanned = 0;

	for (c = s->oldest; c && scanned < EVICT_SCAN; c = c->newer) {
		if (!evictable(c))
			continue;
		scanned++;
		if (c->phase == PH_HEAD && pending_bytes(c) == 0) {
			mcpx_conn_kill(c, "evicted");
			return true;
		}
	}
	for (c = s->oldest; c; c = next) {
		next = c->newer;
		if (!evictable(c))
			continue;
		if (c->phase == PH_HEAD &&
		    look_at_head(c, lws_get_socket_fd(c->wsi)) == HEAD_READY) {
			head_ready(c);
			continue;
		}
		mcpx_conn_kill(c, "evicted");
		return true;
	}
	return false;
}

static void link_newest(struct mcpx_http_server *s, struct mcpx_http_conn *c)
{
	c->older = s->newest;
	if (s->newest)
		s->newest->newer = c;
	else
		s->oldest = c;
	s->newest = c;
}

static void unlink_conn(struct mcpx_http_server *s, struct mcpx_http_conn *c)
{
	if (c->older)
		c->older->newer = c->newer;
	else
		s->oldest = c->newer;
	if (c->newer)
		c->newer->older = c->older;
	else
		s->newest = c->older;
}

int mcpx_conn_accept(struct mcpx_http_server *s, struct lws *wsi)
{
	struct mcpx_http_conn *c;

	if (s->live >= s->max_conns && !evict_oldest_idle(s)) {
		mcpx_metrics_http_conn_closed("refused");
		return -1;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return -1;
	c->wsi = wsi;
	c->srv = s;
	mcpx_buf_init(&c->body, 0);
	mcpx_buf_init(&c->resp.extra, 1024);
	mcpx_buf_init(&c->resp.out, s->out_cap);
	link_newest(s, c);
	s->live++;
	lws_set_opaque_user_data(wsi, c);
	mcpx_conn_start_deadline(c, s->cfg->header_timeout_s);
	publish_count(s);
	/* A client usually sends its head right after connecting, and under a
	 * burst of connections it is often queued by now: taking it at once
	 * keeps a real request from being evicted by the arrivals behind it.
	 * Anything else is left to the watch (closing is not allowed here). */
	if (look_at_head(c, lws_get_socket_fd(wsi)) == HEAD_READY) {
		c->phase = PH_PARSING;
		return 0;
	}
	mcpx_conn_rx(c, false);
	if (watch_peer(c) < 0) {
		mcpx_warn("http: cannot watch a new connection (descriptors exhausted?); refused");
		return -1; /* lws closes it; WSI_DESTROY frees c */
	}
	return 0;
}

void mcpx_conn_destroy(struct mcpx_http_conn *c)
{
	struct mcpx_http_server *s = c->srv;
	void (*fn)(void *) = c->on_close;

	c->destroying = true;
	mcpx_conn_stop_deadline(c);
	unwatch_peer(c);
	if (!c->closing)
		s->live--;
	if (c->counted_busy)
		s->busy--;
	c->on_close = NULL;
	if (fn)
		fn(c->close_arg);
	if (c->review_authz) {
		/* A token kept for a review that never started. */
		mcpx_wipe(c->review_authz, c->review_authz_len);
		free(c->review_authz);
	}
	/* A re-review of an admitted ServiceAccount token in flight. */
	mcpx_review_cancel(c->review);
	if (c->sa_authz) {
		mcpx_wipe(c->sa_authz, c->sa_authz_len);
		free(c->sa_authz);
	}
	unlink_conn(s, c);
	lws_set_opaque_user_data(c->wsi, NULL);
	mcpx_buf_free(&c->body);
	free(c->refusal);
	/* The response's buffers (http_response.c queues into them). */
	mcpx_buf_free(&c->resp.extra);
	mcpx_buf_free(&c->resp.out);
	free(c);
	publish_count(s);
}

/* ---- pipelining and in flight ---- */

bool mcpx_conn_overread(const struct mcpx_http_conn *c, size_t consumed)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);
	int fd = lws_get_socket_fd(c->wsi), unread = 0;

	memset(&ti, 0, sizeof(ti));
	/* Without the counters (kernels before 4.1) there is no telling, and
	 * a wrong "no" would let lws spin: fail closed. */
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0 ||
	    len < offsetof(struct tcp_info, tcpi_bytes_received) + sizeof(ti.tcpi_bytes_received) ||
	    ioctl(fd, SIOCINQ, &unread) < 0 || unread < 0)
		return true;
	return ti.tcpi_bytes_received - (uint64_t)unread > (uint64_t)consumed;
}

int mcpx_conn_in_flight(struct mcpx_http_conn *c)
{
	c->phase = PH_DISPATCHED;
	mcpx_conn_stop_deadline(c);
	mcpx_conn_rx(c, false);
	return watch_peer(c);
}
