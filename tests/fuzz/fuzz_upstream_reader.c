/*
 * fuzz_upstream_reader.c - an upstream's answer read the same whatever the
 * network's chunking (upstream_reader.h, issue 34 item 4), with two
 * oracles:
 *
 *   1. the body fed whole, in chunks of 1..N bytes, and byte by byte gives
 *      the same outcome: the same events in the same order, the same
 *      response (printed), list_changed, too_large, the same count of
 *      bytes read before reading stopped (unless a JSON body passed its
 *      cap, which is noticed a chunk at a time), and the same verdict at
 *      the end;
 *   2. with no cap in the way, an event stream dispatches exactly the
 *      events a reference splitter, written from the HTML standard's
 *      event-stream rules and run on the whole body, dispatches (and a
 *      listening stream hands on exactly those that parse as objects).
 *
 * Input: byte 0 picks the mode (bit 0: event stream; bit 1: a listening
 * stream, else a request with id 1; bits 2-3: the cap: none, 64, 300 or
 * 2000 bytes), byte 1 seeds the chunk sizes, the rest is the body.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "upstream_reader.h"
#include "utf8.h"

#define MAX_EVENTS 4096

struct log {
	size_t n, used;
	size_t off[MAX_EVENTS + 1];
	char store[1 << 17];
	unsigned messages;
};

static void record(struct log *lg, const char *p, size_t len)
{
	if (lg->n >= MAX_EVENTS || lg->used + len > sizeof(lg->store))
		abort();
	memcpy(lg->store + lg->used, p, len);
	lg->off[lg->n++] = lg->used;
	lg->used += len;
	lg->off[lg->n] = lg->used;
}

static void on_event(void *arg, const char *data, size_t len)
{
	record(arg, data, len);
}

static void on_message(void *arg, const cJSON *msg)
{
	struct log *lg = arg;

	if (!cJSON_IsObject(msg))
		abort();
	lg->messages++;
}

static bool same_log(const struct log *a, const struct log *b)
{
	return a->n == b->n && a->used == b->used &&
	       memcmp(a->off, b->off, a->n * sizeof(size_t)) == 0 &&
	       memcmp(a->store, b->store, a->used) == 0 && a->messages == b->messages;
}

struct outcome {
	struct log log;
	char *response;
	bool list_changed, too_large, sse;
	size_t received;
	const char *end;
};

static uint32_t next_rand(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

/* Reads body in chunks: chunk 0 means whole, 1 byte by byte, else sizes
 * from the seed (1..chunk). */
static void read_body(struct outcome *o, uint8_t mode, const char *body, size_t n, size_t chunk,
                      uint32_t seed)
{
	static const size_t caps[] = {SIZE_MAX / 2, 64, 300, 2000};
	bool listening = mode & 2;
	struct mcpx_upr r;
	size_t off = 0;

	/* Not the store: it is read only up to used. */
	o->log.n = o->log.used = o->log.off[0] = o->log.messages = 0;
	mcpx_upr_init(&r, 1, caps[(mode >> 2) & 3], listening, listening ? on_message : NULL,
	              &o->log);
	r.on_event = on_event;
	mcpx_upr_header(&r, "HTTP/1.1 200 OK\r\n", 17);
	if (mode & 1)
		mcpx_upr_header(&r, "Content-Type: text/event-stream; charset=utf-8\r\n", 47);
	else
		mcpx_upr_header(&r, "Content-Type: application/json\r\n", 32);
	while (off < n) {
		size_t len = chunk == 0 ? n : chunk == 1 ? 1 : 1 + next_rand(&seed) % chunk;

		if (len > n - off)
			len = n - off;
		if (!mcpx_upr_body(&r, body + off, len))
			break;
		off += len;
	}
	o->end = r.too_large ? NULL : mcpx_upr_end(&r);
	o->response = r.response ? mcpx_json_print_exact(r.response) : NULL;
	o->list_changed = r.list_changed;
	o->too_large = r.too_large;
	o->received = r.received;
	o->sse = r.sse;
	mcpx_upr_free(&r);
}

static bool same(const struct outcome *a, const struct outcome *b)
{
	bool json_cap = a->too_large && !a->sse;

	return same_log(&a->log, &b->log) && a->list_changed == b->list_changed &&
	       a->too_large == b->too_large && (json_cap || a->received == b->received) &&
	       a->end == b->end &&
	       ((!a->response && !b->response) ||
	        (a->response && b->response && strcmp(a->response, b->response) == 0));
}

/* ---- the reference: the HTML standard's event-stream rules, on the whole
 * stream at once ---------------------------------------------------------- */

static void reference(const char *p, size_t n, struct log *lg, char *data)
{
	size_t i = 0, dlen = 0;

	if (n >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0)
		i = 3;
	while (i < n) {
		size_t e = i, flen, vstart;

		while (e < n && p[e] != '\r' && p[e] != '\n')
			e++;
		if (e == n)
			break; /* an incomplete line at the end is dropped with its event */
		if (e == i) {
			/* Dispatch: not when empty; the last LF removed. */
			if (dlen)
				record(lg, data, dlen - 1);
			dlen = 0;
		} else if (p[i] != ':') {
			const char *colon = memchr(p + i, ':', e - i);

			flen = colon ? (size_t)(colon - (p + i)) : e - i;
			vstart = colon ? flen + 1 : e - i;
			if (colon && vstart < e - i && p[i + vstart] == ' ')
				vstart++;
			if (flen == 4 && memcmp(p + i, "data", 4) == 0) {
				memcpy(data + dlen, p + i + vstart, e - i - vstart);
				dlen += e - i - vstart;
				data[dlen++] = '\n';
			}
		}
		i = e + (p[e] == '\r' && e + 1 < n && p[e + 1] == '\n' ? 2 : 1);
	}
}

/* How many of the logged events parse as a JSON object (what a listening
 * stream hands on). */
static unsigned objects(const struct log *lg)
{
	unsigned k = 0;

	for (size_t i = 0; i < lg->n; i++) {
		cJSON *m = NULL;
		char *clean;
		size_t len = lg->off[i + 1] - lg->off[i];

		/* The reader replaces invalid UTF-8 first. */
		clean = mcpx_utf8_sanitize(lg->store + lg->off[i], len, &len);
		if (clean && mcpx_json_parse(clean, len, &m) == 0 && cJSON_IsObject(m))
			k++;
		cJSON_Delete(m);
		free(clean);
	}
	return k;
}

static struct outcome whole, chunked, bytes;
static struct log ref;
static char ref_data[1 << 17];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t mode;
	const char *body;
	size_t n;

	if (size < 2 || size > 60000)
		return 0;
	mode = data[0];
	body = (const char *)data + 2;
	n = size - 2;
	read_body(&whole, mode, body, n, 0, 0);
	read_body(&chunked, mode, body, n, 2 + data[1] % 31, 0x9E3779B9u ^ data[1]);
	read_body(&bytes, mode, body, n, 1, 0);
	if (!same(&whole, &chunked) || !same(&whole, &bytes))
		abort();
	/* The reference, where no cap was met: a listening stream reads the
	 * whole body; a request's stream stops at its response, which must
	 * be where the reference's events agree up to. */
	if ((mode & 1) && !whole.too_large) {
		ref.n = ref.used = ref.off[0] = ref.messages = 0;
		reference(body, n, &ref, ref_data);
		if (mode & 2) {
			ref.messages = objects(&ref);
			if (!same_log(&whole.log, &ref))
				abort();
		} else {
			if (whole.log.n > ref.n ||
			    memcmp(whole.log.off, ref.off, (whole.log.n + 1) * sizeof(size_t)) !=
			        0 ||
			    memcmp(whole.log.store, ref.store, whole.log.used) != 0)
				abort();
			/* Without a response, every event was read. */
			if (!whole.response && whole.log.n != ref.n)
				abort();
		}
	}
	free(whole.response);
	free(chunked.response);
	free(bytes.response);
	return 0;
}
