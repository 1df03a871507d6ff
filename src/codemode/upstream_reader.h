/*
 * upstream_reader.h - reads one answer of an upstream MCP server (its
 * headers and body, as the network hands them over), whatever the pieces
 * it comes in: the same bytes give the same outcome whole, in chunks or
 * byte by byte. Private to src/codemode/upstream*.c; pure (no curl, no
 * loop), so that tests/fuzz/fuzz_upstream_reader.c can drive it.
 *
 * The body is one JSON value (Content-Type application/json, or anything
 * but an event stream) or an event stream (text/event-stream) read by the
 * rules of the HTML standard's event-stream interpretation: a leading
 * U+FEFF is skipped, a line ends at CR LF, LF or CR alone, a line starting
 * with ':' is a comment, "data" fields accumulate (joined by LF) until a
 * blank line dispatches them, other fields are read and ignored, and an
 * event the stream ends in the middle of is dropped.
 *
 * Each message (the JSON body, each event's data) is parsed strictly
 * (json.h: one value, nothing after it, numbers exact) after invalid UTF-8
 * is replaced with U+FFFD, so no byte an upstream sends reaches a run or a
 * client as invalid UTF-8.
 *
 * For a request (id >= 0) the answer is the JSON-RPC response to id: an
 * object with that id, no "method" (a request of the server, such as
 * sampling/createMessage, is not a response), and exactly one of "result"
 * and "error". Reading stops once it is in; the messages before it go to
 * on_message (progress, for one), and tools/list_changed is noted.
 *
 * Caps, counted in bytes of the body as they are read (never per network
 * chunk): a request's answer may use max_bytes up to and including the end
 * of the response (bytes after it are not read); a listening stream's
 * event (from one blank line to the next) may use max_bytes.
 *
 * Ownership: the reader owns its buffers and the response until
 * mcpx_upr_free, unless the caller takes the response (sets it NULL).
 */
#ifndef MCPX_UPSTREAM_READER_H
#define MCPX_UPSTREAM_READER_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

#define MCPX_UPR_SESSION_MAX 256

/* A message of the upstream on a listening stream (borrowed for the call). */
typedef void (*mcpx_upr_message_fn)(void *arg, const cJSON *msg);
/* An event's data, before it is parsed (borrowed for the call): for tests. */
typedef void (*mcpx_upr_event_fn)(void *arg, const char *data, size_t len);

struct mcpx_upr {
	/* Set by mcpx_upr_init; on_event may be set after it. */
	double id; /* the request's id; -1: no response is awaited */
	size_t max_bytes;
	bool listening; /* a listening stream: every message to on_message */
	/* Messages of the upstream that are not the response (before it,
	 * for a request); NULL: skipped. */
	mcpx_upr_message_fn on_message;
	mcpx_upr_event_fn on_event;
	void *arg;

	/* What the headers said (the last response's, after any 1xx). */
	bool sse;
	char session_id[MCPX_UPR_SESSION_MAX]; /* "" when none (or not visible ASCII) */

	/* What the body said. */
	cJSON *response;   /* the response to id, once it is in */
	bool list_changed; /* notifications/tools/list_changed came */
	bool too_large;    /* a cap was passed: reading stopped */
	size_t received;   /* body bytes read */

	/* The reader's own state. */
	struct mcpx_buf json; /* a JSON body */
	struct mcpx_buf data; /* the event's data */
	size_t event_bytes;   /* bytes since the last blank line */
	unsigned bom;         /* bytes of a leading BOM seen; 3: past it */
	bool cr;              /* the last byte ended a line with CR */
	int field;            /* the line's part: see upstream_reader.c */
	char name[8];         /* the field name read so far (at most "retry") */
	unsigned name_len;
};

/* Starts reading an answer to request id (-1: none awaited), or a
 * listening stream (listening: id is ignored, the cap is per event); each
 * message that is not the response goes to on_message when it is
 * non-NULL. */
void mcpx_upr_init(struct mcpx_upr *r, double id, size_t max_bytes, bool listening,
                   mcpx_upr_message_fn on_message, void *arg);
void mcpx_upr_free(struct mcpx_upr *r);

/* One header line as received ("Name: value\r\n", or a status line, which
 * starts a new response's headers). */
void mcpx_upr_header(struct mcpx_upr *r, const char *line, size_t n);

/* The next n bytes of the body. Returns true while reading goes on; false
 * once it is over (the response is in, or too_large), after which bytes
 * are not taken. */
bool mcpx_upr_body(struct mcpx_upr *r, const char *p, size_t n);

/* The body ended. Returns NULL when it held what was awaited (a response
 * is then in r->response; nothing is awaited for id < 0), else why not. */
const char *mcpx_upr_end(struct mcpx_upr *r);

#endif
