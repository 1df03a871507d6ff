/*
 * sse.h - an incremental parser for text/event-stream bodies.
 *
 * Bytes go in as they arrive from the network, in chunks of any size; each
 * complete event comes out through a callback with its type ("message" unless
 * an event: field said otherwise) and its data lines joined by "\n". It follows
 * the WHATWG "event stream interpretation": CRLF, LF and CR line endings,
 * comments, one optional space after the colon. It knows nothing about
 * JSON-RPC or HTTP; http_client.c decides what an event means.
 */
#ifndef MCPX_CLIENT_SSE_H
#define MCPX_CLIENT_SSE_H

#include <stdbool.h>
#include <stddef.h>

/* Called once per event; data is NUL-terminated (len excludes the NUL) and
 * valid only during the call. A negative return stops parsing and is
 * returned by sse_feed / sse_finish. */
typedef int (*sse_event_fn)(void *arg, const char *event, const char *data, size_t len);

struct sse_parser {
	sse_event_fn on_event;
	void *arg;
	size_t max; /* cap on one line and on one event's data, in bytes */

	/* Private state; zero-initialise the whole struct, then set the
	 * fields above. */
	char *line;
	size_t line_len, line_cap;
	char *data;
	size_t data_len, data_cap;
	bool have_data;
	char event[64];
	bool after_cr; /* the last byte was CR: a following LF belongs to it */
	bool started;  /* past the optional byte order mark */
};

/* Feeds bytes. Returns 0, -E2BIG when a line or an event exceeds max,
 * -ENOMEM, or the callback's negative return. */
int sse_feed(struct sse_parser *p, const char *buf, size_t len);

/* End of stream: a last event that lacks its blank line is still delivered
 * (lenient: the server always ends events properly, a proxy may not). */
int sse_finish(struct sse_parser *p);

/* Frees the buffers; the struct may be reused after zeroing. */
void sse_free(struct sse_parser *p);

#endif
