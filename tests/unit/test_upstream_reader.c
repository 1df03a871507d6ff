/*
 * test_upstream_reader.c - an upstream's answer read the same whatever the
 * network's chunking (upstream_reader.h; issue 34 item 4): each finding of
 * the differential fuzzing, fed whole, in two pieces at every split point,
 * and byte by byte. tests/fuzz/fuzz_upstream_reader.c searches for more.
 */
#include "upstream_reader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "json.h"

struct seen {
	unsigned messages;
	char last[256];
};

static void on_message(void *arg, const cJSON *msg)
{
	struct seen *s = arg;
	char *t = mcpx_json_print_exact(msg);

	s->messages++;
	snprintf(s->last, sizeof(s->last), "%s", t ? t : "");
	free(t);
}

/* What reading body gave, printed: "<response or -> <verdict> lc=<0|1>
 * big=<0|1> msgs=<n>". */
static void outcome(const char *ctype, const char *headers, double id, size_t cap, const char *body,
                    size_t n, const size_t *cuts, size_t ncuts, char *out, size_t outlen)
{
	struct seen seen = {0};
	struct mcpx_upr r;
	char line[512];
	const char *why;
	char *resp;
	size_t off = 0;

	mcpx_upr_init(&r, id, cap, id < 0, id < 0 ? on_message : NULL, &seen);
	mcpx_upr_header(&r, "HTTP/1.1 200 OK\r\n", 17);
	snprintf(line, sizeof(line), "Content-Type: %s\r\n", ctype);
	mcpx_upr_header(&r, line, strlen(line));
	for (const char *h = headers; h && *h;) {
		const char *e = strchr(h, '\n');

		mcpx_upr_header(&r, h, (size_t)(e - h + 1));
		h = e + 1;
	}
	for (size_t i = 0; i <= ncuts; i++) {
		size_t end = i < ncuts ? cuts[i] : n;

		if (end > off && !mcpx_upr_body(&r, body + off, end - off))
			break;
		off = end > off ? end : off;
	}
	why = r.too_large ? "too_large" : mcpx_upr_end(&r);
	resp = r.response ? mcpx_json_print_exact(r.response) : NULL;
	snprintf(out, outlen, "%s %s lc=%d msgs=%u last=%s session=%s", resp ? resp : "-",
	         why ? why : "ok", r.list_changed, seen.messages, seen.last, r.session_id);
	free(resp);
	mcpx_upr_free(&r);
}

/* body read whole must give want; every split into two pieces, and byte
 * by byte, must give the same. */
static void expect(const char *what, const char *ctype, double id, size_t cap, const char *body,
                   const char *want)
{
	size_t n = strlen(body), *cuts = malloc((n + 1) * sizeof(size_t));
	char whole[1024], other[1024];

	outcome(ctype, NULL, id, cap, body, n, NULL, 0, whole, sizeof(whole));
	if (strncmp(whole, want, strlen(want)) != 0) {
		fprintf(stderr, "%s: got   %s\n%s: wanted %s\n", what, whole, what, want);
		CHECK(!"outcome");
	}
	for (size_t k = 1; k < n; k++) {
		outcome(ctype, NULL, id, cap, body, n, &k, 1, other, sizeof(other));
		if (strcmp(whole, other) != 0) {
			fprintf(stderr, "%s split at %zu: %s\n  whole: %s\n", what, k, other,
			        whole);
			CHECK(!"split");
			break;
		}
	}
	for (size_t k = 0; k < n; k++)
		cuts[k] = k + 1;
	outcome(ctype, NULL, id, cap, body, n, cuts, n, other, sizeof(other));
	CHECK_STR(other, whole);
	free(cuts);
}

#define SSE "text/event-stream"
#define RESP "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"n\":0.30000000000000004}}"
#define NOTE                                                                                       \
	"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"data\":\"x\"}}"
#define CHANGED "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}"

static void test_line_ends_and_bom(void)
{
	expect("LF", SSE, 7, 4096, "event: message\ndata: " RESP "\n\n", RESP " ok lc=0");
	expect("CRLF", SSE, 7, 4096, "data: " NOTE "\r\n\r\ndata: " RESP "\r\n\r\n",
	       RESP " ok lc=0");
	/* CR alone ends a line (before: the response was never seen). */
	expect("CR", SSE, 7, 4096, ": hi\rdata: " CHANGED "\r\rdata: " RESP "\r\r",
	       RESP " ok lc=1");
	/* One leading BOM is skipped (before: "\xEF\xBB\xBF" + "data" was no
	 * field of the first line). */
	expect("BOM", SSE, 7, 4096,
	       "\xEF\xBB\xBF"
	       "data: " RESP "\n\n",
	       RESP " ok");
	/* Data lines join with LF; "data" without a colon is an empty line
	 * of data; other fields are ignored. */
	expect("multi-line", SSE, 7, 4096,
	       "data: {\"jsonrpc\":\"2.0\",\ndata:\"id\":7,\ndata\ndata: \"result\":{}}\nid: 3\n"
	       "retry: 9\nevent: x\n\n",
	       "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}} ok");
	/* An event the stream ends in the middle of is dropped. */
	expect("cut", SSE, 7, 4096, "data: " RESP "\n",
	       "- the upstream's event stream ended without the response");
}

static void test_responses(void)
{
	/* A request of the server carrying our id is not the response
	 * (before: taken as it, in a JSON body). */
	expect("request in JSON", "application/json", 7, 4096,
	       "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"sampling/createMessage\",\"params\":{},"
	       "\"result\":{\"x\":1}}",
	       "- the upstream's answer is not a JSON-RPC response to the request");
	expect("request in a stream", SSE, 7, 4096,
	       "data: {\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"sampling/createMessage\"}\n\n"
	       "data: " RESP "\n\n",
	       RESP " ok");
	/* Trailing bytes after the value (before: accepted). */
	expect("trailing", "application/json", 7, 4096, RESP " x",
	       "- the upstream's answer is not a JSON-RPC response to the request");
	expect("trailing whitespace", "application/json", 7, 4096, RESP " \r\n", RESP " ok");
	expect("both result and error", "application/json", 7, 4096,
	       "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{},\"error\":{}}",
	       "- the upstream's answer is not");
	expect("another id", "application/json", 7, 4096,
	       "{\"jsonrpc\":\"2.0\",\"id\":8,\"result\":{}}", "- the upstream's answer is not");
	/* Invalid UTF-8 arrives as U+FFFD, never as raw bytes. */
	expect("bad UTF-8", "application/json", 7, 4096,
	       "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"t\":\"a\xff"
	       "b\xc3\"}}",
	       "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"t\":\"a\xef\xbf\xbd"
	       "b\xef\xbf\xbd\"}} ok");
	/* The media type with parameters, in any case. */
	expect("charset", "Text/Event-Stream; charset=utf-8", 7, 4096, "data: " RESP "\n\n",
	       RESP " ok");
}

static void test_caps(void)
{
	char body[4096];

	/* A request's answer is capped up to its response, however it is
	 * cut (before: TOO_LARGE whole, OK when the response came in a chunk
	 * of its own). */
	snprintf(body, sizeof(body), "data: " RESP "\n\n: %0900d\n\n", 0);
	expect("padding after the response", SSE, 7, 200, body, RESP " ok");
	snprintf(body, sizeof(body), ": %0900d\n\ndata: " RESP "\n\n", 0);
	expect("padding before the response", SSE, 7, 200, body, "- too_large");
	/* A listening stream's cap is per event, counted per byte of the
	 * event (before: per write, so several small events in one write
	 * passed it together). */
	snprintf(body, sizeof(body),
	         "data: " NOTE "\n\ndata: " NOTE "\n\ndata: " NOTE "\n\ndata: " CHANGED "\n\n");
	expect("small events", SSE, -1, 120, body, "- ok lc=0 msgs=4 last=" CHANGED);
	snprintf(body, sizeof(body), "data: " NOTE NOTE "\n\ndata: " CHANGED "\n\n");
	expect("a large event", SSE, -1, 120, body, "- too_large lc=0 msgs=0");
}

static void test_headers(void)
{
	char out[1024];

	/* A trailing tab is optional whitespace (before: the id was
	 * dropped); a value that is not visible ASCII is not kept. */
	outcome("application/json", "Mcp-Session-Id: abc-1\t\r\n", 7, 4096, RESP, strlen(RESP),
	        NULL, 0, out, sizeof(out));
	CHECK(strstr(out, "session=abc-1") != NULL);
	outcome("application/json", "mcp-session-id:\t \tabc-2 \r\n", 7, 4096, RESP, strlen(RESP),
	        NULL, 0, out, sizeof(out));
	CHECK(strstr(out, "session=abc-2") != NULL);
	outcome("application/json", "Mcp-Session-Id: a b\r\n", 7, 4096, RESP, strlen(RESP), NULL, 0,
	        out, sizeof(out));
	CHECK(strstr(out, "session=") && !strstr(out, "session=a"));
	/* A later status line (after a 100 Continue) forgets what the first
	 * response's headers said. */
	outcome(SSE, "Mcp-Session-Id: old\r\nHTTP/1.1 200 OK\r\nContent-Type: application/json\r\n",
	        7, 4096, RESP, strlen(RESP), NULL, 0, out, sizeof(out));
	CHECK(strncmp(out, RESP " ok", strlen(RESP) + 3) == 0);
	CHECK(strstr(out, "session=old") == NULL);
}

int main(void)
{
	test_line_ends_and_bom();
	test_responses();
	test_caps();
	test_headers();
	CHECK_DONE();
}
