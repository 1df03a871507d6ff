/*
 * transport_stdio.c - newline-delimited JSON-RPC on stdin/stdout.
 *
 * stdin is adopted into the shared loop, so a long execution never blocks
 * reading the next line (a ping or a notifications/cancelled). The framing
 * (mcpx_lines) is a pure function of the bytes, so it is unit-tested and
 * fuzzed on its own: lines longer than the cap are discarded up to their
 * newline and answered with one JSON-RPC error, so a runaway client cannot
 * make the server buffer without bound. Replies are written whole with
 * blocking writes: stdout belongs to a single client, which is expected to
 * read it. A batch's replies come from the core as one array already.
 */
#include "transport_stdio.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

#define EOF_POLL_US 50000u

struct mcpx_stdio {
	struct mcpx_loop *loop;
	struct mcpx_core *core;
	struct mcpx_session session;
	struct mcpx_sink sink;
	struct mcpx_watch in;
	bool in_open;
	struct mcpx_lines lines;
	bool stdout_broken;
	bool closing;
	struct mcpx_timer eof_timer;
};

/* ---- framing ---------------------------------------------------------- */

void mcpx_lines_init(struct mcpx_lines *l, size_t max,
		     void (*on_line)(void *arg, const char *line, size_t len),
		     void (*on_drop)(void *arg, int err), void *arg)
{
	mcpx_buf_init(&l->line, max);
	l->discarding = false;
	l->on_line = on_line;
	l->on_drop = on_drop;
	l->arg = arg;
}

/* Hands the collected line over without its trailing CRs (CRLF clients). */
static void deliver(struct mcpx_lines *l)
{
	size_t len = l->line.len;

	while (len && l->line.data[len - 1] == '\r')
		len--;
	if (len)
		l->on_line(l->arg, l->line.data, len);
	mcpx_buf_reset(&l->line);
}

void mcpx_lines_feed(struct mcpx_lines *l, const char *data, size_t n)
{
	while (n > 0) {
		const char *nl = memchr(data, '\n', n);
		size_t chunk = nl ? (size_t)(nl - data) : n;

		if (!l->discarding) {
			int rc = mcpx_buf_add(&l->line, data, chunk);
			if (rc < 0) {
				/* Dropped up to its newline, reported once. */
				mcpx_buf_reset(&l->line);
				l->discarding = true;
				l->on_drop(l->arg, rc);
			}
		}
		if (!nl)
			return;
		if (l->discarding)
			l->discarding = false;
		else
			deliver(l);
		data = nl + 1;
		n -= chunk + 1;
	}
}

void mcpx_lines_finish(struct mcpx_lines *l)
{
	if (!l->discarding)
		deliver(l);
	l->discarding = false;
}

void mcpx_lines_free(struct mcpx_lines *l)
{
	mcpx_buf_free(&l->line);
}

/* ---- the transport ---------------------------------------------------- */

static int write_all(int fd, const char *p, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			struct pollfd pfd = {.fd = fd, .events = POLLOUT};
			(void)poll(&pfd, 1, 1000);
			continue;
		}
		if (n <= 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static void stdio_send(struct mcpx_sink *sink, const char *json, size_t len, bool response)
{
	struct mcpx_stdio *t = (struct mcpx_stdio *)((char *)sink - offsetof(struct mcpx_stdio, sink));
	char *line;

	if (t->stdout_broken)
		return;
	/* One write per message keeps lines whole even if stdout is shared. */
	line = malloc(len + 1);
	if (!line) {
		mcpx_error("out of memory writing a reply");
		return;
	}
	memcpy(line, json, len);
	line[len] = '\n';
	if (write_all(STDOUT_FILENO, line, len + 1) < 0) {
		mcpx_warn("stdout closed by the client; stopping");
		t->stdout_broken = true;
		mcpx_stdio_shutdown(t);
	}
	free(line);
}

static void on_line(void *arg, const char *line, size_t len)
{
	struct mcpx_stdio *t = arg;
	struct mcpx_handle_info info;

	mcpx_core_handle(t->core, &t->session, &t->sink, line, len, &info);
}

static void on_drop(void *arg, int err)
{
	struct mcpx_stdio *t = arg;
	static const char too_long[] =
		"{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,"
		"\"message\":\"message exceeds MCP_EXEC_MAX_BODY_BYTES\"}}";
	static const char no_mem[] =
		"{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32603,"
		"\"message\":\"Internal error: out of memory reading the message\"}}";

	if (err == -E2BIG) {
		mcpx_warn("discarding a stdin message over %zu bytes", t->lines.line.max);
		stdio_send(&t->sink, too_long, sizeof(too_long) - 1, true);
	} else {
		mcpx_error("out of memory reading stdin; message discarded");
		stdio_send(&t->sink, no_mem, sizeof(no_mem) - 1, true);
	}
}

static void eof_timer_cb(struct mcpx_timer *tm)
{
	struct mcpx_stdio *t = tm->arg;
	if (mcpx_core_inflight(t->core) == 0 || t->stdout_broken)
		mcpx_loop_stop(t->loop);
	else
		mcpx_timer_start(t->loop, &t->eof_timer, EOF_POLL_US);
}

static void in_cb(struct mcpx_watch *w, int events)
{
	struct mcpx_stdio *t = w->arg;
	char buf[65536];

	if (events & MCPX_EV_READ) {
		for (;;) {
			ssize_t n = read(w->fd, buf, sizeof(buf));
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && errno == EAGAIN)
				return;
			if (n <= 0) {
				/* A final line without a newline still counts. */
				mcpx_lines_finish(&t->lines);
				mcpx_loop_unwatch(w);
				return;
			}
			mcpx_lines_feed(&t->lines, buf, (size_t)n);
			if (t->closing)
				return;
		}
	}
	if (events & MCPX_EV_CLOSED) {
		t->in_open = false;
		mcpx_stdio_shutdown(t);
	}
}

struct mcpx_stdio *mcpx_stdio_start(struct mcpx_loop *loop, struct mcpx_core *core, size_t max_line)
{
	struct mcpx_stdio *t = calloc(1, sizeof(*t));
	int fd;

	if (!t)
		return NULL;
	t->loop = loop;
	t->core = core;
	mcpx_lines_init(&t->lines, max_line, on_line, on_drop, t);
	t->sink.send = stdio_send;
	strcpy(t->session.key, "stdio");
	strcpy(t->session.caller, "stdio");
	strcpy(t->session.client, "stdio");
	t->session.log_level = MCPX_LEVEL_OFF;
	t->session.allow_stateless = true;
	t->eof_timer.fn = eof_timer_cb;
	t->eof_timer.arg = t;

	/* The loop closes adopted fds; give it a duplicate so fd 0 stays
	 * reserved and no later open() can land on it. */
	fd = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
	if (fd < 0) {
		free(t);
		return NULL;
	}
	(void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	t->in.fd = fd;
	t->in.fn = in_cb;
	t->in.arg = t;
	/* stdout is the session's one stream: it also takes server-initiated
	 * notifications (the tool list changed) once initialized. */
	if (mcpx_core_listen(core, &t->sink, &t->session) < 0) {
		close(fd);
		free(t);
		return NULL;
	}
	if (mcpx_loop_watch(loop, &t->in) < 0) {
		mcpx_core_sink_gone(core, &t->sink);
		close(fd);
		free(t);
		return NULL;
	}
	t->in_open = true;
	return t;
}

void mcpx_stdio_shutdown(struct mcpx_stdio *t)
{
	if (t->closing)
		return;
	t->closing = true;
	if (t->in_open)
		mcpx_loop_unwatch(&t->in);
	mcpx_timer_start(t->loop, &t->eof_timer, 0);
}

void mcpx_stdio_free(struct mcpx_stdio *t)
{
	if (!t)
		return;
	mcpx_timer_cancel(&t->eof_timer);
	if (t->in_open)
		mcpx_loop_unwatch(&t->in);
	/* Calls still in flight hold our sink: they end here, while the core
	 * and the executor are still there to stop them. */
	mcpx_core_sink_gone(t->core, &t->sink);
	mcpx_lines_free(&t->lines);
	free(t);
}
