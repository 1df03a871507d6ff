/*
 * transport_stdio.c - newline-delimited JSON-RPC on stdin/stdout.
 *
 * stdin is adopted into the shared loop, so a long execution never blocks
 * reading the next line (a ping or a notifications/cancelled). Lines longer
 * than the cap are discarded up to their newline and answered with one
 * JSON-RPC error, so a runaway client cannot make the server buffer without
 * bound. Replies are written whole with blocking writes: stdout belongs to a
 * single client, which is expected to read it.
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
	char *buf;
	size_t len, cap, max;
	bool discarding;
	bool stdout_broken;
	bool closing;
	struct mcpx_timer eof_timer;
	/* While a batch is being handled, its synchronous responses are
	 * collected and written as one JSON array (JSON-RPC 2.0 batches). */
	bool collecting;
	char *batch;
	size_t batch_len;
};

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
	if (t->collecting && response) {
		char *nb = realloc(t->batch, t->batch_len + len + 2);
		if (nb) {
			char sep = t->batch_len ? ',' : '[';
			t->batch = nb;
			t->batch[t->batch_len++] = sep;
			memcpy(t->batch + t->batch_len, json, len);
			t->batch_len += len;
			return;
		}
	}
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

static void handle_line(struct mcpx_stdio *t, const char *line, size_t len)
{
	struct mcpx_handle_info info;

	while (len && (line[len - 1] == '\r'))
		len--;
	if (len == 0)
		return;
	memset(&info, 0, sizeof(info));
	{
		size_t i = 0;
		while (i < len && (line[i] == ' ' || line[i] == '\t'))
			i++;
		t->collecting = i < len && line[i] == '[';
	}
	mcpx_core_handle(t->core, &t->session, &t->sink, line, len, &info);
	t->collecting = false;
	if (t->batch_len && info.batch && !info.invalid) {
		t->batch[t->batch_len++] = ']';
		stdio_send(&t->sink, t->batch, t->batch_len, true);
	} else if (t->batch_len) {
		/* A batch rejected as a whole gets its single error as is. */
		stdio_send(&t->sink, t->batch + 1, t->batch_len - 1, true);
	}
	free(t->batch);
	t->batch = NULL;
	t->batch_len = 0;
}

static void too_long(struct mcpx_stdio *t)
{
	static const char msg[] = "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,"
				  "\"message\":\"message exceeds MCP_EXEC_MAX_BODY_BYTES\"}}";
	mcpx_warn("discarding a stdin message over %zu bytes", t->max);
	stdio_send(&t->sink, msg, sizeof(msg) - 1, true);
}

/* Splits the buffered bytes into lines and hands complete ones over. */
static void process(struct mcpx_stdio *t, const char *data, size_t n)
{
	while (n > 0) {
		const char *nl = memchr(data, '\n', n);
		size_t chunk = nl ? (size_t)(nl - data) : n;

		if (t->discarding) {
			if (nl)
				t->discarding = false;
		} else if (t->len + chunk > t->max) {
			t->len = 0;
			too_long(t);
			t->discarding = nl == NULL;
		} else {
			if (t->len + chunk > t->cap) {
				size_t ncap = t->cap ? t->cap : 4096;
				while (ncap < t->len + chunk)
					ncap *= 2;
				char *nb = realloc(t->buf, ncap);
				if (!nb) {
					t->len = 0;
					too_long(t);
					t->discarding = nl == NULL;
					goto next;
				}
				t->buf = nb;
				t->cap = ncap;
			}
			memcpy(t->buf + t->len, data, chunk);
			t->len += chunk;
			if (nl) {
				handle_line(t, t->buf, t->len);
				t->len = 0;
			}
		}
next:
		if (!nl)
			break;
		data = nl + 1;
		n -= chunk + 1;
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
				if (t->len && !t->discarding)
					handle_line(t, t->buf, t->len);
				t->len = 0;
				mcpx_loop_unwatch(w);
				return;
			}
			process(t, buf, (size_t)n);
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
	t->max = max_line;
	t->sink.send = stdio_send;
	strcpy(t->session.key, "stdio");
	strcpy(t->session.caller, "stdio");
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
	if (mcpx_loop_watch(loop, &t->in) < 0) {
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
	free(t->buf);
	free(t);
}
