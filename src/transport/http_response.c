/*
 * http_response.c - the response half of http.h: what transports call to
 * answer, and the writer that turns it into libwebsockets writes.
 *
 * A response is queued in the connection's capped buffers (status,
 * headers, body bytes) and written from LWS_CALLBACK_HTTP_WRITEABLE in
 * chunks, the only place lws allows it. Every response carries
 * "Connection: close" and the connection closes once it is written (see
 * http_conn.c for why none is kept open). lws delivers writeable callbacks
 * only to a connection whose rx is on, so a request in flight has rx turned
 * on while there is something to write and off again when the queue is
 * empty. A stream (SSE) whose client reads too slowly for the queue's cap
 * is closed rather than buffered without bound.
 *
 * It does not read requests and knows nothing about MCP.
 */
#include "http_conn.h"

#include <errno.h>
#include <libwebsockets.h>
#include <stdio.h>
#include <string.h>

#include "metrics.h"

#define WRITE_CHUNK 32768u

static void want_write(struct mcpx_http_conn *c)
{
	mcpx_conn_rx(c, true);
	lws_callback_on_writable(c->wsi);
}

static void start(struct mcpx_http_conn *c, int status, const char *ctype, long long content_length,
                  const char *extra, bool sse)
{
	struct mcpx_http_response *r = &c->resp;

	r->started = true;
	r->status = status;
	snprintf(r->content_type, sizeof(r->content_type), "%s", ctype ? ctype : "");
	r->content_length = content_length;
	r->sse = sse;
	/* The transports' extra headers are a few fixed lines; one that does
	 * not fit is a bug, and an error status says so. */
	if (extra && mcpx_buf_adds(&r->extra, extra) < 0)
		r->status = 500;
	mcpx_metrics_http_response(r->status);
	want_write(c);
}

void mcpx_http_respond(struct mcpx_http_conn *c, int status, const char *content_type,
                       const char *body, size_t len, const char *extra_headers)
{
	if (!c || c->resp.started)
		return;
	if (len && mcpx_buf_add(&c->resp.out, body, len) < 0) {
		mcpx_buf_reset(&c->resp.out);
		len = 0;
		status = 500;
	}
	c->resp.ended = true;
	start(c, status, content_type, (long long)len, extra_headers, false);
}

void mcpx_http_text(struct mcpx_http_conn *c, int status, const char *body, const char *extra)
{
	mcpx_http_respond(c, status, "text/plain; charset=utf-8", body, strlen(body), extra);
}

void mcpx_http_sse_begin(struct mcpx_http_conn *c, const char *extra_headers)
{
	if (!c || c->resp.started)
		return;
	start(c, 200, "text/event-stream", -1, extra_headers, true);
}

/* Appends to a stream; a client too slow for the cap loses the stream. */
static void stream_add(struct mcpx_http_conn *c, const char *p, size_t n)
{
	if (c->resp.broken || mcpx_buf_add(&c->resp.out, p, n) == 0)
		return;
	c->resp.broken = true;
	c->resp.ended = true;
}

void mcpx_http_sse_event(struct mcpx_http_conn *c, const char *event, const char *id,
                         const char *data, size_t len)
{
	char line[300];
	size_t i = 0;

	if (!c || !c->resp.sse || c->resp.ended)
		return;
	if (event) {
		snprintf(line, sizeof(line), "event: %s\n", event);
		stream_add(c, line, strlen(line));
	}
	if (id) {
		snprintf(line, sizeof(line), "id: %s\n", id);
		stream_add(c, line, strlen(line));
	}
	/* Each line of data becomes its own data: field. */
	do {
		const char *nl = memchr(data + i, '\n', len - i);
		size_t n = nl ? (size_t)(nl - (data + i)) : len - i;
		stream_add(c, "data: ", 6);
		stream_add(c, data + i, n);
		stream_add(c, "\n", 1);
		i += n + (nl ? 1 : 0);
	} while (i < len);
	stream_add(c, "\n", 1);
	want_write(c);
}

void mcpx_http_sse_comment(struct mcpx_http_conn *c, const char *text)
{
	if (!c || !c->resp.sse || c->resp.ended)
		return;
	stream_add(c, ": ", 2);
	stream_add(c, text, strlen(text));
	stream_add(c, "\n\n", 2);
	want_write(c);
}

void mcpx_http_sse_end(struct mcpx_http_conn *c)
{
	if (!c || c->resp.ended)
		return;
	c->resp.ended = true;
	want_write(c);
}

void mcpx_http_on_close(struct mcpx_http_conn *c, void (*fn)(void *arg), void *arg)
{
	c->on_close = fn;
	c->close_arg = arg;
}

void mcpx_http_forget(struct mcpx_http_conn *c)
{
	if (c) {
		c->on_close = NULL;
		c->close_arg = NULL;
	}
}

/* ---- writing ---- */

static int add_header(struct mcpx_http_conn *c, const char *name, const char *v, size_t vlen,
                      unsigned char **p, unsigned char *end)
{
	return lws_add_http_header_by_name(c->wsi, (const unsigned char *)name,
	                                   (const unsigned char *)v, (int)vlen, p, end);
}

/* The transport's "Name: value\r\n" lines; lws wants "name:" lower-case. */
static int add_extra_headers(struct mcpx_http_conn *c, unsigned char **p, unsigned char *end)
{
	const char *h = mcpx_buf_str(&c->resp.extra);

	while (*h) {
		const char *colon = strchr(h, ':'), *eol = strstr(h, "\r\n"), *v;
		char name[64];
		size_t nlen;

		if (!colon || !eol || colon > eol || (size_t)(colon - h) + 2 > sizeof(name))
			return -1;
		nlen = (size_t)(colon - h);
		for (size_t i = 0; i < nlen; i++)
			name[i] = (char)((h[i] >= 'A' && h[i] <= 'Z') ? h[i] + 32 : h[i]);
		memcpy(name + nlen, ":", 2);
		for (v = colon + 1; *v == ' '; v++)
			;
		if (add_header(c, name, v, (size_t)(eol - v), p, end))
			return -1;
		h = eol + 2;
	}
	return 0;
}

static int write_headers(struct mcpx_http_conn *c)
{
	unsigned char buf[LWS_PRE + 4096], *start = buf + LWS_PRE, *p = start,
	                                   *end = buf + sizeof(buf) - 1;
	const struct mcpx_http_response *r = &c->resp;

	if (lws_add_http_common_headers(c->wsi, (unsigned)r->status,
	                                r->content_type[0] ? r->content_type : NULL,
	                                r->content_length < 0 ? LWS_ILLEGAL_HTTP_CONTENT_LEN
	                                                      : (lws_filepos_t)r->content_length,
	                                &p, end))
		return -1;
	/* Without a length lws adds "connection: close" itself. */
	if (r->content_length >= 0 && add_header(c, "connection:", "close", 5, &p, end))
		return -1;
	if (r->sse && (add_header(c, "cache-control:", "no-cache", 8, &p, end) ||
	               add_header(c, "x-accel-buffering:", "no", 2, &p, end)))
		return -1;
	if (add_extra_headers(c, &p, end) || lws_finalize_write_http_header(c->wsi, start, &p, end))
		return -1;
	/* An event stream has no timeout of lws's (the connection's own
	 * deadlines apply) and needs no header storage any more. This is what
	 * lws_http_mark_sse does for an HTTP/1 stream, without its call to
	 * lws_mux_mark_immortal, which logs "not h2 substream" at error level
	 * for every HTTP/1 stream in lws 4.1.6 (this server speaks only
	 * HTTP/1). */
	if (r->sse) {
		lws_http_headers_detach(c->wsi);
		lws_set_timeout(c->wsi, NO_PENDING_TIMEOUT, 0);
	}
	return 0;
}

/* Writes one chunk of the queued body. Returns -1 on a failed write. */
static int write_chunk(struct mcpx_http_conn *c)
{
	struct mcpx_http_response *r = &c->resp;
	unsigned char buf[LWS_PRE + WRITE_CHUNK];
	size_t n = r->out.len - r->out_off;
	bool last;

	if (n > WRITE_CHUNK)
		n = WRITE_CHUNK;
	last = r->ended && !r->sse && r->out_off + n == r->out.len;
	memcpy(buf + LWS_PRE, r->out.data + r->out_off, n);
	if (lws_write(c->wsi, buf + LWS_PRE, n, last ? LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP) <
	    (int)n)
		return -1;
	r->out_off += n;
	if (r->out_off == r->out.len) {
		mcpx_buf_reset(&r->out);
		r->out_off = 0;
	}
	return 0;
}

bool mcpx_conn_response_done(const struct mcpx_http_conn *c)
{
	const struct mcpx_http_response *r = &c->resp;

	return r->started && r->ended && r->headers_sent && r->out_off == r->out.len &&
	       !lws_partial_buffered(c->wsi);
}

/* Returns -1 to close the connection, 0 to keep it for now. */
int mcpx_conn_writeable(struct mcpx_http_conn *c)
{
	struct mcpx_http_response *r = &c->resp;

	if (!r->started)
		return 0;
	if (r->broken)
		return -1;
	if (!r->headers_sent) {
		if (write_headers(c) < 0)
			return -1;
		r->headers_sent = true;
	}
	if (r->out_off < r->out.len && write_chunk(c) < 0)
		return -1;
	if (r->out_off < r->out.len || lws_partial_buffered(c->wsi)) {
		lws_callback_on_writable(c->wsi);
		return 0;
	}
	if (!r->ended) {
		/* A stream between events: back to not reading. */
		if (c->phase == PH_DISPATCHED)
			mcpx_conn_rx(c, false);
		return 0;
	}
	/* Written. A body still on its way in is read and dropped first, so
	 * the client can finish sending and see the answer. */
	return c->body_done ? -1 : 0;
}
