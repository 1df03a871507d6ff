/*
 * broker_wire.h - the framing of a run's broker channel.
 *
 * The channel is a stream socket. Each message, both ways, is one frame:
 *
 *   u32 json_len, u32 body_len   (big-endian)
 *   json_len bytes               one JSON object, UTF-8
 *   body_len bytes               raw body (request or response), may be 0
 *
 * Bodies travel raw so a megabyte response is a megabyte on the wire, not
 * a base64 string inside JSON. This module only frames: it never looks
 * inside the JSON (broker.c does) and never touches a descriptor except to
 * write queued frames to it.
 *
 * Reading: mcpx_wire_in collects one frame at a time from whatever bytes
 * arrive. A JSON part over MCPX_WIRE_MAX_JSON is a protocol error (the
 * stream cannot be trusted after it); a body over the reader's cap is read
 * and dropped, and the frame is marked oversize, so the request can be
 * refused politely and the stream stays in step.
 *
 * Writing: mcpx_wire_out queues whole frames and writes as much as the
 * socket takes; each frame carries a tag handed back once its last byte is
 * written, which is when the broker counts a request as no longer in flight
 * (so a run that stops reading cannot make the server queue without bound).
 */
#ifndef MCPX_BROKER_WIRE_H
#define MCPX_BROKER_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

#define MCPX_WIRE_HEADER_LEN 8
#define MCPX_WIRE_MAX_JSON (64u * 1024u)

struct mcpx_wire_in {
	unsigned char hdr[MCPX_WIRE_HEADER_LEN];
	size_t hdr_len;
	uint32_t json_len, body_len;
	struct mcpx_buf json; /* NUL-terminated once complete */
	struct mcpx_buf body;
	size_t body_cap;  /* larger bodies are dropped: oversize */
	size_t body_seen; /* body bytes consumed so far (kept or dropped) */
	bool oversize;
};

void mcpx_wire_in_init(struct mcpx_wire_in *in, size_t body_cap);
void mcpx_wire_in_free(struct mcpx_wire_in *in);

/* Consumes up to n bytes of p (*used says how many). Returns 1 when a frame
 * is complete (read in->json, in->body, in->oversize; then call
 * mcpx_wire_in_next), 0 when more bytes are needed, -EPROTO for a JSON part
 * that is empty or too large, -ENOMEM. */
int mcpx_wire_in_feed(struct mcpx_wire_in *in, const char *p, size_t n, size_t *used);

/* Forgets the completed frame; the next one starts. */
void mcpx_wire_in_next(struct mcpx_wire_in *in);

struct mcpx_wire_frame;

struct mcpx_wire_out {
	struct mcpx_wire_frame *head, *tail;
	size_t queued; /* frames not yet fully written */
	size_t bytes;  /* their bytes not yet written (headers included) */
};

/* Queues a frame: the JSON is copied, the body (malloc'd, may be NULL) is
 * taken over and freed once written. tag is handed to the sent callback.
 * Returns 0 or -ENOMEM (the body is freed either way). */
int mcpx_wire_out_push(struct mcpx_wire_out *out, const char *json, size_t json_len, char *body,
                       size_t body_len, void *tag);

/* Writes queued frames to the stream socket fd until done or it is
 * full, calling sent(tag, arg) for each frame completely written. Returns
 * 0 when the queue is empty, 1 when bytes remain (wait for writability), or
 * -errno (EPIPE: the run closed its end). */
int mcpx_wire_out_flush(struct mcpx_wire_out *out, int fd, void (*sent)(void *tag, void *arg),
                        void *arg);

/* Drops every queued frame, calling dropped(tag, arg) for each. */
void mcpx_wire_out_clear(struct mcpx_wire_out *out, void (*dropped)(void *tag, void *arg),
                         void *arg);

#endif
