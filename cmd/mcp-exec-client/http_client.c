/*
 * http_client.c - libcurl for the client: one request at a time per handle,
 * replies decoded into JSON-RPC messages (see http_client.h).
 *
 * A handle keeps its connection alive between requests, so initialize,
 * tools/call and DELETE of one session reuse one TCP connection. Replies are
 * consumed as they arrive: an SSE stream is parsed event by event, so
 * progress notifications reach the caller while the code still runs and a
 * long stream never piles up in memory; a JSON body is buffered under a hard
 * cap and parsed at the end.
 *
 * It does not retry, follow redirects (a redirect would carry the token to
 * another origin) or interpret statuses; mcp_session.c does that.
 */
#include "http_client.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config.h"
#include "crypto.h"
#include "sse.h"

/* The largest reply we accept: a full 1 MiB of output is at most 6 MiB of
 * JSON escapes, twice (structuredContent and the text block); this leaves
 * room for servers configured with much larger output caps and still stops
 * a runaway or hostile server from exhausting memory. */
#define MAX_REPLY_BYTES ((size_t)256 << 20)
/* Connecting is quick or it is not going to work; this bounds the wait on a
 * black-holed address independently of a long run's timeout. */
#define CONNECT_TIMEOUT_S 10L
/* The longest token we send; secrets are far shorter than this. */
#define MAX_TOKEN_BYTES 4096

/* U+E000, a private-use character, marks where a NUL byte was (see
 * nul_escape). */
#define NUL_MARK "\xEE\x80\x80"
#define NUL_MARK_LEN ((size_t)3)

struct hc {
	CURL *curl;
	char *auth_header; /* "X-MCP-AUTH: <token>", wiped in hc_free */
	char errbuf[CURL_ERROR_SIZE];
};

/* Per-request receive state, shared by the header and write callbacks. */
struct rx {
	const struct hc_req *req;
	struct hc_reply *rep;
	enum { RX_UNDECIDED, RX_BUFFER, RX_SSE } mode;
	struct sse_parser sse;
	char *body;
	size_t len, cap;
	int err;        /* first failure inside a callback: -ENOMEM or -E2BIG */
	bool connected; /* the request went out on an established connection */
};

int hc_global_init(void)
{
	return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -ENOMEM;
}

void hc_global_cleanup(void)
{
	curl_global_cleanup();
}

/* ---- NUL-preserving JSON ------------------------------------------------ */

/*
 * cJSON decodes "\u0000" into a NUL byte inside a C string, which silently
 * cuts the string short: a program that prints "a\0b" would come back as
 * "a". Before parsing, the text is rewritten so that every string keeps its
 * full length: the mark U+E000 is doubled wherever it occurs (as raw UTF-8 or
 * as an escape) and "\u0000" becomes the mark followed by '0'. Decoding
 * (hc_string_bytes) reverses both. The rewrite only touches escapes and the
 * mark itself, so any other text parses exactly as before.
 */
static bool hex4_is(const char *s, unsigned want)
{
	unsigned v = 0;

	for (int i = 0; i < 4; i++) {
		int c = (unsigned char)s[i];
		if (!isxdigit(c))
			return false;
		v = v * 16 + (unsigned)(isdigit(c) ? c - '0' : tolower(c) - 'a' + 10);
	}
	return v == want;
}

static char *nul_escape(const char *in, size_t len, size_t *out_len)
{
	char *out, *o;
	size_t i = 0;

	/* Each rewrite at most doubles what it replaces. */
	if (len > (SIZE_MAX - 1) / 2)
		return NULL;
	out = malloc(len * 2 + 1);
	if (!out)
		return NULL;
	o = out;
	while (i < len) {
		if (in[i] == '\\' && i + 1 < len) {
			if (in[i + 1] == 'u' && i + 6 <= len && hex4_is(in + i + 2, 0)) {
				memcpy(o, "\\ue0000", 7);
				o += 7;
				i += 6;
			} else if (in[i + 1] == 'u' && i + 6 <= len &&
			           hex4_is(in + i + 2, 0xE000)) {
				memcpy(o, "\\ue000\\ue000", 12);
				o += 12;
				i += 6;
			} else {
				/* Any other escape, "\\" included, passes as a pair
				 * so its second character is never read as the start
				 * of another escape. */
				*o++ = in[i++];
				*o++ = in[i++];
			}
		} else if (i + NUL_MARK_LEN <= len && !memcmp(in + i, NUL_MARK, NUL_MARK_LEN)) {
			memcpy(o, NUL_MARK NUL_MARK, 2 * NUL_MARK_LEN);
			o += 2 * NUL_MARK_LEN;
			i += NUL_MARK_LEN;
		} else {
			*o++ = in[i++];
		}
	}
	*o = '\0';
	*out_len = (size_t)(o - out);
	return out;
}

cJSON *hc_json_parse(const char *text, size_t len)
{
	size_t n;
	char *esc = nul_escape(text, len, &n);
	cJSON *j;

	if (!esc)
		return NULL;
	j = cJSON_ParseWithLength(esc, n);
	free(esc);
	return j;
}

int hc_string_bytes(const cJSON *s, char **out, size_t *len)
{
	const char *in;
	size_t n, o = 0;
	char *buf;

	if (!cJSON_IsString(s) || !s->valuestring)
		return -EINVAL;
	in = s->valuestring;
	n = strlen(in);
	buf = malloc(n + 1);
	if (!buf)
		return -ENOMEM;
	for (size_t i = 0; i < n;) {
		if (i + NUL_MARK_LEN < n && !memcmp(in + i, NUL_MARK, NUL_MARK_LEN)) {
			const char *next = in + i + NUL_MARK_LEN;
			if (*next == '0') {
				buf[o++] = '\0';
				i += NUL_MARK_LEN + 1;
				continue;
			}
			if (i + 2 * NUL_MARK_LEN <= n && !memcmp(next, NUL_MARK, NUL_MARK_LEN)) {
				memcpy(buf + o, NUL_MARK, NUL_MARK_LEN);
				o += NUL_MARK_LEN;
				i += 2 * NUL_MARK_LEN;
				continue;
			}
		}
		buf[o++] = in[i++];
	}
	buf[o] = '\0';
	*out = buf;
	*len = o;
	return 0;
}

/* ---- reply decoding ----------------------------------------------------- */

/* Files one decoded message: responses are kept for the caller, anything
 * else (notifications) goes to the observer and is dropped, so a long
 * stream of progress costs no memory. Takes ownership of msg. */
static void deliver(struct rx *rx, cJSON *msg)
{
	if (cJSON_IsArray(msg)) {
		/* A batch reply: each element is a message of its own. */
		cJSON *el;
		while ((el = cJSON_DetachItemFromArray(msg, 0)) != NULL)
			deliver(rx, el);
		cJSON_Delete(msg);
		return;
	}
	if (!cJSON_IsObject(msg)) {
		rx->rep->bad_json = true;
		cJSON_Delete(msg);
		return;
	}
	if (cJSON_GetObjectItemCaseSensitive(msg, "id")) {
		if (!rx->rep->msgs)
			rx->rep->msgs = cJSON_CreateArray();
		if (rx->rep->msgs && cJSON_AddItemToArray(rx->rep->msgs, msg))
			return;
		rx->err = -ENOMEM;
	} else if (rx->req->on_notify) {
		rx->req->on_notify(rx->req->arg, msg);
	}
	cJSON_Delete(msg);
}

static int on_sse_event(void *arg, const char *event, const char *data, size_t len)
{
	struct rx *rx = arg;
	cJSON *msg;

	/* Only "message" events carry JSON-RPC (Streamable HTTP); others
	 * would be extensions we do not know. */
	if (strcmp(event, "message") != 0)
		return 0;
	/* An empty message carries nothing (some servers prime the stream
	 * with one); it is not a broken reply. */
	if (len == 0)
		return 0;
	msg = hc_json_parse(data, len);
	if (!msg) {
		rx->rep->bad_json = true;
		return 0;
	}
	deliver(rx, msg);
	return rx->err;
}

/* One line of printable ASCII from the start of a body, for messages: the
 * server's text must not be able to drive the user's terminal. */
static void body_snippet(const char *body, size_t len, char *out, size_t cap)
{
	size_t o = 0;

	for (size_t i = 0; i < len && o + 1 < cap; i++) {
		unsigned char c = (unsigned char)body[i];
		if (c == '\n' || c == '\r')
			break;
		out[o++] = (char)(c >= 0x20 && c < 0x7F ? c : '?');
	}
	while (o && out[o - 1] == ' ')
		o--;
	out[o] = '\0';
}

/* ---- libcurl callbacks -------------------------------------------------- */

static bool header_is(const char *line, size_t len, const char *name, const char **value,
                      size_t *value_len)
{
	size_t n = strlen(name);

	if (len <= n || line[n] != ':' || strncasecmp(line, name, n) != 0)
		return false;
	line += n + 1;
	len -= n + 1;
	while (len && (*line == ' ' || *line == '\t')) {
		line++;
		len--;
	}
	while (len && (line[len - 1] == '\r' || line[len - 1] == '\n' || line[len - 1] == ' ' ||
	               line[len - 1] == '\t'))
		len--;
	*value = line;
	*value_len = len;
	return true;
}

static size_t on_header(char *line, size_t size, size_t nmemb, void *arg)
{
	struct rx *rx = arg;
	struct hc_reply *rep = rx->rep;
	size_t len = size * nmemb, vlen, n;
	const char *v;

	if (len >= 5 && !memcmp(line, "HTTP/", 5)) {
		/* A new status line: an interim 100 Continue's headers are not
		 * the reply's. */
		rep->content_type[0] = '\0';
		rep->session_id[0] = '\0';
		rep->session_id_bad = false;
	} else if (header_is(line, len, "content-type", &v, &vlen)) {
		for (n = 0;
		     n < vlen && n + 1 < sizeof(rep->content_type) && v[n] != ';' && v[n] != ' ';
		     n++)
			rep->content_type[n] = (char)tolower((unsigned char)v[n]);
		rep->content_type[n] = '\0';
	} else if (header_is(line, len, "mcp-session-id", &v, &vlen)) {
		/* The spec allows only visible ASCII (0x21-0x7E); anything else
		 * could smuggle header syntax into our next request. */
		bool ok = vlen > 0 && vlen < sizeof(rep->session_id);
		for (n = 0; ok && n < vlen; n++)
			ok = v[n] >= 0x21 && v[n] <= 0x7E;
		if (ok) {
			memcpy(rep->session_id, v, vlen);
			rep->session_id[vlen] = '\0';
		} else {
			rep->session_id[0] = '\0';
			rep->session_id_bad = true;
		}
	}
	return len;
}

static int buffer_append(struct rx *rx, const char *data, size_t n)
{
	if (n > MAX_REPLY_BYTES - rx->len)
		return -E2BIG;
	if (rx->len + n + 1 > rx->cap) {
		size_t ncap = rx->cap ? rx->cap : 4096;
		char *nb;
		while (ncap < rx->len + n + 1)
			ncap *= 2;
		nb = realloc(rx->body, ncap);
		if (!nb)
			return -ENOMEM;
		rx->body = nb;
		rx->cap = ncap;
	}
	memcpy(rx->body + rx->len, data, n);
	rx->len += n;
	rx->body[rx->len] = '\0';
	return 0;
}

static size_t on_write(char *data, size_t size, size_t nmemb, void *arg)
{
	struct rx *rx = arg;
	size_t n = size * nmemb;
	int rc;

	/* Headers are complete before the first body byte, so the content
	 * type decides how the whole body is read. */
	if (rx->mode == RX_UNDECIDED) {
		rx->mode = !strcmp(rx->rep->content_type, "text/event-stream") ? RX_SSE : RX_BUFFER;
	}
	if (rx->mode == RX_SSE)
		rc = sse_feed(&rx->sse, data, n);
	else
		rc = buffer_append(rx, data, n);
	if (rc < 0) {
		rx->err = rc;
		return 0; /* makes curl stop with CURLE_WRITE_ERROR */
	}
	return n;
}

static int on_prereq(void *arg, char *conn_primary_ip, char *conn_local_ip, int conn_primary_port,
                     int conn_local_port)
{
	struct rx *rx = arg;

	rx->connected = true;
	return CURL_PREREQFUNC_OK;
}

/* ---- requests ----------------------------------------------------------- */

int hc_new(struct hc **out, const char *token, struct mcpx_err *err)
{
	struct hc *h;
	int rc = -ENOMEM;

	*out = NULL;
	h = calloc(1, sizeof(*h));
	if (!h)
		return mcpx_err_set(err, ENOMEM, "out of memory");
	if (token) {
		size_t n = strlen(token);
		bool ok = n > 0 && n <= MAX_TOKEN_BYTES;
		/* A CR or LF would end the header early and inject another
		 * one; no real token has control characters. */
		for (size_t i = 0; ok && i < n; i++)
			ok = (unsigned char)token[i] >= 0x20 && token[i] != 0x7F;
		if (!ok) {
			rc = mcpx_err_set(err, EINVAL,
			                  "the token is empty, too long or has control characters");
			goto fail;
		}
		h->auth_header = malloc(n + sizeof("X-MCP-AUTH: "));
		if (!h->auth_header) {
			rc = mcpx_err_set(err, ENOMEM, "out of memory");
			goto fail;
		}
		memcpy(h->auth_header, "X-MCP-AUTH: ", sizeof("X-MCP-AUTH: ") - 1);
		memcpy(h->auth_header + sizeof("X-MCP-AUTH: ") - 1, token, n + 1);
	}
	h->curl = curl_easy_init();
	if (!h->curl) {
		rc = mcpx_err_set(err, ENOMEM, "cannot initialise libcurl");
		goto fail;
	}
	/* Threads (bench) must not get signals from curl's name lookups. */
	curl_easy_setopt(h->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h->curl, CURLOPT_USERAGENT, "mcp-exec-client/" MCPX_VERSION);
	curl_easy_setopt(h->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h->curl, CURLOPT_FOLLOWLOCATION, 0L);
	/* A silent run keeps the connection idle for its whole timeout;
	 * keepalive probes stop NAT and load balancers from dropping it. */
	curl_easy_setopt(h->curl, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(h->curl, CURLOPT_ERRORBUFFER, h->errbuf);
	curl_easy_setopt(h->curl, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h->curl, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(h->curl, CURLOPT_PREREQFUNCTION, on_prereq);
	*out = h;
	return 0;
fail:
	hc_free(h);
	return rc;
}

void hc_free(struct hc *h)
{
	if (!h)
		return;
	if (h->curl)
		curl_easy_cleanup(h->curl);
	if (h->auth_header) {
		mcpx_wipe(h->auth_header, strlen(h->auth_header));
		free(h->auth_header);
	}
	free(h);
}

/* curl copies header strings into the list; the token's copy is wiped
 * before the list is freed. */
static void free_headers(struct curl_slist *list)
{
	for (struct curl_slist *l = list; l; l = l->next)
		mcpx_wipe(l->data, strlen(l->data));
	curl_slist_free_all(list);
}

static int add_header(struct curl_slist **list, const char *line)
{
	struct curl_slist *n = curl_slist_append(*list, line);

	if (!n)
		return -ENOMEM;
	*list = n;
	return 0;
}

static int build_headers(struct hc *h, const struct hc_req *req, struct curl_slist **out)
{
	struct curl_slist *list = NULL;
	char line[320];
	int rc;

	rc = add_header(&list, "Accept: application/json, text/event-stream");
	/* curl would send "Expect: 100-continue" for large bodies and wait a
	 * round trip for it; the server reads the body anyway. */
	if (rc == 0)
		rc = add_header(&list, "Expect:");
	if (rc == 0 && req->body)
		rc = add_header(&list, "Content-Type: application/json");
	if (rc == 0 && h->auth_header)
		rc = add_header(&list, h->auth_header);
	if (rc == 0 && req->session_id && req->session_id[0]) {
		snprintf(line, sizeof(line), "Mcp-Session-Id: %s", req->session_id);
		rc = add_header(&list, line);
	}
	if (rc == 0 && req->protocol_version && req->protocol_version[0]) {
		snprintf(line, sizeof(line), "MCP-Protocol-Version: %s", req->protocol_version);
		rc = add_header(&list, line);
	}
	if (rc < 0) {
		free_headers(list);
		return rc;
	}
	*out = list;
	return 0;
}

static int curl_failure(struct hc *h, const struct hc_req *req, const struct rx *rx, CURLcode cc,
                        struct mcpx_err *err)
{
	const char *detail = h->errbuf[0] ? h->errbuf : curl_easy_strerror(cc);

	if (rx->err == -E2BIG)
		return mcpx_err_set(err, E2BIG, "the reply from %s is larger than %zu MiB",
		                    req->url, MAX_REPLY_BYTES >> 20);
	if (rx->err == -ENOMEM)
		return mcpx_err_set(err, ENOMEM, "out of memory reading the reply");
	switch (cc) {
	case CURLE_UNSUPPORTED_PROTOCOL:
	case CURLE_URL_MALFORMAT:
		return mcpx_err_set(err, EINVAL, "invalid URL %s: %s", req->url, detail);
	case CURLE_COULDNT_RESOLVE_PROXY:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_CONNECT:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_CERTPROBLEM:
		return mcpx_err_set(err, ECONNREFUSED, "cannot connect to %s: %s", req->url,
		                    detail);
	case CURLE_OPERATION_TIMEDOUT:
		if (!rx->connected)
			return mcpx_err_set(err, ECONNREFUSED, "cannot connect to %s: %s", req->url,
			                    detail);
		return mcpx_err_set(err, ETIMEDOUT, "no reply from %s within %ld s", req->url,
		                    req->timeout_s);
	default:
		return mcpx_err_set(err, ECONNRESET, "connection to %s failed: %s", req->url,
		                    detail);
	}
}

/* The easy handle's options for req: URL, headers, where the reply goes,
 * the timeouts, and the method with its body. */
static void set_options(struct hc *h, const struct hc_req *req, struct curl_slist *headers,
                        struct rx *rx)
{
	curl_easy_setopt(h->curl, CURLOPT_URL, req->url);
	curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(h->curl, CURLOPT_HEADERDATA, rx);
	curl_easy_setopt(h->curl, CURLOPT_WRITEDATA, rx);
	curl_easy_setopt(h->curl, CURLOPT_PREREQDATA, rx);
	curl_easy_setopt(h->curl, CURLOPT_TIMEOUT, req->timeout_s);
	curl_easy_setopt(h->curl, CURLOPT_CONNECTTIMEOUT,
	                 req->timeout_s < CONNECT_TIMEOUT_S ? req->timeout_s : CONNECT_TIMEOUT_S);
	if (!strcmp(req->method, "POST")) {
		curl_easy_setopt(h->curl, CURLOPT_CUSTOMREQUEST, NULL);
		curl_easy_setopt(h->curl, CURLOPT_POST, 1L);
		curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, req->body ? req->body : "");
		curl_easy_setopt(h->curl, CURLOPT_POSTFIELDSIZE_LARGE,
		                 (curl_off_t)(req->body ? req->body_len : 0));
	} else {
		curl_easy_setopt(h->curl, CURLOPT_HTTPGET, 1L);
		curl_easy_setopt(h->curl, CURLOPT_CUSTOMREQUEST,
		                 strcmp(req->method, "GET") ? req->method : NULL);
	}
}

int hc_request(struct hc *h, const struct hc_req *req, struct hc_reply *rep, struct mcpx_err *err)
{
	struct curl_slist *headers = NULL;
	struct rx rx;
	CURLcode cc;
	int rc;

	memset(rep, 0, sizeof(*rep));
	memset(&rx, 0, sizeof(rx));
	rx.req = req;
	rx.rep = rep;
	rx.sse.on_event = on_sse_event;
	rx.sse.arg = &rx;
	rx.sse.max = MAX_REPLY_BYTES;
	h->errbuf[0] = '\0';

	rc = build_headers(h, req, &headers);
	if (rc < 0)
		return mcpx_err_set(err, ENOMEM, "out of memory");

	set_options(h, req, headers, &rx);

	cc = curl_easy_perform(h->curl);
	curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &rep->status);
	/* The list (with the token) is not needed once the request is out. */
	curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, NULL);
	free_headers(headers);

	if (cc != CURLE_OK) {
		rc = curl_failure(h, req, &rx, cc, err);
		goto out;
	}
	if (rx.mode == RX_SSE) {
		rc = sse_finish(&rx.sse);
		if (rc < 0) {
			rc = mcpx_err_set(err, -rc, "out of memory reading the reply");
			goto out;
		}
	} else if (rx.len) {
		body_snippet(rx.body, rx.len, rep->text, sizeof(rep->text));
		if (!strcmp(rep->content_type, "application/json")) {
			cJSON *msg = hc_json_parse(rx.body, rx.len);
			if (msg)
				deliver(&rx, msg);
			else
				rep->bad_json = true;
		}
	}
	rc = rx.err < 0 ? mcpx_err_set(err, -rx.err, "out of memory reading the reply") : 0;
out:
	sse_free(&rx.sse);
	free(rx.body);
	return rc;
}

void hc_reply_free(struct hc_reply *rep)
{
	cJSON_Delete(rep->msgs);
	rep->msgs = NULL;
}
