/*
 * upstream_reader.c - one answer of an upstream MCP server, read the same
 * whatever the network's chunking (upstream_reader.h).
 *
 * The event stream is read one byte at a time by a small state machine
 * (the line's field name, the space after its colon, its value), so that
 * no decision depends on where a chunk ends: a CR LF split between two
 * chunks is one line end, a BOM split is still a BOM, a cap is passed at
 * the same byte. Only a "data" field's value is kept; the names and values
 * of other fields and comments are read and dropped, so a line holds no
 * memory of its own.
 *
 * What it does not do: send anything, know curl, or decide what a transfer
 * error means (upstream_client.c).
 */
#include "upstream_reader.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http_field.h"
#include "json.h"
#include "utf8.h"

/* Where a line of the event stream is. */
enum field {
	F_NAME,       /* the field name (a blank line if the line ends here) */
	F_DATA_SPACE, /* just after "data:": one space is dropped */
	F_DATA_VALUE, /* the data field's value, kept */
	F_IGNORE,     /* a comment, or another field's value */
};

static const unsigned char BOM[3] = {0xEF, 0xBB, 0xBF};

void mcpx_upr_init(struct mcpx_upr *r, double id, size_t max_bytes, bool listening,
                   mcpx_upr_message_fn on_message, void *arg)
{
	memset(r, 0, sizeof(*r));
	r->id = listening ? -1 : id;
	r->listening = listening;
	r->max_bytes = max_bytes;
	r->on_message = on_message;
	r->arg = arg;
	r->field = F_NAME;
	mcpx_buf_init(&r->json, max_bytes);
	mcpx_buf_init(&r->data, max_bytes);
}

void mcpx_upr_free(struct mcpx_upr *r)
{
	cJSON_Delete(r->response);
	r->response = NULL;
	mcpx_buf_free(&r->json);
	mcpx_buf_free(&r->data);
}

/* ---- headers ----------------------------------------------------------- */

static bool named(const char *name, size_t n, const char *want)
{
	return n == strlen(want) && strncasecmp(name, want, n) == 0;
}

static void session_header(struct mcpx_upr *r, const char *v, size_t n)
{
	/* A session id is visible ASCII (the specification's rule); anything
	 * else, or one too long to hold, is not sent back. */
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)v[i] < 0x21 || (unsigned char)v[i] > 0x7e)
			return;
	if (n >= sizeof(r->session_id))
		return;
	memcpy(r->session_id, v, n);
	r->session_id[n] = '\0';
}

void mcpx_upr_header(struct mcpx_upr *r, const char *line, size_t n)
{
	const char *colon = memchr(line, ':', n), *v;
	size_t nlen, vlen;

	/* A status line starts a response (a 100 Continue comes before the
	 * real one): what an earlier one said does not hold. */
	if (n >= 5 && memcmp(line, "HTTP/", 5) == 0) {
		r->sse = false;
		r->session_id[0] = '\0';
		return;
	}
	if (!colon)
		return;
	nlen = (size_t)(colon - line);
	v = colon + 1;
	vlen = n - nlen - 1;
	mcpx_http_chomp(v, &vlen);
	mcpx_http_trim(&v, &vlen);
	if (named(line, nlen, "mcp-session-id")) {
		session_header(r, v, vlen);
	} else if (named(line, nlen, "content-type")) {
		/* The media type, without its parameters. */
		const char *semi = memchr(v, ';', vlen);
		size_t tlen = semi ? (size_t)(semi - v) : vlen;

		mcpx_http_trim(&v, &tlen);
		r->sse = named(v, tlen, "text/event-stream");
	}
}

/* ---- messages ---------------------------------------------------------- */

/* One message's JSON, invalid UTF-8 replaced first; NULL when it is not
 * one JSON value. */
static cJSON *parse_message(const char *p, size_t n)
{
	cJSON *m = NULL;
	char *clean;
	size_t clen;

	if (mcpx_utf8_valid(p, n)) {
		mcpx_json_parse(p, n, &m);
		return m;
	}
	if (!(clean = mcpx_utf8_sanitize(p, n, &clen)))
		return NULL;
	mcpx_json_parse(clean, clen, &m);
	free(clean);
	return m;
}

/* JSON-RPC 2.0's response to id: that id, no method (a request of the
 * server may carry any id), and either a result or an error. */
static bool has(const cJSON *m, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(m, key) != NULL;
}

static bool is_response(const cJSON *m, double id)
{
	const cJSON *mid = cJSON_GetObjectItemCaseSensitive(m, "id");

	return id >= 0 && cJSON_IsObject(m) && !has(m, "method") && cJSON_IsNumber(mid) &&
	       mid->valuedouble == id && has(m, "result") != has(m, "error");
}

static bool is_list_changed(const cJSON *m)
{
	const cJSON *method = cJSON_GetObjectItemCaseSensitive(m, "method");

	return cJSON_IsString(method) && !has(m, "id") &&
	       strcmp(method->valuestring, "notifications/tools/list_changed") == 0;
}

/* An event's data (or the JSON body). */
static void take_message(struct mcpx_upr *r, const char *p, size_t n)
{
	cJSON *m;

	if (r->on_event)
		r->on_event(r->arg, p, n);
	if (!(m = parse_message(p, n)))
		return;
	if (!r->listening && !r->response && is_response(m, r->id)) {
		r->response = m;
		return;
	}
	if (!r->listening && is_list_changed(m))
		r->list_changed = true;
	if (r->on_message && cJSON_IsObject(m))
		r->on_message(r->arg, m);
	cJSON_Delete(m);
}

/* ---- the event stream -------------------------------------------------- */

static void dispatch(struct mcpx_upr *r)
{
	/* An event without data is not dispatched; the data's last LF (each
	 * data line added one) is not part of it. */
	if (r->data.len) {
		r->data.len--;
		take_message(r, r->data.data, r->data.len);
	}
	mcpx_buf_reset(&r->data);
	r->event_bytes = 0;
}

static bool name_is(const struct mcpx_upr *r, const char *want)
{
	return r->name_len == strlen(want) && memcmp(r->name, want, r->name_len) == 0;
}

/* Data bytes never outnumber the bytes read, which the caps bound: a
 * failed append is out of memory, which ends the reading as too large. */
static void line_end(struct mcpx_upr *r)
{
	if (r->field == F_NAME && r->name_len == 0)
		dispatch(r);
	else if ((r->field == F_NAME && name_is(r, "data")) || r->field == F_DATA_SPACE ||
	         r->field == F_DATA_VALUE)
		r->too_large |= mcpx_buf_add(&r->data, "\n", 1) < 0;
	r->field = F_NAME;
	r->name_len = 0;
}

static void line_byte(struct mcpx_upr *r, char c)
{
	switch (r->field) {
	case F_NAME:
		if (c != ':') {
			/* Longer names are none of the fields: counted, not kept. */
			if (r->name_len < sizeof(r->name))
				r->name[r->name_len] = c;
			if (r->name_len <= sizeof(r->name))
				r->name_len++;
			return;
		}
		/* A line starting with ':' is a comment. */
		r->field = r->name_len && name_is(r, "data") ? F_DATA_SPACE : F_IGNORE;
		return;
	case F_DATA_SPACE:
		r->field = F_DATA_VALUE;
		if (c == ' ')
			return;
		/* fall through */
	case F_DATA_VALUE:
		r->too_large |= mcpx_buf_add(&r->data, &c, 1) < 0;
		return;
	default:
		return;
	}
}

/* One byte of the stream after the BOM; false when reading is over. */
static bool sse_byte(struct mcpx_upr *r, char c)
{
	/* A listening stream's cap is per event. */
	if (r->listening && ++r->event_bytes > r->max_bytes) {
		r->too_large = true;
		return false;
	}
	if (c == '\n' && r->cr) {
		r->cr = false; /* the LF of a CR LF */
		return true;
	}
	r->cr = c == '\r';
	if (c == '\n' || c == '\r')
		line_end(r);
	else
		line_byte(r, c);
	return !r->response && !r->too_large;
}

static bool sse_body(struct mcpx_upr *r, const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)p[i];

		/* A request's answer is capped as a whole, up to its response. */
		if (++r->received > r->max_bytes && !r->listening) {
			r->too_large = true;
			return false;
		}
		if (r->bom < 3) {
			unsigned held = r->bom;

			if (c == BOM[held]) {
				r->bom++;
				continue;
			}
			/* Not a BOM: what looked like its start is text. */
			r->bom = 3;
			for (unsigned k = 0; k < held; k++)
				if (!sse_byte(r, (char)BOM[k]))
					return false;
		}
		if (!sse_byte(r, (char)c))
			return false;
	}
	return true;
}

bool mcpx_upr_body(struct mcpx_upr *r, const char *p, size_t n)
{
	if (r->response || r->too_large)
		return false;
	if (r->sse)
		return sse_body(r, p, n);
	r->received += n;
	if (r->received > r->max_bytes || mcpx_buf_add(&r->json, p, n) < 0) {
		r->too_large = true;
		return false;
	}
	return true;
}

const char *mcpx_upr_end(struct mcpx_upr *r)
{
	if (r->id < 0 || r->listening)
		return NULL;
	if (!r->sse && !r->response)
		take_message(r, r->json.data ? r->json.data : "", r->json.len);
	if (r->response)
		return NULL;
	/* An event the stream ended in the middle of is not dispatched. */
	return r->sse ? "the upstream's event stream ended without the response"
	              : "the upstream's answer is not a JSON-RPC response to the request";
}
