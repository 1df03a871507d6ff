/*
 * http_client.h - the client's only door to libcurl: one HTTP request at a
 * time on a reusable connection, with the reply decoded into JSON-RPC
 * messages whether the server answered application/json or
 * text/event-stream.
 *
 * It knows the Streamable HTTP headers (Accept, X-MCP-AUTH, Mcp-Session-Id,
 * MCP-Protocol-Version) but not what the messages mean; mcp_session.c does.
 * Transport failures come back as a negative errno with a message naming
 * the URL, never the token.
 *
 * JSON strings here may carry NUL bytes (a program's output can), which a
 * cJSON string cannot hold: hc_json_parse keeps them recoverable and
 * hc_string_bytes gives back the exact bytes. Read any string that may hold
 * arbitrary bytes through hc_string_bytes.
 */
#ifndef MCPX_CLIENT_HTTP_CLIENT_H
#define MCPX_CLIENT_HTTP_CLIENT_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "err.h"

struct hc;

/* Called for each message of a reply that is not a response (notifications:
 * progress, logging) as soon as it arrives; msg is only valid during the
 * call. */
typedef void (*hc_notify_fn)(void *arg, const cJSON *msg);

struct hc_req {
	const char *method; /* "GET", "POST" or "DELETE" */
	const char *url;
	const char *body; /* POST only: JSON */
	size_t body_len;
	const char *session_id;       /* Mcp-Session-Id, or NULL */
	const char *protocol_version; /* MCP-Protocol-Version, or NULL */
	long timeout_s;               /* whole request, connect included */
	hc_notify_fn on_notify;       /* optional */
	void *arg;
};

struct hc_reply {
	long status;
	char content_type[64]; /* media type, lower case, parameters dropped */
	char session_id[256];  /* Mcp-Session-Id, "" when absent */
	bool session_id_bad;   /* present but not visible ASCII or too long */
	/* JSON-RPC messages that carry an id (responses), from a JSON body or
	 * from the SSE stream; an array, owned by the reply. NULL when the body
	 * was neither. */
	cJSON *msgs;
	bool bad_json; /* a JSON body or SSE message did not parse */
	/* The start of a body that is not JSON-RPC (e.g. "unauthorized"),
	 * reduced to one line of printable ASCII, for error messages. */
	char text[200];
};

/* A handle for one thread. token may be NULL (no X-MCP-AUTH header); it is
 * copied and wiped again in hc_free. Returns 0, -ENOMEM or -EINVAL (a token
 * with control characters). */
int hc_new(struct hc **out, const char *token, struct mcpx_err *err);
void hc_free(struct hc *h);

/* Sends one request and waits for the whole reply. Returns 0 when an HTTP
 * response arrived, whatever its status; otherwise -ECONNREFUSED (could not
 * connect: refused, unreachable, name not found, TLS failed), -ECONNRESET
 * (connection lost before the reply was complete), -ETIMEDOUT (no complete
 * reply within timeout_s), -E2BIG (reply over the size cap), -EINVAL (bad
 * URL) or -ENOMEM, with a message in err. The reply is filled in either
 * case and must be released with hc_reply_free. */
int hc_request(struct hc *h, const struct hc_req *req, struct hc_reply *rep, struct mcpx_err *err);
void hc_reply_free(struct hc_reply *rep);

/* Parses JSON text, keeping NUL bytes in strings recoverable. Returns NULL
 * when the text is not JSON or memory ran out. Caller frees. */
cJSON *hc_json_parse(const char *text, size_t len);

/* The exact bytes of a string parsed by hc_json_parse: *out is a new,
 * NUL-terminated buffer the caller frees, *len its length (which may
 * include NULs). Returns 0, -EINVAL when s is not a string, or -ENOMEM. */
int hc_string_bytes(const cJSON *s, char **out, size_t *len);

/* Process-wide libcurl set-up and tear-down; call once from main, before
 * any thread starts and after all have ended. */
int hc_global_init(void);
void hc_global_cleanup(void);

#endif
